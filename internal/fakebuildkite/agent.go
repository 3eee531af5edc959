package fakebuildkite

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

// Runner runs a build's step the way an agent would and returns its exit
// status. ctx is cancelled when the build is cancelled or lost (the agent's
// SIGTERM) and when the step's timeout_in_minutes runs out; a Runner must
// return soon after, since Close and Wait wait for it. env is the complete
// environment of the job; workDir is a fresh directory, removed afterwards,
// whose files the step's artifact_paths are matched against.
type Runner func(ctx context.Context, b BuildInfo, step Step, env []string, workDir string) (exitCode int)

// SetRunner replaces how steps run. The default runs the step's command
// with /bin/sh -c in workDir with env, sends it SIGTERM when ctx is
// cancelled and SIGKILL after the cancel grace period.
func (s *Server) SetRunner(fn Runner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fn == nil {
		fn = s.defaultRunner
	}
	s.runner = fn
}

// RunCommand is the default Runner, for a test's Runner to call after
// doing its own part (holding the step until a moment it chooses, say).
func (s *Server) RunCommand(ctx context.Context, b BuildInfo, step Step, env []string, workDir string) int {
	return s.defaultRunner(ctx, b, step, env, workDir)
}

type logKey struct{}

// defaultRunner runs the command as a real local process in its own
// process group, as buildkite-agent runs a job: cancelling sends SIGTERM to
// the whole group, and SIGKILL to it after the cancel grace period. Its
// combined output becomes the job's log (Build.Log).
func (s *Server) defaultRunner(ctx context.Context, _ BuildInfo, step Step, env []string, workDir string) int {
	s.mu.Lock()
	grace := s.grace
	s.mu.Unlock()
	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", step.Command)
	cmd.Dir, cmd.Env = workDir, env
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process that escaped the group may hold the output pipe open; do
	// not wait for it past the grace period.
	cmd.WaitDelay = grace
	err := cmd.Start()
	if err == nil {
		exited := make(chan struct{})
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			select {
			case <-exited:
				return
			case <-ctx.Done():
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // the group may be gone already
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-exited:
			case <-t.C:
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // as above
			}
		}()
		err = cmd.Wait()
		close(exited)
	}
	if buf, ok := ctx.Value(logKey{}).(*bytes.Buffer); ok {
		buf.Write(out.Bytes())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	default:
		if errors.Is(err, exec.ErrWaitDelay) {
			return 0
		}
		fmt.Fprintln(&out, err)
		return 127
	}
}

// start hands a scheduled build to an agent. Callers hold s.mu.
func (s *Server) start(b *build) {
	if s.closed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	s.addBusy()
	s.wg.Add(1)
	go s.run(ctx, b)
}

// agentEnv is the job environment a buildkite-agent sets up. Callers hold
// s.mu.
func (s *Server) agentEnv(b *build, workDir string) []string {
	j := b.job
	env := map[string]string{}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	maps.Copy(env, b.env)
	if p := s.pipelines[key(b.org, b.slug)]; p != nil {
		maps.Copy(env, p.env)
	}
	maps.Copy(env, j.step.Env)
	repo := ""
	if p := s.pipelines[key(b.org, b.slug)]; p != nil {
		repo = p.repository
	}
	agent := map[string]string{
		"CI":                              "true",
		"BUILDKITE":                       "true",
		"BUILDKITE_AGENT_ACCESS_TOKEN":    s.agentToken(),
		"BUILDKITE_AGENT_ENDPOINT":        s.APIURL(),
		"BUILDKITE_AGENT_ID":              "agent-" + j.id[:8],
		"BUILDKITE_AGENT_NAME":            "fakebuildkite-1",
		"BUILDKITE_AGENT_META_DATA_QUEUE": j.step.Queue,
		"BUILDKITE_ARTIFACT_PATHS":        strings.Join(j.step.ArtifactPaths, ";"),
		"BUILDKITE_BRANCH":                b.branch,
		"BUILDKITE_BUILD_AUTHOR":          b.authorName,
		"BUILDKITE_BUILD_AUTHOR_EMAIL":    b.authorEmail,
		"BUILDKITE_BUILD_CHECKOUT_PATH":   workDir,
		"BUILDKITE_BUILD_CREATOR":         "Inspect API",
		"BUILDKITE_BUILD_ID":              b.id,
		"BUILDKITE_BUILD_NUMBER":          strconv.Itoa(b.number),
		"BUILDKITE_BUILD_URL":             s.webURL(b),
		"BUILDKITE_COMMAND":               j.step.Command,
		"BUILDKITE_COMMIT":                b.commit,
		"BUILDKITE_JOB_ID":                j.id,
		"BUILDKITE_LABEL":                 j.step.Label,
		"BUILDKITE_MESSAGE":               b.message,
		"BUILDKITE_ORGANIZATION_SLUG":     b.org,
		"BUILDKITE_PIPELINE_SLUG":         b.slug,
		"BUILDKITE_PIPELINE_DEFAULT_BRANCH": func() string {
			if p := s.pipelines[key(b.org, b.slug)]; p != nil {
				return p.defaultBranch
			}
			return ""
		}(),
		"BUILDKITE_PULL_REQUEST": "false",
		"BUILDKITE_REPO":         repo,
		"BUILDKITE_RETRY_COUNT":  "0",
		"BUILDKITE_SOURCE":       "api",
		"BUILDKITE_STEP_KEY":     j.step.Key,
		"BUILDKITE_TIMEOUT":      strconv.Itoa(j.step.TimeoutInMinutes),
	}
	// The agent's own variables win over anything the build or pipeline set.
	maps.Copy(env, agent)
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// agentToken is the secret BUILDKITE_AGENT_ACCESS_TOKEN every job gets, as
// a real agent's jobs do; tests can check it never reaches a sandbox.
// It is independent of the API token, so a job cannot rebuild that.
func (s *Server) agentToken() string { return s.agentTok }

// AgentAccessToken is the BUILDKITE_AGENT_ACCESS_TOKEN jobs are given.
func (s *Server) AgentAccessToken() string { return s.agentToken() }

func (s *Server) info(b *build) BuildInfo {
	return BuildInfo{
		ID: b.id, Number: b.number, Org: b.org, Pipeline: b.slug, JobID: b.job.id,
		Branch: b.branch, Commit: b.commit, Message: b.message, WebURL: s.webURL(b),
		Env: maps.Clone(b.env), MetaData: maps.Clone(b.meta),
	}
}

// run is the agent running one build's job.
func (s *Server) run(ctx context.Context, b *build) {
	defer s.wg.Done()
	s.mu.Lock()
	if b.state != "scheduled" || b.lost {
		s.doneBusy()
		s.mu.Unlock()
		return
	}
	workDir, err := os.MkdirTemp("", "fakebuildkite-job-")
	now := s.now()
	b.state, b.startedAt = "running", now
	j := b.job
	j.state, j.startedAt = "running", now
	s.enqueue("build.running", b, nil)
	s.enqueue("job.started", b, j)
	info, step, env := s.info(b), j.step, s.agentEnv(b, workDir)
	runner, grace := s.runner, s.grace
	s.mu.Unlock()

	var logBuf bytes.Buffer
	runCtx, stop := context.WithCancel(context.WithValue(ctx, logKey{}, &logBuf))
	if step.TimeoutInMinutes > 0 {
		stop()
		runCtx, stop = context.WithTimeout(context.WithValue(ctx, logKey{}, &logBuf), time.Duration(step.TimeoutInMinutes)*time.Minute)
	}
	exit, gaveUp := 0, false
	if err != nil {
		exit = 1
		fmt.Fprintln(&logBuf, "fakebuildkite: creating the work directory:", err)
		stop()
	} else {
		done := make(chan int, 1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			code := runner(runCtx, info, step, env, workDir)
			done <- code
		}()
		select {
		case exit = <-done:
		case <-runCtx.Done():
			timer := time.NewTimer(grace)
			select {
			case exit = <-done:
			case <-timer.C:
				gaveUp, exit = true, -1
			}
			timer.Stop()
		}
		timedOut := errors.Is(runCtx.Err(), context.DeadlineExceeded)
		stop()
		var arts []*artifact
		if !gaveUp {
			arts = s.collectArtifacts(b, j, workDir)
			_ = os.RemoveAll(workDir)
		} else {
			// The step would not stop: the agent gives up on it. Its work
			// directory goes once it does return.
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				<-done
				_ = os.RemoveAll(workDir)
			}()
		}
		s.mu.Lock()
		b.artifacts = append(b.artifacts, arts...)
		for _, a := range arts {
			s.blobs[a.blobKey] = a
		}
		if timedOut && !b.canceling {
			j.state = "timed_out"
		}
		s.mu.Unlock()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.doneBusy()
	j.log = logBuf.String()
	j.finishedAt = s.now()
	b.finishedAt = j.finishedAt
	if exit != -1 {
		e := exit
		j.exitStatus = &e
	}
	switch {
	case b.canceling || (b.lost && ctx.Err() != nil):
		j.state, b.state = "canceled", "canceled"
	case j.state == "timed_out":
		b.state = "failed"
	case exit == 0:
		j.state, b.state = "passed", "passed"
	default:
		j.state, b.state = "failed", "failed"
	}
	s.enqueue("job.finished", b, j)
	s.enqueue("build.finished", b, nil)
}

type artifact struct {
	id, jobID, path, blobKey, sha1, mime string
	data                                 []byte
	createdAt                            time.Time
}

// collectArtifacts uploads the files under workDir that the step's
// artifact_paths match, as the agent does after the command.
func (s *Server) collectArtifacts(b *build, j *job, workDir string) []*artifact {
	var out []*artifact
	seen := map[string]bool{}
	for _, pattern := range j.step.ArtifactPaths {
		pattern = path.Clean(filepath.ToSlash(pattern))
		_ = filepath.WalkDir(workDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return nil
			}
			rel, err := filepath.Rel(workDir, p)
			if err != nil {
				return nil
			}
			rel = filepath.ToSlash(rel)
			if seen[rel] || !globMatch(strings.Split(pattern, "/"), strings.Split(rel, "/")) {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			seen[rel] = true
			sum := sha1.Sum(data)
			mt := mime.TypeByExtension(filepath.Ext(rel))
			if mt == "" {
				mt = "application/octet-stream"
			}
			out = append(out, &artifact{
				id: standin.UUID(), jobID: j.id, path: rel, blobKey: randHex(16), sha1: hex.EncodeToString(sum[:]),
				mime: mt, data: data, createdAt: time.Now(),
			})
			return nil
		})
	}
	sort.Slice(out, func(i, k int) bool { return out[i].path < out[k].path })
	return out
}

// globMatch matches path segments against pattern segments, where "**"
// matches any number of segments and other segments use path.Match.
func globMatch(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if globMatch(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], segs[0]); !ok {
		return false
	}
	return globMatch(pat[1:], segs[1:])
}

func (s *Server) artifactJSON(b *build, a *artifact) map[string]any {
	api := fmt.Sprintf("%s/jobs/%s/artifacts/%s", s.buildAPIURL(b), a.jobID, a.id)
	dir, file := path.Split(a.path)
	return map[string]any{
		"id": a.id, "job_id": a.jobID, "url": api, "download_url": api + "/download",
		"state": "finished", "path": a.path, "dirname": strings.TrimSuffix(dir, "/"), "filename": file,
		"mime_type": a.mime, "file_size": len(a.data), "glob_path": nil, "original_path": nil,
		"sha1sum": a.sha1,
	}
}

func (s *Server) listArtifacts(c *call) response {
	b, bad := s.findBuild(c)
	if bad != nil {
		return *bad
	}
	out := []map[string]any{}
	for _, a := range b.artifacts {
		out = append(out, s.artifactJSON(b, a))
	}
	return page(c, out)
}

func (s *Server) listJobArtifacts(c *call) response {
	b, bad := s.findBuild(c)
	if bad != nil {
		return *bad
	}
	if b.job == nil || b.job.id != c.r.PathValue("job") {
		return errResp(http.StatusNotFound, "No job found")
	}
	out := []map[string]any{}
	for _, a := range b.artifacts {
		out = append(out, s.artifactJSON(b, a))
	}
	return page(c, out)
}

func (s *Server) findArtifact(c *call) (*build, *artifact, *response) {
	b, bad := s.findBuild(c)
	if bad != nil {
		return nil, nil, bad
	}
	for _, a := range b.artifacts {
		if a.id == c.r.PathValue("id") && a.jobID == c.r.PathValue("job") {
			return b, a, nil
		}
	}
	r := errResp(http.StatusNotFound, "No artifact found")
	return nil, nil, &r
}

func (s *Server) getArtifact(c *call) response {
	b, a, bad := s.findArtifact(c)
	if bad != nil {
		return *bad
	}
	return jsonResp(http.StatusOK, s.artifactJSON(b, a))
}

// downloadArtifact answers 302 to a pre-signed storage URL, as Buildkite
// redirects to S3, with {"url": ...} as the body.
func (s *Server) downloadArtifact(c *call) response {
	_, a, bad := s.findArtifact(c)
	if bad != nil {
		return *bad
	}
	u := s.ts.URL + blobPrefix + a.blobKey + "/" + path.Base(a.path)
	return response{status: http.StatusFound, body: map[string]string{"url": u}, header: http.Header{"Location": {u}}}
}

// serveBlob is the storage behind artifact downloads. It needs no API
// token: its URLs are unguessable, like S3's pre-signed ones.
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request) {
	k, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, blobPrefix), "/")
	s.mu.Lock()
	a := s.blobs[k]
	s.mu.Unlock()
	if a == nil || r.Method != http.MethodGet {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", a.mime)
	w.Header().Set("Content-Length", strconv.Itoa(len(a.data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.data)
}

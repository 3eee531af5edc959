package checkoutrun

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// testServer serves a spec for repo's HEAD, as Run would.
func testServer(t *testing.T, repo, sha string, progress io.Writer, egress Egress) (*server, contract.Spec) {
	t.Helper()
	common := strings.TrimSpace(testGit(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := newServer(gitBin, common, progress, egress)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.close)
	spec := contract.Spec{
		Version: contract.SpecVersion, SessionID: "local-s", AttemptID: "local-a",
		Repo:      contract.Repo{Owner: "local", Name: "r", ID: 1, CloneURL: srv.URL() + gitRepoPath, DefaultBranch: "main"},
		PinnedSHA: sha, Target: contract.Target{Kind: contract.TargetIssue, Number: 1, BaseBranch: "main"},
		Instructions: "x", Requester: contract.Requester{Login: "local", ID: 1},
		Agent: contract.Agent{Preset: contract.PresetCommand, Command: []string{"true"}},
		Limits: contract.Limits{Deadline: time.Now().Add(time.Hour).UTC().Truncate(time.Second), Timeout: contract.Duration(time.Hour),
			MaxOutputBytes: 1024, MaxChangedFiles: 10, MaxChangeBytes: 1 << 20},
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	srv.start(spec)
	return srv, spec
}

type call struct {
	method, path, token string
	body                any
}

func (c call) do(t *testing.T, base string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if c.body != nil {
		if s, ok := c.body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			b, _ := json.Marshal(c.body)
			rd = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequest(c.method, base+c.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set(contract.HeaderSessionToken, c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestChannelAndGitServerAuthenticateEverything(t *testing.T) {
	t.Parallel()
	repo, sha := newRepo(t, map[string]string{"a.txt": "a\n"})
	var progress lockedBuffer
	srv, spec := testServer(t, repo, sha, &progress, Egress{})
	base := srv.URL()
	path := func(p string) string { return contract.AttemptPath(p, spec.AttemptID) }
	claim := contract.ClaimRequest{AttemptID: spec.AttemptID, ClaimCode: srv.claimCode, SpecVersion: contract.SpecVersion}

	// Nothing before the claim, and no claim with a wrong code or attempt.
	if code, _ := (call{"GET", path(contract.PathSpec), "", nil}).do(t, base); code != http.StatusUnauthorized {
		t.Errorf("spec before the claim: %d", code)
	}
	bad := claim
	bad.ClaimCode = strings.Repeat("x", 40)
	if code, _ := (call{"POST", path(contract.PathClaim), "", bad}).do(t, base); code != http.StatusUnauthorized {
		t.Errorf("wrong claim code: %d", code)
	}
	// The app's order and statuses (decision 0046): the body names
	// another attempt than the path.
	if code, _ := (call{"POST", contract.AttemptPath(contract.PathClaim, "other"), "", claim}).do(t, base); code != http.StatusBadRequest {
		t.Errorf("claim for another attempt: %d", code)
	}
	if code, _ := (call{"POST", path(contract.PathClaim), "", `{"attempt_id":"local-a","claim_code":"` + srv.claimCode + `","spec_version":"` + contract.SpecVersion + `","extra":1}`}).do(t, base); code != http.StatusBadRequest {
		t.Errorf("claim with an unknown field: %d", code)
	}
	code, body := (call{"POST", path(contract.PathClaim), "", claim}).do(t, base)
	if code != http.StatusOK {
		t.Fatalf("claim: %d %s", code, body)
	}
	cr, err := contract.DecodeClaimResponse(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// A reused claim code is refused as the app refuses it (decision 0046).
	if code, body := (call{"POST", path(contract.PathClaim), "", claim}).do(t, base); code != http.StatusUnauthorized || !strings.Contains(string(body), string(contract.ErrorClaimUsed)) {
		t.Errorf("second claim: %d %s", code, body)
	}

	// The spec, strictly.
	if code, _ := (call{"GET", path(contract.PathSpec), "wrong-token-0123456789", nil}).do(t, base); code != http.StatusUnauthorized {
		t.Errorf("spec with a wrong token: %d", code)
	}
	code, body = (call{"GET", path(contract.PathSpec), cr.SessionToken, nil}).do(t, base)
	got, err := contract.DecodeSpec(bytes.NewReader(body))
	if code != http.StatusOK || err != nil || got.PinnedSHA != sha {
		t.Fatalf("spec: %d %v", code, err)
	}

	// Git: nothing before the repo token is handed out, nothing without
	// it, and never a push.
	gitURL := spec.Repo.CloneURL
	lsRemote := func(token string) error {
		var env []string
		if token != "" {
			cred := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
			env = []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Basic " + cred}
		}
		cmd := exec.Command("git", "ls-remote", gitURL)
		cmd.Env = append(withoutGitEnv(os.Environ()), append(env, "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false")...)
		out, err := cmd.CombinedOutput()
		if err == nil && !strings.Contains(string(out), sha) {
			t.Errorf("ls-remote does not list HEAD:\n%s", out)
		}
		return err
	}
	if lsRemote(srv.repoToken) == nil {
		t.Error("git answered before the repo token was handed out")
	}
	code, body = (call{"POST", path(contract.PathRepoToken), cr.SessionToken, nil}).do(t, base)
	tok, err := contract.DecodeRepoTokenResponse(bytes.NewReader(body))
	if code != http.StatusOK || err != nil {
		t.Fatalf("repo token: %d %v", code, err)
	}
	if lsRemote("") == nil || lsRemote(strings.Repeat("z", 40)) == nil || lsRemote(cr.SessionToken) == nil {
		t.Error("git answered without the repo token")
	}
	if err := lsRemote(tok.Token); err != nil {
		t.Errorf("ls-remote with the repo token: %v", err)
	}
	for _, p := range []string{"/repo.git/info/refs?service=git-receive-pack", "/repo.git/git-receive-pack"} {
		method := "GET"
		if strings.HasSuffix(p, "/git-receive-pack") {
			method = "POST"
		}
		req, _ := http.NewRequest(method, base+p, nil)
		req.SetBasicAuth("x-access-token", tok.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s: %d, want 403", method, p, resp.StatusCode)
		}
	}
	// A fetch of the pinned commit by its id, as the supervisor does it.
	dst := t.TempDir()
	testGit(t, dst, "init", "--quiet")
	cred := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + tok.Token))
	if _, err := testGitErr(dst, nil, "-c", "http.extraHeader=Authorization: Basic "+cred, "fetch", "--quiet", "--depth=1", gitURL, sha); err != nil {
		t.Errorf("fetching the pinned commit: %v", err)
	}

	// Progress is decoded strictly and printed, one line each.
	ev := contract.ProgressEvent{Seq: 1, Time: time.Now(), Phase: contract.PhaseAgent, Message: "running the agent"}
	if code, _ := (call{"POST", path(contract.PathProgress), cr.SessionToken, ev}).do(t, base); code != http.StatusNoContent {
		t.Errorf("progress: %d", code)
	}
	if code, _ := (call{"POST", path(contract.PathProgress), cr.SessionToken, `{"seq":2}`}).do(t, base); code != http.StatusBadRequest {
		t.Errorf("invalid progress: %d", code)
	}
	// A result that does not decode is refused and remembered.
	if code, _ := (call{"PUT", path(contract.PathResult), cr.SessionToken, `{"evidence":{"version":"inspect.evidence/v0"}}`}).do(t, base); code != http.StatusBadRequest {
		t.Errorf("bad result: %d", code)
	}
	if up, err := srv.uploaded(); up != nil || err == nil {
		t.Errorf("after a bad upload: %v %v", up, err)
	}
	// A good one is kept; a repeat is acknowledged and changes nothing.
	now := time.Now().UTC()
	good := contract.ResultUpload{Evidence: contract.Evidence{Version: contract.EvidenceVersion, SessionID: spec.SessionID, AttemptID: spec.AttemptID,
		PinnedSHA: sha, StartedAt: now, EndedAt: now, Outcome: contract.OutcomeOK},
		Manifest: &contract.Manifest{Version: contract.ManifestVersion, BaseSHA: sha}}
	for range 2 {
		if code, body := (call{"PUT", path(contract.PathResult), cr.SessionToken, good}).do(t, base); code != http.StatusNoContent {
			t.Errorf("result: %d %s", code, body)
		}
	}
	if up, err := srv.uploaded(); up == nil || err != nil || up.Evidence.Outcome != contract.OutcomeOK {
		t.Errorf("uploaded: %+v %v", up, err)
	}
	srv.close()
	if lines := strings.Split(strings.TrimSpace(progress.String()), "\n"); len(lines) != 1 || lines[0] != "inspect run: [agent] running the agent" {
		t.Errorf("progress printed:\n%s", progress.String())
	}
	if len(srv.protocolFaults()) == 0 {
		t.Error("the refused requests were not recorded")
	}
	if c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://")); err == nil {
		c.Close()
		t.Error("the server still listens after close")
	}
}

// The git endpoint serves the repository of a linked worktree, whose .git
// is a file, and a commit only that worktree's HEAD reaches.
func TestServerServesALinkedWorktree(t *testing.T) {
	t.Parallel()
	repo, _ := newRepo(t, map[string]string{"a.txt": "a\n"})
	wt := filepath.Join(t.TempDir(), "wt")
	testGit(t, repo, "worktree", "add", "--quiet", "--detach", wt)
	writeFiles(t, wt, map[string]string{"b.txt": "b\n"})
	testGit(t, wt, "add", "b.txt")
	testGit(t, wt, "commit", "--quiet", "-m", "detached")
	sha := strings.TrimSpace(testGit(t, wt, "rev-parse", "HEAD"))
	gitBin, _ := exec.LookPath("git")
	co, err := openCheckout(t.Context(), gitBin, wt)
	if err != nil {
		t.Fatal(err)
	}
	if co.head != sha || co.branch != "" || co.commonDir != filepath.Join(repo, ".git") {
		t.Fatalf("checkout = %+v", co)
	}
	srv, spec := testServer(t, wt, sha, io.Discard, Egress{})
	srv.mu.Lock()
	srv.claimed, srv.tokenIssued = true, true
	srv.mu.Unlock()
	dst := t.TempDir()
	testGit(t, dst, "init", "--quiet")
	cred := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + srv.repoToken))
	if _, err := testGitErr(dst, nil, "-c", "http.extraHeader=Authorization: Basic "+cred, "fetch", "--quiet", "--depth=1", spec.Repo.CloneURL, sha); err != nil {
		t.Errorf("fetching the worktree's detached commit: %v", err)
	}
}

// The egress routes are the session's: only with its token, after the
// claim, and each handler gets the session's spec; a route with no handler
// is refused.
func TestEgressRoutesServeOnlyTheSession(t *testing.T) {
	t.Parallel()
	repo, sha := newRepo(t, map[string]string{"a.txt": "a\n"})
	var served []string
	model := func(w http.ResponseWriter, r *http.Request, spec contract.Spec) {
		served = append(served, spec.AttemptID+" "+r.PathValue(contract.PathValueProvider)+" "+r.PathValue(contract.PathValueRest))
		w.WriteHeader(http.StatusTeapot)
	}
	srv, spec := testServer(t, repo, sha, io.Discard, Egress{Model: model})
	base := srv.URL()
	modelPath := contract.EgressModelPath(spec.AttemptID, "p", "responses")
	registryPath := contract.EgressRegistryPath(spec.AttemptID, "goproxy", "fake.test/alpha/@v/list")
	if code, _ := (call{"POST", modelPath, srv.session, "{}"}).do(t, base); code != http.StatusUnauthorized {
		t.Errorf("model route before the claim: %d", code)
	}
	srv.mu.Lock()
	srv.claimed = true
	srv.mu.Unlock()
	if code, _ := (call{"POST", modelPath, "wrong-token-0123456789", "{}"}).do(t, base); code != http.StatusUnauthorized {
		t.Errorf("model route with a wrong token: %d", code)
	}
	// Another attempt's route is refused as the app refuses it: this
	// token is not that attempt's (decision 0046).
	if code, _ := (call{"POST", contract.EgressModelPath("other", "p", "responses"), srv.session, "{}"}).do(t, base); code != http.StatusUnauthorized {
		t.Errorf("model route of another attempt: %d", code)
	}
	if len(served) != 0 {
		t.Fatalf("served without the session's token: %q", served)
	}
	if code, _ := (call{"POST", modelPath, srv.session, "{}"}).do(t, base); code != http.StatusTeapot || len(served) != 1 || served[0] != spec.AttemptID+" p responses" {
		t.Errorf("model route: %d, served %q", code, served)
	}
	if code, body := (call{"GET", registryPath, srv.session, nil}).do(t, base); code != http.StatusForbidden || !strings.Contains(string(body), "serves no registry egress") {
		t.Errorf("registry route without a handler: %d %s", code, body)
	}
}

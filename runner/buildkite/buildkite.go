// Package buildkite is the production executor: it runs each attempt of a
// session as one build of a static Buildkite pipeline (SessionPipelineYAML,
// installed by Setup), on the organization's own agents.
//
// What a build gets: the attempt's session id, attempt id, channel URL and
// single-use claim code as build environment variables (contract.Env*), and
// nothing else; never the API token or any standing credential. The step
// runs `inspect runner`, which claims the attempt over the session channel
// and fetches everything else from it. The build carries the session id and
// attempt number as meta-data, so that Find can tell whether an attempt
// already has a build and a retried dispatch never makes a second one.
//
// The executor's id for an attempt is the build's web_url
// (https://buildkite.com/<org>/<pipeline>/builds/<n>), which a person can
// open as it is.
//
// Every request goes through go-buildkite's types and Client.Do, with the
// caller's context attached, and through a transport that retries rate
// limits and gateway errors itself (transport.go). Errors that no retry
// will fix (a 4xx but 408 and 429: a bad token, a missing scope, a pipeline
// that refuses the build) come back as *FinalError, so the app can end the
// session with a clear message instead of retrying.
package buildkite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	bk "github.com/buildkite/go-buildkite/v3/buildkite"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/retryafter"
)

// Artifact paths of the session step, relative to its work directory: what
// `inspect runner --out-dir .inspect-out` writes and the agent uploads.
const (
	EvidenceArtifact = outDir + "/evidence.json"
	ManifestArtifact = outDir + "/manifest.json"
)

// Defaults for Config's zero values.
const (
	DefaultMaxRetries = 4
	DefaultMaxWait    = 60 * time.Second
	DefaultTimeout    = 30 * time.Second
)

// Build meta-data keys naming the attempt a build runs: Start sets them,
// Find filters on them, and the app's webhook handler reads them to tell
// which attempt a build event is about. Builds already made carry them, so
// changing either would make Find miss those builds and Start make a
// second one.
const (
	// MetaSession's value is the session id.
	MetaSession = contract.MetaSession
	// MetaAttempt's value is the attempt number, in decimal from 1.
	MetaAttempt = contract.MetaAttempt
)

const (
	outDir = ".inspect-out"
	// annotationContext is the one annotation Inspect keeps on a build;
	// annotating again replaces it.
	annotationContext = "inspect"
	// maxAnnotationBytes is Buildkite's limit on an annotation's body.
	maxAnnotationBytes = 1 << 20
	// perPage is the largest page Buildkite's list endpoints serve.
	perPage = 100
)

// ErrNoResult is what FetchResult's error wraps when the build has no
// evidence artifact: the supervisor never got far enough to write one, the
// agent could not upload it, or the build is gone. It is runner.ErrNoResult,
// so the app can test for it without knowing the executor.
var ErrNoResult = runner.ErrNoResult

// ErrResultTooLarge is what FetchResult's error wraps when the evidence or
// manifest artifact is over its cap, by its listed size or by what a
// download turned out to hold. The build did finish and upload it, and
// fetching it again will find it just as large: the caller should treat
// the attempt as having left an invalid result, not retry the fetch.
var ErrResultTooLarge = runner.ErrResultTooLarge

// FinalError (runner's) is a 4xx answer from Buildkite that retrying will
// not change: a bad token (401), a token without a scope (403), a pipeline
// or build that does not exist where one must (404), a request Buildkite
// refused (422). Message is Buildkite's own explanation, with the token
// redacted. A 408 Request Timeout is never one (it says the request did not
// arrive in time, not that it was wrong), nor is a 429 (a
// *RateLimitedError).
type FinalError = runner.FinalError

// serviceName is how Buildkite is named in the errors the app shows.
const serviceName = "Buildkite"

// Config configures an Executor (and Setup).
type Config struct {
	// BaseURL is the REST base that go-buildkite's WithBaseURL takes:
	// bk.DefaultBaseURL ("https://api.buildkite.com/") when empty.
	BaseURL string
	// Token is an API access token with the scopes read_builds,
	// write_builds, read_artifacts, read_pipelines and (for Setup)
	// write_pipelines.
	Token string
	// Org is the organization's slug.
	Org string
	// Pipeline is the session pipeline's slug.
	Pipeline string
	// Branch is the branch builds are created on. "" means the pipeline's
	// default_branch, read once and remembered. The step skips checkout,
	// so the branch only labels the build.
	Branch string
	// HTTPClient is the base client. Its Transport carries the requests
	// and its Timeout applies to each try (body included), not to a whole
	// call with its retries, which only ctx bounds. nil means a client
	// with DefaultTimeout.
	HTTPClient *http.Client
	// UserAgent is sent with every request, e.g. "inspect/<version>";
	// go-buildkite's own when empty.
	UserAgent string
	// Wait waits between retries and returns early with ctx's error. nil
	// means a timer; tests inject one that records the durations and
	// returns at once.
	Wait func(ctx context.Context, d time.Duration) error
	// MaxRetries caps the retries of one request after its first try
	// (DefaultMaxRetries when 0, none when negative).
	MaxRetries int
	// MaxWait caps any single wait, advised by Buildkite or not
	// (DefaultMaxWait when 0).
	MaxWait time.Duration
}

// Executor runs attempts as Buildkite builds. Create it with New; it is
// safe for concurrent use. It implements runner.Executor.
type Executor struct {
	cfg    Config // defaults filled in
	token  string
	base   *url.URL
	http   *http.Client
	client *bk.Client

	// Caps on downloaded artifacts; the contract's, lowered by tests.
	maxEvidenceBytes int64
	maxManifestBytes int64

	mu     sync.Mutex
	branch string // the pipeline's default branch, once read
}

var _ runner.Executor = (*Executor)(nil)

// New returns an Executor. It checks the configuration but makes no
// request.
func New(cfg Config) (*Executor, error) {
	switch {
	case cfg.Token == "":
		return nil, errors.New("buildkite: an API token is required")
	case cfg.Org == "":
		return nil, errors.New("buildkite: the organization slug is required")
	case cfg.Pipeline == "":
		return nil, errors.New("buildkite: the pipeline slug is required")
	case !isSlug(cfg.Org):
		return nil, fmt.Errorf("buildkite: organization slug %q has characters a slug cannot have", cfg.Org)
	case !isSlug(cfg.Pipeline):
		return nil, fmt.Errorf("buildkite: pipeline slug %q has characters a slug cannot have", cfg.Pipeline)
	case strings.ContainsAny(cfg.Branch, "\x00\n\r"):
		return nil, errors.New("buildkite: the branch name has a control character")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = bk.DefaultBaseURL
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		// Echo nothing of the URL: it could hold credentials.
		return nil, errors.New("buildkite: the base URL must be an absolute http or https URL")
	}
	if !strings.HasSuffix(base.Path, "/") {
		// go-buildkite resolves "v2/..." against it; without the slash
		// the last path segment would be replaced.
		base.Path += "/"
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	cfg.MaxRetries = max(cfg.MaxRetries, 0)
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.Wait == nil {
		cfg.Wait = retryafter.Sleep
	}
	baseClient := cfg.HTTPClient
	if baseClient == nil {
		baseClient = &http.Client{Timeout: DefaultTimeout}
	}
	baseTransport := baseClient.Transport
	if baseTransport == nil {
		baseTransport = http.DefaultTransport
	}
	httpClient := &http.Client{
		Transport: &retryTransport{
			base:       baseTransport,
			tryTimeout: baseClient.Timeout,
			wait:       cfg.Wait,
			maxRetries: cfg.MaxRetries,
			maxWait:    cfg.MaxWait,
			now:        time.Now,
		},
		CheckRedirect: baseClient.CheckRedirect,
		Jar:           baseClient.Jar,
	}
	userAgent := cfg.UserAgent
	if userAgent == "" {
		userAgent = bk.DefaultUserAgent
	}
	client, err := bk.NewOpts(
		bk.WithBaseURL(base.String()),
		bk.WithTokenAuth(cfg.Token),
		bk.WithHTTPClient(httpClient),
		bk.WithUserAgent(userAgent),
	)
	if err != nil {
		return nil, errors.New("buildkite: " + redact(err.Error(), cfg.Token))
	}
	return &Executor{
		cfg:              cfg,
		token:            cfg.Token,
		base:             base,
		http:             httpClient,
		client:           client,
		maxEvidenceBytes: contract.MaxEvidenceBytes,
		maxManifestBytes: contract.MaxManifestBytes,
	}, nil
}

// Start creates the attempt's build, unless Find says it already has one,
// and returns the build's web_url. The build's environment is the
// attempt's four contract.Env* variables and nothing else.
//
// A create that fails ambiguously (a 5xx or a transport error: Buildkite
// may have made the build anyway) is retried only after Find has looked
// again, so Start never makes a second build for an attempt. A 429 was
// already retried by the transport; a 4xx is a *FinalError.
func (e *Executor) Start(ctx context.Context, a runner.Attempt) (string, error) {
	if err := checkAttempt(a); err != nil {
		return "", err
	}
	for retry := 0; ; retry++ {
		id, found, err := e.Find(ctx, a.SessionID, a.Number)
		if err != nil {
			return "", err
		}
		if found {
			return id, nil
		}
		branch, err := e.buildBranch(ctx)
		if err != nil {
			return "", err
		}
		b, err := e.createBuild(ctx, a, branch)
		if err == nil {
			return e.externalID(b)
		}
		if !ambiguous(ctx, err) || retry >= e.cfg.MaxRetries {
			return "", e.fail("creating the build", err)
		}
		if err := e.cfg.Wait(ctx, backoff(retry, e.cfg.MaxWait)); err != nil {
			return "", e.fail("creating the build", err)
		}
	}
}

// checkAttempt refuses an attempt the build could not carry. Messages name
// the field, never its value: one of them is the claim code.
func checkAttempt(a runner.Attempt) error {
	for _, f := range []struct{ name, value string }{
		{"session id", a.SessionID},
		{"attempt id", a.AttemptID},
		{"channel URL", a.ChannelURL},
		{"claim code", a.ClaimCode},
	} {
		if f.value == "" || strings.ContainsAny(f.value, "\x00\n\r") {
			return fmt.Errorf("buildkite: the attempt's %s is missing or malformed", f.name)
		}
	}
	if strings.ContainsAny(a.RequesterLogin, "\x00\n\r") {
		return errors.New("buildkite: the requester's login is malformed")
	}
	if a.Number < 1 {
		return fmt.Errorf("buildkite: attempt number %d; attempts count from 1", a.Number)
	}
	return nil
}

func (e *Executor) createBuild(ctx context.Context, a runner.Attempt, branch string) (*bk.Build, error) {
	message := "Inspect session " + a.SessionID
	var author bk.Author
	if a.RequesterLogin != "" {
		message += " for @" + a.RequesterLogin
		author = bk.Author{Name: a.RequesterLogin, Username: a.RequesterLogin}
		if a.RequesterID > 0 {
			author.Email = fmt.Sprintf("%d+%s@users.noreply.github.com", a.RequesterID, a.RequesterLogin)
		}
	}
	message += fmt.Sprintf(" (attempt %d)", a.Number)
	create := &bk.CreateBuild{
		Commit:  "HEAD", // checkout is skipped; the supervisor fetches the pinned SHA itself
		Branch:  branch,
		Message: message,
		Author:  author,
		Env: map[string]string{
			contract.EnvSessionID:  a.SessionID,
			contract.EnvAttemptID:  a.AttemptID,
			contract.EnvChannelURL: a.ChannelURL,
			contract.EnvClaimCode:  a.ClaimCode,
		},
		MetaData: map[string]string{
			MetaSession: a.SessionID,
			MetaAttempt: strconv.Itoa(a.Number),
		},
	}
	var b bk.Build
	if _, err := e.do(ctx, http.MethodPost, pipelinePath(e.cfg.Org, e.cfg.Pipeline)+"/builds", create, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// ambiguous reports whether a failed create may have made the build all the
// same, and so is worth a retry after a Find.
func ambiguous(ctx context.Context, err error) bool {
	var rl *RateLimitedError
	var er *bk.ErrorResponse
	switch {
	case ctx.Err() != nil, errors.As(err, &rl):
		return false
	case errors.As(err, &er):
		// A 408 may come from a proxy that gave up waiting on Buildkite,
		// which may still have made the build: as uncertain as a 5xx.
		return er.Response != nil && (er.Response.StatusCode >= 500 || er.Response.StatusCode == http.StatusRequestTimeout)
	default:
		// A transport error, or a 2xx whose body did not decode: the
		// request may well have been processed.
		return true
	}
}

// buildBranch is Config.Branch, or the pipeline's default branch, read
// once.
func (e *Executor) buildBranch(ctx context.Context) (string, error) {
	if e.cfg.Branch != "" {
		return e.cfg.Branch, nil
	}
	e.mu.Lock()
	branch := e.branch
	e.mu.Unlock()
	if branch != "" {
		return branch, nil
	}
	var p bk.Pipeline
	if _, err := e.do(ctx, http.MethodGet, pipelinePath(e.cfg.Org, e.cfg.Pipeline), nil, &p); err != nil {
		return "", e.fail("reading the pipeline's default branch", err)
	}
	if p.DefaultBranch == nil || *p.DefaultBranch == "" {
		return "", fmt.Errorf("buildkite: pipeline %s/%s has no default branch; set one, or configure the branch", e.cfg.Org, e.cfg.Pipeline)
	}
	e.mu.Lock()
	e.branch = *p.DefaultBranch
	e.mu.Unlock()
	return *p.DefaultBranch, nil
}

// Find looks up the build of a session's attempt by its meta-data
// (MetaSession and MetaAttempt) and returns its id; found is false
// when there is none. Should there be several, the newest is returned.
func (e *Executor) Find(ctx context.Context, sessionID string, number int) (string, bool, error) {
	if sessionID == "" || strings.ContainsAny(sessionID, "\x00\n\r") || number < 1 {
		return "", false, errors.New("buildkite: finding a build needs a session id and an attempt number from 1")
	}
	attempt := strconv.Itoa(number)
	q := url.Values{}
	q.Set("meta_data["+MetaSession+"]", sessionID)
	q.Set("meta_data["+MetaAttempt+"]", attempt)
	q.Set("per_page", strconv.Itoa(perPage))
	for page := 1; ; {
		q.Set("page", strconv.Itoa(page))
		var builds []bk.Build
		resp, err := e.do(ctx, http.MethodGet, pipelinePath(e.cfg.Org, e.cfg.Pipeline)+"/builds?"+q.Encode(), nil, &builds)
		if err != nil {
			return "", false, e.fail("finding the attempt's build", err)
		}
		for i := range builds {
			// Check again what the filter should have done: a build of
			// another attempt must never be taken for this one.
			if b := &builds[i]; b.MetaData[MetaSession] == sessionID && b.MetaData[MetaAttempt] == attempt {
				id, err := e.externalID(b)
				return id, err == nil, err
			}
		}
		if resp.NextPage <= page {
			return "", false, nil
		}
		page = resp.NextPage
	}
}

// Cancel asks Buildkite to cancel the build: the agent sends the step
// SIGTERM and, after cancel_grace_period_seconds, SIGKILL. A build that is
// gone (404) or already finished (422) is not an error.
func (e *Executor) Cancel(ctx context.Context, externalID string) error {
	path, err := buildPath(externalID)
	if err != nil {
		return err
	}
	_, err = e.do(ctx, http.MethodPut, path+"/cancel", nil, nil)
	switch status(err) {
	case http.StatusNotFound, http.StatusUnprocessableEntity:
		return nil
	}
	if err != nil {
		return e.fail("cancelling the build", err)
	}
	return nil
}

// State reports the build's state: pending until an agent runs it, running
// (cancelling and failing included), exited with the session step's exit
// status once finished (-1 when it has none: the job never ran, or was
// killed), lost when Buildkite no longer knows it.
func (e *Executor) State(ctx context.Context, externalID string) (runner.AttemptState, error) {
	path, err := buildPath(externalID)
	if err != nil {
		return runner.AttemptState{}, err
	}
	var b bk.Build
	_, err = e.do(ctx, http.MethodGet, path, nil, &b)
	if status(err) == http.StatusNotFound {
		return runner.AttemptState{Status: runner.StatusLost}, nil
	}
	if err != nil {
		return runner.AttemptState{}, e.fail("reading the build", err)
	}
	state := ""
	if b.State != nil {
		state = *b.State
	}
	switch state {
	case "scheduled", "creating", "waiting", "blocked", "waiting_failed":
		return runner.AttemptState{Status: runner.StatusPending}, nil
	case "running", "canceling", "failing":
		return runner.AttemptState{Status: runner.StatusRunning}, nil
	case "passed", "failed", "canceled", "skipped", "not_run", "finished":
		return runner.AttemptState{Status: runner.StatusExited, ExitCode: exitStatus(b.Jobs)}, nil
	default:
		return runner.AttemptState{}, fmt.Errorf("buildkite: build %s is in state %q, which this executor does not know", externalID, state)
	}
}

// exitStatus is the session step's exit status: the job keyed "session",
// else the first job; -1 when there is none.
func exitStatus(jobs []*bk.Job) int {
	var job *bk.Job
	for _, j := range jobs {
		if j != nil && j.StepKey != nil && *j.StepKey == sessionStepKey {
			job = j
			break
		}
	}
	if job == nil && len(jobs) > 0 {
		job = jobs[0]
	}
	if job == nil || job.ExitStatus == nil {
		return -1
	}
	return *job.ExitStatus
}

// FetchResult downloads the build's evidence and change manifest artifacts,
// each within the contract's cap (nothing is read past the cap). Its error
// wraps ErrNoResult when there is no evidence artifact (or no build), and
// ErrResultTooLarge when an artifact is over its cap; manifest is nil when
// there is no manifest artifact. The bytes are as the supervisor wrote
// them: decode and validate them with contract.DecodeEvidence and
// contract.DecodeManifest.
func (e *Executor) FetchResult(ctx context.Context, externalID string) (evidence, manifest []byte, err error) {
	path, err := buildPath(externalID)
	if err != nil {
		return nil, nil, err
	}
	var evidenceArt, manifestArt *bk.Artifact
	for page := 1; ; {
		var arts []bk.Artifact
		resp, err := e.do(ctx, http.MethodGet, fmt.Sprintf("%s/artifacts?page=%d&per_page=%d", path, page, perPage), nil, &arts)
		if status(err) == http.StatusNotFound {
			return nil, nil, fmt.Errorf("buildkite: build %s is gone: %w", externalID, ErrNoResult)
		}
		if err != nil {
			return nil, nil, e.fail("listing the build's artifacts", err)
		}
		for i := range arts {
			a := &arts[i]
			if a.Path == nil || (a.State != nil && *a.State != "finished") {
				continue // an upload that did not complete cannot be downloaded
			}
			switch *a.Path {
			case EvidenceArtifact:
				evidenceArt = a
			case ManifestArtifact:
				manifestArt = a
			}
		}
		if resp.NextPage <= page {
			break
		}
		page = resp.NextPage
	}
	if evidenceArt == nil {
		return nil, nil, fmt.Errorf("buildkite: build %s has no %s artifact: %w", externalID, EvidenceArtifact, ErrNoResult)
	}
	if evidence, err = e.download(ctx, evidenceArt, e.maxEvidenceBytes); err != nil {
		return nil, nil, err
	}
	if manifestArt != nil {
		if manifest, err = e.download(ctx, manifestArt, e.maxManifestBytes); err != nil {
			return nil, nil, err
		}
	}
	return evidence, manifest, nil
}

// download reads one artifact, at most limit bytes. Its download_url is an
// API URL that answers with a redirect to the storage behind it; Go's
// client follows it, and drops the Authorization header when the storage
// is on another host.
func (e *Executor) download(ctx context.Context, a *bk.Artifact, limit int64) ([]byte, error) {
	name := *a.Path
	if a.FileSize != nil && *a.FileSize > limit {
		return nil, fmt.Errorf("buildkite: artifact %s is %d bytes, more than the %d allowed: %w", name, *a.FileSize, limit, ErrResultTooLarge)
	}
	if a.DownloadURL == nil {
		return nil, fmt.Errorf("buildkite: artifact %s has no download URL", name)
	}
	u, err := url.Parse(*a.DownloadURL)
	if err != nil {
		return nil, fmt.Errorf("buildkite: artifact %s has a malformed download URL", name)
	}
	if u = e.base.ResolveReference(u); u.Scheme != e.base.Scheme || u.Host != e.base.Host {
		// The request carries the API token: send it to the API only.
		return nil, fmt.Errorf("buildkite: artifact %s downloads from %s, not from the API's host; refusing to send it the token", name, u.Host)
	}
	req, err := e.client.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, e.fail("downloading "+name, err)
	}
	// Not through Client.Do: it copies a body whole and drains whatever
	// is left after an error, which would read past the cap.
	resp, err := e.http.Do(req.WithContext(ctx))
	if err != nil {
		return nil, e.fail("downloading "+name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("buildkite: downloading %s: %s", name, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, e.fail("downloading "+name, err)
	}
	if int64(len(data)) > limit {
		// The listed size was wrong, or absent: the same verdict.
		return nil, fmt.Errorf("buildkite: artifact %s is more than the %d bytes allowed: %w", name, limit, ErrResultTooLarge)
	}
	return data, nil
}

// Annotate creates, or replaces, the build's "inspect" annotation. style is
// one of success, info, warning and error; body is Markdown, at most 1 MiB.
func (e *Executor) Annotate(ctx context.Context, externalID, style, body string) error {
	switch style {
	case "success", "info", "warning", "error":
	default:
		return fmt.Errorf("buildkite: annotation style %q; want success, info, warning or error", style)
	}
	switch {
	case body == "":
		return errors.New("buildkite: an annotation needs a body")
	case len(body) > maxAnnotationBytes:
		return fmt.Errorf("buildkite: an annotation of %d bytes is over Buildkite's %d", len(body), maxAnnotationBytes)
	}
	path, err := buildPath(externalID)
	if err != nil {
		return err
	}
	annotation := &bk.AnnotationCreate{
		Body:    bk.String(body),
		Style:   bk.String(style),
		Context: bk.String(annotationContext),
	}
	if _, err := e.do(ctx, http.MethodPost, path+"/annotations", annotation, nil); err != nil {
		return e.fail("annotating the build", err)
	}
	return nil
}

// do sends one API request with ctx, through go-buildkite (whose own
// methods take no context), and decodes the answer into out (nil: discard
// it).
func (e *Executor) do(ctx context.Context, method, path string, body, out any) (*bk.Response, error) {
	req, err := e.client.NewRequest(method, path, body)
	if err != nil {
		return nil, err
	}
	return e.client.Do(req.WithContext(ctx), out)
}

// pipelinesPath is the API path of an organization's pipelines, where a
// pipeline is created.
func pipelinesPath(org string) string {
	return "v2/organizations/" + url.PathEscape(org) + "/pipelines"
}

// pipelinePath is the API path of one pipeline; its builds are under it.
func pipelinePath(org, pipeline string) string {
	return pipelinesPath(org) + "/" + url.PathEscape(pipeline)
}

// buildPath is the API path of the build an external id names.
func buildPath(externalID string) (string, error) {
	org, pipeline, number, err := parseExternalID(externalID)
	if err != nil {
		return "", err
	}
	return pipelinePath(org, pipeline) + "/builds/" + strconv.Itoa(number), nil
}

// externalID is a build's id for the app: its web_url, checked to parse.
func (e *Executor) externalID(b *bk.Build) (string, error) {
	if b.WebURL == nil {
		return "", errors.New("buildkite: the build has no web_url")
	}
	if _, _, _, err := parseExternalID(*b.WebURL); err != nil {
		return "", err
	}
	return *b.WebURL, nil
}

// parseExternalID reads org, pipeline and build number back from a build's
// web_url, from its last four path segments: <org>/<pipeline>/builds/<n>.
func parseExternalID(id string) (org, pipeline string, number int, err error) {
	malformed := func() (string, string, int, error) {
		return "", "", 0, fmt.Errorf("buildkite: %q is not a build's URL (…/<org>/<pipeline>/builds/<number>)", id)
	}
	u, err := url.Parse(id)
	if err != nil || u.Path == "" || strings.ContainsAny(id, "\x00\n\r") {
		return malformed()
	}
	segs := strings.Split(u.Path, "/")
	if len(segs) < 4 {
		return malformed()
	}
	segs = segs[len(segs)-4:]
	n, err := strconv.Atoi(segs[3])
	if err != nil || n < 1 || segs[2] != "builds" || !isSlug(segs[0]) || !isSlug(segs[1]) || segs[3] != strconv.Itoa(n) {
		return malformed()
	}
	return segs[0], segs[1], n, nil
}

// isSlug reports whether s can be a Buildkite organization or pipeline
// slug: letters, digits, '-', '_' and '.', not starting with '.'. It keeps
// a slug from changing the shape of an API path ("..", "/", "?").
func isSlug(s string) bool {
	return s != "" && s[0] != '.' && isName(s)
}

// isName reports whether s is made of letters, digits, '-', '_' and '.'
// only.
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s != ""
}

// status is the HTTP status of a Buildkite error answer; 0 for anything
// else (nil included).
func status(err error) int {
	var er *bk.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// fail describes a failed operation with the token redacted from the whole
// text, and turns a final answer (see finalStatus) into a *FinalError.
func (e *Executor) fail(op string, err error) error {
	var er *bk.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && finalStatus(er.Response.StatusCode) {
		msg := er.Message
		if msg == "" {
			msg = http.StatusText(er.Response.StatusCode)
		}
		err = &FinalError{Service: serviceName, Status: er.Response.StatusCode, Message: redact(msg, e.token)}
	}
	return &opError{text: "buildkite: " + op + ": " + redact(err.Error(), e.token), err: err}
}

// finalStatus reports whether an answer's status is one that no retry will
// change: a 4xx, but for a 408, which the transport retried as it does a
// 5xx and which, like a 5xx, may pass later. A 429 never gets here as an
// answer: the transport turns it into a *RateLimitedError.
func finalStatus(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout
}

// opError is an error whose text has been redacted; the error it wraps is
// still there for errors.Is and errors.As.
type opError struct {
	text string
	err  error
}

func (o *opError) Error() string { return o.text }
func (o *opError) Unwrap() error { return o.err }

// redact removes the token from text. No request puts the token anywhere
// but the Authorization header; this is for what answers echo.
func redact(text, token string) string {
	if token == "" {
		return text
	}
	return strings.ReplaceAll(text, token, contract.Redacted)
}

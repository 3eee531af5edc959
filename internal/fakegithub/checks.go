package fakegithub

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/inspecthq/inspect/internal/standin"
)

const (
	docsCreateCheck = "https://docs.github.com/rest/checks/runs#create-a-check-run"
	docsUpdateCheck = "https://docs.github.com/rest/checks/runs#update-a-check-run"
	docsGetCheck    = "https://docs.github.com/rest/checks/runs#get-a-check-run"
	docsListChecks  = "https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference"
	docsAnnotations = "https://docs.github.com/rest/checks/runs#list-check-run-annotations"
	docsSuiteRuns   = "https://docs.github.com/rest/checks/runs#list-check-runs-in-a-check-suite"

	maxCheckOutput = 65535 // GitHub: summary and text, "Maximum length: 65535 characters"
	// GitHub: an annotation's title is "Maximum 255 characters"; message
	// and raw_details "64 KB" each, held here to bytes (GitHub may cut
	// rather than refuse; the stand-in refuses, so nothing relies on it).
	maxAnnotationTitle = 255
	maxAnnotationBytes = 64<<10 - 1
	// GitHub: "The Checks API limits the number of annotations to a maximum
	// of 50 per API request."
	maxAnnotationsPerRequest = 50

	// GitHub: "A maximum of three actions are accepted", each with a label
	// and an identifier of at most 20 characters and a description of at
	// most 40.
	maxCheckActions      = 3
	maxActionLabel       = 20
	maxActionDescription = 40
	maxActionIdentifier  = 20
)

var (
	// An App may set these statuses; "Only GitHub Actions can set a status
	// of waiting, pending, or requested."
	checkStatuses = []string{"queued", "in_progress", "completed"}
	// Conclusions an App may set; "You cannot change a check run
	// conclusion to stale, only GitHub can set this."
	checkConclusions = []string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"}
)

// CheckRun is a check run, for inspection, and, given to
// AddForeignCheckRun, one another App made.
type CheckRun struct {
	ID                                                        int64
	Name, HeadSHA, Status, Conclusion, ExternalID, DetailsURL string
	Title, Summary, Text                                      string
	Updates                                                   int          // how many times it was PATCHed
	Annotations                                               []Annotation // every annotation sent, in order
	// AppSlug and AppID are the App that made the run: this server's App
	// (AppSlug(), AppID()) for runs made through the API.
	AppSlug string
	AppID   int64
	// SuiteID is the run's check suite: GitHub gives each App one suite
	// per head commit.
	SuiteID int64
	// Actions are the requested actions the run offers: set on create,
	// replaced by an update that sends "actions", kept by one that does
	// not. (GitHub does not return them in the run's JSON.)
	Actions []CheckAction
	// HiddenActionWrites counts the creates and updates that sent actions
	// while leaving the run queued or in progress. GitHub accepts them, but
	// "the button created in this object is displayed after the check run
	// completes", so nobody sees such buttons and no requested_action ever
	// comes of them.
	HiddenActionWrites int
}

// CheckAction is a check run's requested action: a button GitHub shows,
// which sends the App a check_run "requested_action" event.
type CheckAction struct {
	Label, Description, Identifier string
}

// checkSuite is the suite of one App's runs on one commit.
type checkSuite struct {
	id      int64
	appID   int64
	appSlug string
	headSHA string
}

// suiteFor finds or makes the check suite of an App's runs on a commit.
// Callers hold s.mu.
func (s *Server) suiteFor(r *repoState, appID int64, appSlug, sha string) *checkSuite {
	for _, cs := range r.suites {
		if cs.appID == appID && cs.headSHA == sha {
			return cs
		}
	}
	cs := &checkSuite{id: s.nextID(), appID: appID, appSlug: appSlug, headSHA: sha}
	r.suites = append(r.suites, cs)
	return cs
}

// Annotation is a check-run annotation, for inspection. Annotations add up
// over a run's create and updates, as on GitHub.
type Annotation struct {
	Path                   string
	StartLine, EndLine     int
	StartColumn, EndColumn int    // 0 when not given
	Level                  string // notice, warning or failure
	Message, Title         string
	RawDetails             string
}

type checkRun struct {
	CheckRun
	startedAt, completedAt time.Time
}

// CheckRuns returns a repo's check runs in the order they were created:
// the App's and, seeded with AddForeignCheckRun, other Apps' (AppSlug and
// AppID tell them apart).
func (s *Server) CheckRuns(owner, repo string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil {
		return nil
	}
	var out []CheckRun
	for _, cr := range r.checkRuns {
		run := cr.CheckRun
		run.Annotations = slices.Clone(run.Annotations)
		run.Actions = slices.Clone(run.Actions)
		out = append(out, run)
	}
	return out
}

// PressButton is a person pressing the button with identifier on a check
// run, before the test delivers the requested_action event GitHub would
// send. It refuses what GitHub would not show: a button on a run that has
// not completed, or one the run does not offer.
func (s *Server) PressButton(owner, repo string, runID int64, identifier string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	cr := s.checkRunByID(r, strconv.FormatInt(runID, 10))
	switch {
	case cr == nil:
		return fmt.Errorf("fakegithub: no check run %d in %s", runID, r.fullName())
	case cr.Status != "completed":
		return fmt.Errorf("fakegithub: check run %d is %s: GitHub shows its buttons only once it completes", runID, cr.Status)
	case !slices.ContainsFunc(cr.Actions, func(a CheckAction) bool { return a.Identifier == identifier }):
		return fmt.Errorf("fakegithub: check run %d offers no %q button (it offers %+v)", runID, identifier, cr.Actions)
	}
	return nil
}

func (s *Server) checkRoutes() {
	g := repoGate("checks")
	s.handle("POST /repos/{owner}/{repo}/check-runs", docsCreateCheck, g, s.createCheckRun)
	s.handle("GET /repos/{owner}/{repo}/check-runs/{id}", docsGetCheck, g, s.getCheckRun)
	s.handle("PATCH /repos/{owner}/{repo}/check-runs/{id}", docsUpdateCheck, g, s.updateCheckRun)
	s.handle("GET /repos/{owner}/{repo}/check-runs/{id}/annotations", docsAnnotations, g, s.listAnnotations)
	s.handle("GET /repos/{owner}/{repo}/check-suites/{id}/check-runs", docsSuiteRuns, g, s.listSuiteRuns)
	// GET .../commits/{ref}/check-runs (listCheckRuns) is registered with
	// the other /commits/ routes, in commits.go.
}

// AddForeignCheckRun seeds a check run made by another App (a CI system,
// GitHub Actions): cr.AppSlug, cr.AppID, cr.Name and cr.HeadSHA are
// required. Status defaults to "completed", and a completed run's
// Conclusion to "success". The run gets an ID (for GitHub Actions, the
// job's id: see SetJobLog) and the SuiteID of that App's suite on the
// commit; annotations are added after cr.Annotations. It returns the run
// as stored. The App cannot update it: GitHub answers 403 to an App that
// did not make the run.
func (s *Server) AddForeignCheckRun(owner, repo string, cr CheckRun, annotations ...Annotation) CheckRun {
	if cr.AppSlug == "" || cr.AppID == 0 {
		panic("fakegithub: AddForeignCheckRun needs the run's AppSlug and AppID")
	}
	if cr.Name == "" || cr.HeadSHA == "" {
		panic("fakegithub: AddForeignCheckRun needs the run's Name and HeadSHA")
	}
	if cr.Status == "" {
		cr.Status = "completed"
	}
	if !slices.Contains([]string{"queued", "in_progress", "completed", "waiting", "pending", "requested"}, cr.Status) {
		panic(fmt.Sprintf("fakegithub: unknown check run status %q", cr.Status))
	}
	switch {
	case cr.Status == "completed" && cr.Conclusion == "":
		cr.Conclusion = "success"
	case cr.Status != "completed" && cr.Conclusion != "":
		panic(fmt.Sprintf("fakegithub: a %s check run has no conclusion", cr.Status))
	case cr.Conclusion != "" && !slices.Contains(checkConclusions, cr.Conclusion) && cr.Conclusion != "stale":
		panic(fmt.Sprintf("fakegithub: unknown check run conclusion %q", cr.Conclusion))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	cr.ID = s.nextID()
	cr.SuiteID = s.suiteFor(r, cr.AppID, cr.AppSlug, cr.HeadSHA).id
	cr.Updates = 0
	cr.Annotations = append(slices.Clone(cr.Annotations), annotations...)
	cr.Actions = slices.Clone(cr.Actions)
	now := s.now()
	run := &checkRun{CheckRun: cr, startedAt: now}
	if cr.Status == "completed" {
		run.completedAt = now
	}
	r.checkRuns = append(r.checkRuns, run)
	out := run.CheckRun
	out.Annotations = slices.Clone(out.Annotations)
	out.Actions = slices.Clone(out.Actions)
	return out
}

// annotationRequest is one of output.annotations.
type annotationRequest struct {
	Path            *string `json:"path"`
	StartLine       *int    `json:"start_line"`
	EndLine         *int    `json:"end_line"`
	StartColumn     *int    `json:"start_column"`
	EndColumn       *int    `json:"end_column"`
	AnnotationLevel *string `json:"annotation_level"`
	Message         *string `json:"message"`
	Title           *string `json:"title"`
	RawDetails      *string `json:"raw_details"`
}

// annotation validates one annotation as GitHub documents it: path,
// start_line, end_line, annotation_level (notice, warning or failure) and
// message required; columns only on a single line.
func (a annotationRequest) annotation(i int) (Annotation, []fieldError) {
	field := func(name string) string { return fmt.Sprintf("output.annotations[%d].%s", i, name) }
	var errs []fieldError
	for name, missing := range map[string]bool{
		"path": a.Path == nil || *a.Path == "", "start_line": a.StartLine == nil, "end_line": a.EndLine == nil,
		"annotation_level": a.AnnotationLevel == nil, "message": a.Message == nil || *a.Message == "",
	} {
		if missing {
			errs = append(errs, checkErr(field(name), "missing_field", ""))
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(x, y fieldError) int { return strings.Compare(x.Field, y.Field) })
		return Annotation{}, errs
	}
	out := Annotation{Path: *a.Path, StartLine: *a.StartLine, EndLine: *a.EndLine, Level: *a.AnnotationLevel, Message: *a.Message}
	if out.StartLine < 1 || out.EndLine < out.StartLine {
		errs = append(errs, checkErr(field("end_line"), "invalid", ""))
	}
	if !slices.Contains([]string{"notice", "warning", "failure"}, out.Level) {
		errs = append(errs, checkErr(field("annotation_level"), "invalid", ""))
	}
	if a.StartColumn != nil || a.EndColumn != nil {
		if out.StartLine != out.EndLine {
			errs = append(errs, checkErr(field("start_column"), "custom", "Annotations only support start_column and end_column on the same line."))
		}
		if a.StartColumn != nil {
			out.StartColumn = *a.StartColumn
		}
		if a.EndColumn != nil {
			out.EndColumn = *a.EndColumn
		}
	}
	if a.Title != nil {
		out.Title = *a.Title
		if n := utf8.RuneCountInString(out.Title); n > maxAnnotationTitle {
			errs = append(errs, checkErr(field("title"), "custom", fmt.Sprintf("Only %d characters are allowed; %d were supplied.", maxAnnotationTitle, n)))
		}
	}
	if a.RawDetails != nil {
		out.RawDetails = *a.RawDetails
	}
	for name, v := range map[string]string{"message": out.Message, "raw_details": out.RawDetails} {
		if len(v) > maxAnnotationBytes {
			errs = append(errs, checkErr(field(name), "custom", fmt.Sprintf("Only %d bytes are allowed; %d were supplied.", maxAnnotationBytes, len(v))))
		}
	}
	slices.SortFunc(errs, func(x, y fieldError) int { return strings.Compare(x.Field, y.Field) })
	return out, errs
}

// checkRunRequest is the body of a create or an update. Pointers tell
// "absent" from "empty".
type checkRunRequest struct {
	Name        *string `json:"name"`
	HeadSHA     *string `json:"head_sha"`
	DetailsURL  *string `json:"details_url"`
	ExternalID  *string `json:"external_id"`
	Status      *string `json:"status"`
	Conclusion  *string `json:"conclusion"`
	StartedAt   *string `json:"started_at"`
	CompletedAt *string `json:"completed_at"`
	// Actions is a pointer to tell an update that leaves the actions
	// alone (no key, or null) from one that removes them ([]).
	Actions *[]struct {
		Label       *string `json:"label"`
		Description *string `json:"description"`
		Identifier  *string `json:"identifier"`
	} `json:"actions"`
	Output *struct {
		Title       *string             `json:"title"`
		Summary     *string             `json:"summary"`
		Text        *string             `json:"text"`
		Annotations []annotationRequest `json:"annotations"`
	} `json:"output"`
}

func checkErr(field, code, msg string) fieldError {
	return fieldError{Resource: "CheckRun", Field: field, Code: code, Message: msg}
}

// apply validates req and applies it to cr (a new run when creating). It
// follows GitHub's rules: a conclusion implies status "completed"; a
// completed status or a completed_at needs a conclusion; output needs a
// summary, which may be empty (and, on create, a title), both summary and
// text are capped at 65535 characters, and it replaces the whole output:
// an update's output without text clears the text.
func (s *Server) applyCheckRun(cr *checkRun, req *checkRunRequest, creating bool) []fieldError {
	var errs []fieldError
	var annotations []Annotation
	if (req.Name != nil && *req.Name == "") || (creating && req.Name == nil) {
		// go-github v62's UpdateCheckRunOptions always sends "name", so
		// an update must carry the run's name.
		errs = append(errs, checkErr("name", "missing_field", ""))
	}
	if creating && (req.HeadSHA == nil || *req.HeadSHA == "") {
		errs = append(errs, checkErr("head_sha", "missing_field", ""))
	}
	status := cr.Status
	if req.Status != nil {
		status = *req.Status
		switch {
		case slices.Contains(checkStatuses, status):
		case status == "waiting" || status == "pending" || status == "requested":
			errs = append(errs, checkErr("status", "custom", "Only GitHub Actions can set a status of waiting, pending, or requested."))
		default:
			errs = append(errs, checkErr("status", "invalid", ""))
		}
	}
	conclusion := ""
	if status == "completed" {
		conclusion = cr.Conclusion // an update that leaves a completed run completed
	}
	if req.Conclusion != nil {
		conclusion = *req.Conclusion
		if !slices.Contains(checkConclusions, conclusion) {
			errs = append(errs, checkErr("conclusion", "invalid", ""))
		}
		status = "completed" // "Providing conclusion will automatically set the status parameter to completed."
	}
	var started, completed time.Time
	for _, ts := range []struct {
		field string
		v     *string
		into  *time.Time
	}{{"started_at", req.StartedAt, &started}, {"completed_at", req.CompletedAt, &completed}} {
		if ts.v == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339, *ts.v)
		if err != nil {
			errs = append(errs, checkErr(ts.field, "invalid", ""))
		}
		*ts.into = t
	}
	if (status == "completed" || req.CompletedAt != nil) && conclusion == "" {
		errs = append(errs, checkErr("conclusion", "missing_field", ""))
	}
	if o := req.Output; o != nil {
		// An empty summary is accepted: GitHub's own create example sends
		// "summary": "".
		if o.Summary == nil {
			errs = append(errs, checkErr("output.summary", "missing_field", ""))
		}
		if creating && (o.Title == nil || *o.Title == "") {
			errs = append(errs, checkErr("output.title", "missing_field", ""))
		}
		for field, v := range map[string]*string{"output.summary": o.Summary, "output.text": o.Text} {
			if n := 0; v != nil {
				if n = utf8.RuneCountInString(*v); n > maxCheckOutput {
					errs = append(errs, checkErr(field, "custom", fmt.Sprintf("Only %d characters are allowed; %d were supplied.", maxCheckOutput, n)))
				}
			}
		}
		if len(o.Annotations) > maxAnnotationsPerRequest {
			errs = append(errs, checkErr("output.annotations", "custom",
				fmt.Sprintf("No more than %d items are allowed; %d were supplied.", maxAnnotationsPerRequest, len(o.Annotations))))
		} else {
			for i, a := range o.Annotations {
				ann, bad := a.annotation(i)
				errs = append(errs, bad...)
				annotations = append(annotations, ann)
			}
		}
	}
	var actions []CheckAction
	if req.Actions != nil {
		if len(*req.Actions) > maxCheckActions {
			errs = append(errs, checkErr("actions", "custom", fmt.Sprintf("Only %d actions are allowed.", maxCheckActions)))
		}
		for i, a := range *req.Actions {
			var act CheckAction
			for _, f := range []struct {
				name string
				v    *string
				max  int
				into *string
			}{
				{"label", a.Label, maxActionLabel, &act.Label},
				{"description", a.Description, maxActionDescription, &act.Description},
				{"identifier", a.Identifier, maxActionIdentifier, &act.Identifier},
			} {
				field := fmt.Sprintf("actions[%d].%s", i, f.name)
				switch {
				case f.v == nil || *f.v == "":
					errs = append(errs, checkErr(field, "missing_field", ""))
				case utf8.RuneCountInString(*f.v) > f.max:
					errs = append(errs, checkErr(field, "custom", fmt.Sprintf("%s is too long (maximum is %d characters)", f.name, f.max)))
				default:
					*f.into = *f.v
				}
			}
			actions = append(actions, act)
		}
	}
	if len(errs) > 0 {
		return errs
	}

	now := s.now()
	if req.Actions != nil {
		cr.Actions = actions
		if len(actions) > 0 && status != "completed" {
			cr.HiddenActionWrites++
		}
	}
	if req.Name != nil {
		cr.Name = *req.Name
	}
	if req.HeadSHA != nil && creating {
		cr.HeadSHA = *req.HeadSHA
	}
	if req.DetailsURL != nil {
		cr.DetailsURL = *req.DetailsURL
	}
	if req.ExternalID != nil {
		cr.ExternalID = *req.ExternalID
	}
	if !started.IsZero() {
		cr.startedAt = started
	}
	cr.Status, cr.Conclusion = status, conclusion
	switch {
	case status != "completed":
		cr.completedAt = time.Time{}
	case !completed.IsZero():
		cr.completedAt = completed
	case cr.completedAt.IsZero():
		cr.completedAt = now
	}
	if o := req.Output; o != nil {
		if o.Title != nil {
			cr.Title = *o.Title
		}
		cr.Summary = *o.Summary
		cr.Text = ""
		if o.Text != nil {
			cr.Text = *o.Text
		}
		// Copy before appending: an update is applied to a copy of the run.
		cr.Annotations = append(slices.Clip(cr.Annotations), annotations...)
	}
	return nil
}

func (s *Server) createCheckRun(c *call) response {
	var req checkRunRequest
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	cr := &checkRun{
		CheckRun: CheckRun{
			Status: "queued", DetailsURL: s.appJSON()["external_url"].(string),
			AppSlug: s.appSlug, AppID: s.appID,
		},
		startedAt: s.now(),
	}
	if errs := s.applyCheckRun(cr, &req, true); errs != nil {
		return validationFailed(c.doc, errs...)
	}
	cr.ID = s.nextID()
	cr.SuiteID = s.suiteFor(c.repo, s.appID, s.appSlug, cr.HeadSHA).id
	if req.Output != nil {
		c.repo.render(RenderedCheckRun, 0, cr.ID, cr.Summary+"\n\n"+cr.Text, false)
	}
	c.repo.checkRuns = append(c.repo.checkRuns, cr)
	return jsonResp(http.StatusCreated, s.checkRunJSON(c.repo, cr))
}

func (s *Server) checkRunByID(r *repoState, id string) *checkRun {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil
	}
	for _, cr := range r.checkRuns {
		if cr.ID == n {
			return cr
		}
	}
	return nil
}

func (s *Server) getCheckRun(c *call) response {
	cr := s.checkRunByID(c.repo, c.r.PathValue("id"))
	if cr == nil {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.checkRunJSON(c.repo, cr))
}

// updateCheckRun updates one of the App's runs. GitHub refuses an App
// another App's run with a 403.
func (s *Server) updateCheckRun(c *call) response {
	cr := s.checkRunByID(c.repo, c.r.PathValue("id"))
	if cr == nil {
		return notFound(c.doc)
	}
	if cr.AppID != s.appID {
		return errResp(http.StatusForbidden, fmt.Sprintf(
			"Invalid app_id `%d` - check run can only be modified by the GitHub App that created it.", s.appID), c.doc)
	}
	var req checkRunRequest
	if bad := c.decode(&req); bad != nil {
		return *bad
	}
	// Validate on a copy, so a refused update changes nothing.
	next := *cr
	if errs := s.applyCheckRun(&next, &req, false); errs != nil {
		return validationFailed(c.doc, errs...)
	}
	next.Updates++
	*cr = next
	if req.Output != nil {
		c.repo.render(RenderedCheckRun, 0, cr.ID, cr.Summary+"\n\n"+cr.Text, false)
	}
	return jsonResp(http.StatusOK, s.checkRunJSON(c.repo, cr))
}

// commitFor resolves a ref to the commit SHA check runs hang on: a
// same-repo pull request's head branch resolves to its head SHA, another
// branch to its commit (the default branch of a repo without commits to a
// stable made-up SHA), and anything else is taken as a SHA.
func (s *Server) commitFor(r *repoState, ref string) string {
	for _, it := range r.issues {
		if it.pull != nil && sameRepoHead(r, it.pull) && it.pull.HeadRef == ref {
			return it.pull.HeadSHA
		}
	}
	if sha := r.branchSHA(ref); sha != "" {
		return sha
	}
	if ref == r.DefaultBranch {
		return fakeSHA(r.fullName(), "branch", ref)
	}
	return ref
}

// listAnnotations lists a check run's annotations, oldest first, paginated.
func (s *Server) listAnnotations(c *call) response {
	cr := s.checkRunByID(c.repo, c.r.PathValue("id"))
	if cr == nil {
		return notFound(c.doc)
	}
	orNil := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	colOrNil := func(v int) any {
		if v == 0 {
			return nil
		}
		return v
	}
	out := make([]map[string]any, 0, len(cr.Annotations))
	for _, a := range cr.Annotations {
		out = append(out, map[string]any{
			"path":             a.Path,
			"blob_href":        fmt.Sprintf("%s/%s/blob/%s/%s", s.URL(), c.repo.fullName(), cr.HeadSHA, a.Path),
			"start_line":       a.StartLine,
			"end_line":         a.EndLine,
			"start_column":     colOrNil(a.StartColumn),
			"end_column":       colOrNil(a.EndColumn),
			"annotation_level": a.Level,
			"title":            orNil(a.Title),
			"message":          a.Message,
			"raw_details":      orNil(a.RawDetails),
		})
	}
	return page(c, out)
}

// listCheckRuns lists the check runs on a ref, every App's: see listRuns.
func (s *Server) listCheckRuns(c *call) response {
	sha := s.commitFor(c.repo, c.r.PathValue("ref"))
	return s.listRuns(c, func(cr *checkRun) bool { return cr.HeadSHA == sha })
}

// listSuiteRuns lists the check runs of a check suite: see listRuns. An
// unknown suite is a 404.
func (s *Server) listSuiteRuns(c *call) response {
	id, _ := c.intPath("id")
	var suite *checkSuite
	for _, cs := range c.repo.suites {
		if cs.id == id {
			suite = cs
		}
	}
	if suite == nil {
		return notFound(c.doc)
	}
	return s.listRuns(c, func(cr *checkRun) bool { return cr.SuiteID == suite.id })
}

// listRuns lists the check runs in, newest first, as {"total_count": N,
// "check_runs": [...]}, paginated. filter=latest (the default) keeps only
// the newest run of each name of each App, as GitHub does when a check is
// re-run; filter=all keeps every run. check_name, status and app_id keep
// the runs that match.
func (s *Server) listRuns(c *call, in func(*checkRun) bool) response {
	q := c.r.URL.Query()
	filter := q.Get("filter")
	if filter == "" {
		filter = "latest"
	}
	if filter != "latest" && filter != "all" {
		return validationFailed(c.doc, checkErr("filter", "invalid", ""))
	}
	status := q.Get("status")
	if status != "" && !slices.Contains([]string{"queued", "in_progress", "completed", "waiting", "requested", "pending"}, status) {
		return validationFailed(c.doc, checkErr("status", "invalid", ""))
	}
	var appID int64
	if v := q.Get("app_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return validationFailed(c.doc, checkErr("app_id", "invalid", ""))
		}
		appID = n
	}
	type key struct {
		app  int64
		name string
	}
	seen := map[key]bool{}
	var runs []*checkRun
	for i := len(c.repo.checkRuns) - 1; i >= 0; i-- {
		cr := c.repo.checkRuns[i]
		if !in(cr) {
			continue
		}
		if filter == "latest" {
			k := key{cr.AppID, cr.Name}
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		if name := q.Get("check_name"); name != "" && cr.Name != name {
			continue
		}
		if (status != "" && cr.Status != status) || (appID != 0 && cr.AppID != appID) {
			continue
		}
		runs = append(runs, cr)
	}
	lo, hi, h := standin.Paginate(c.r, c.origPath, len(runs))
	out := []map[string]any{}
	for _, cr := range runs[lo:hi] {
		out = append(out, s.checkRunJSON(c.repo, cr))
	}
	return response{status: http.StatusOK, header: h, body: map[string]any{"total_count": len(runs), "check_runs": out}}
}

// runAppJSON is the "app" of a check run: this server's App, or the other
// App that made it, which the stand-in knows only by id and slug.
func (s *Server) runAppJSON(cr *checkRun) map[string]any {
	if cr.AppID == s.appID {
		return s.appJSON()
	}
	return map[string]any{
		"id":           cr.AppID,
		"slug":         cr.AppSlug,
		"node_id":      fmt.Sprintf("A_%d", cr.AppID),
		"name":         cr.AppSlug,
		"description":  "",
		"external_url": "",
		"html_url":     "https://github.com/apps/" + cr.AppSlug,
		"owner":        s.ensureUser(cr.AppSlug+"-owner", "Organization").json(s),
		"permissions":  map[string]string{"checks": "write", "metadata": "read"},
		"events":       []string{},
		"created_at":   "2024-01-01T00:00:00Z",
		"updated_at":   "2024-01-01T00:00:00Z",
	}
}

func (s *Server) checkRunJSON(r *repoState, cr *checkRun) map[string]any {
	api := fmt.Sprintf("%srepos/%s/check-runs/%d", s.APIURL(), r.fullName(), cr.ID)
	var conclusion any
	if cr.Conclusion != "" {
		conclusion = cr.Conclusion
	}
	var externalID any
	if cr.ExternalID != "" {
		externalID = cr.ExternalID
	}
	pulls := []any{}
	repoMin := map[string]any{"id": r.ID, "name": r.Name, "url": s.APIURL() + "repos/" + r.fullName()}
	for _, it := range r.issues {
		if it.pull != nil && it.State == "open" && it.pull.HeadRepoFullName == "" && it.pull.HeadSHA == cr.HeadSHA {
			pulls = append(pulls, map[string]any{
				"id":     it.id,
				"number": it.Number,
				"url":    fmt.Sprintf("%srepos/%s/pulls/%d", s.APIURL(), r.fullName(), it.Number),
				"head":   map[string]any{"ref": it.pull.HeadRef, "sha": it.pull.HeadSHA, "repo": repoMin},
				"base":   map[string]any{"ref": it.pull.BaseRef, "sha": r.branchSHAOrFake(it.pull.BaseRef), "repo": repoMin},
			})
		}
	}
	var title, summary, text any
	if cr.Title != "" {
		title = cr.Title
	}
	if cr.Summary != "" {
		summary = cr.Summary
	}
	if cr.Text != "" {
		text = cr.Text
	}
	return map[string]any{
		"id":           cr.ID,
		"node_id":      fmt.Sprintf("CR_%d", cr.ID),
		"name":         cr.Name,
		"head_sha":     cr.HeadSHA,
		"external_id":  externalID,
		"url":          api,
		"html_url":     fmt.Sprintf("%s/%s/runs/%d", s.URL(), r.fullName(), cr.ID),
		"details_url":  cr.DetailsURL,
		"status":       cr.Status,
		"conclusion":   conclusion,
		"started_at":   timestampOrNil(cr.startedAt),
		"completed_at": timestampOrNil(cr.completedAt),
		"output": map[string]any{
			"title": title, "summary": summary, "text": text,
			"annotations_count": len(cr.Annotations), "annotations_url": api + "/annotations",
		},
		"check_suite":   map[string]any{"id": cr.SuiteID},
		"app":           s.runAppJSON(cr),
		"pull_requests": pulls,
	}
}

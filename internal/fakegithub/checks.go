package fakegithub

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	docsCreateCheck = "https://docs.github.com/rest/checks/runs#create-a-check-run"
	docsUpdateCheck = "https://docs.github.com/rest/checks/runs#update-a-check-run"
	docsGetCheck    = "https://docs.github.com/rest/checks/runs#get-a-check-run"
	docsListChecks  = "https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference"
	docsAnnotations = "https://docs.github.com/rest/checks/runs#list-check-run-annotations"

	maxCheckOutput = 65535 // GitHub: summary and text, "Maximum length: 65535 characters"
	// GitHub: "The Checks API limits the number of annotations to a maximum
	// of 50 per API request."
	maxAnnotationsPerRequest = 50
)

var (
	// An App may set these statuses; "Only GitHub Actions can set a status
	// of waiting, pending, or requested."
	checkStatuses = []string{"queued", "in_progress", "completed"}
	// Conclusions an App may set; "You cannot change a check run
	// conclusion to stale, only GitHub can set this."
	checkConclusions = []string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"}
)

// CheckRun is a check run, for inspection.
type CheckRun struct {
	ID                                                        int64
	Name, HeadSHA, Status, Conclusion, ExternalID, DetailsURL string
	Title, Summary, Text                                      string
	Updates                                                   int          // how many times it was PATCHed
	Annotations                                               []Annotation // every annotation sent, in order
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

// CheckRuns returns a repo's check runs in the order they were created.
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
		out = append(out, run)
	}
	return out
}

func (s *Server) checkRoutes() {
	g := repoGate("checks")
	s.handle("POST /repos/{owner}/{repo}/check-runs", docsCreateCheck, g, s.createCheckRun)
	s.handle("GET /repos/{owner}/{repo}/check-runs/{id}", docsGetCheck, g, s.getCheckRun)
	s.handle("PATCH /repos/{owner}/{repo}/check-runs/{id}", docsUpdateCheck, g, s.updateCheckRun)
	s.handle("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", docsListChecks, g, s.listCheckRuns)
	s.handle("GET /repos/{owner}/{repo}/check-runs/{id}/annotations", docsAnnotations, g, s.listAnnotations)
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
	}
	if a.RawDetails != nil {
		out.RawDetails = *a.RawDetails
	}
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
	Output      *struct {
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
// summary (and, on create, a title) and both summary and text are capped
// at 65535 characters.
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
		if o.Summary == nil || *o.Summary == "" {
			errs = append(errs, checkErr("output.summary", "missing_field", ""))
		}
		if creating && (o.Title == nil || *o.Title == "") {
			errs = append(errs, checkErr("output.title", "missing_field", ""))
		}
		for field, v := range map[string]*string{"output.summary": o.Summary, "output.text": o.Text} {
			if v != nil && utf8.RuneCountInString(*v) > maxCheckOutput {
				errs = append(errs, checkErr(field, "custom", fmt.Sprintf("Only %d characters are allowed", maxCheckOutput)))
			}
		}
		if len(o.Annotations) > maxAnnotationsPerRequest {
			errs = append(errs, checkErr("output.annotations", "custom",
				fmt.Sprintf("Only %d annotations are allowed per request; send more with further updates.", maxAnnotationsPerRequest)))
		} else {
			for i, a := range o.Annotations {
				ann, bad := a.annotation(i)
				errs = append(errs, bad...)
				annotations = append(annotations, ann)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}

	now := s.now()
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
		CheckRun:  CheckRun{Status: "queued", DetailsURL: s.appJSON()["external_url"].(string)},
		startedAt: s.now(),
	}
	if errs := s.applyCheckRun(cr, &req, true); errs != nil {
		return validationFailed(c.doc, errs...)
	}
	cr.ID = s.nextID()
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

func (s *Server) updateCheckRun(c *call) response {
	cr := s.checkRunByID(c.repo, c.r.PathValue("id"))
	if cr == nil {
		return notFound(c.doc)
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

// listCheckRuns lists the check runs on a ref, newest first, as
// {"total_count": N, "check_runs": [...]}, paginated. filter=latest (the
// default) keeps only the newest run of each name, as GitHub does when a
// check is re-run; filter=all keeps every run.
func (s *Server) listCheckRuns(c *call) response {
	q := c.r.URL.Query()
	sha := s.commitFor(c.repo, c.r.PathValue("ref"))
	filter := q.Get("filter")
	if filter == "" {
		filter = "latest"
	}
	if filter != "latest" && filter != "all" {
		return validationFailed(c.doc, checkErr("filter", "invalid", ""))
	}
	seen := map[string]bool{}
	var runs []*checkRun
	for i := len(c.repo.checkRuns) - 1; i >= 0; i-- {
		cr := c.repo.checkRuns[i]
		if cr.HeadSHA != sha {
			continue
		}
		if filter == "latest" {
			if seen[cr.Name] {
				continue
			}
			seen[cr.Name] = true
		}
		if name := q.Get("check_name"); name != "" && cr.Name != name {
			continue
		}
		if st := q.Get("status"); st != "" && cr.Status != st {
			continue
		}
		runs = append(runs, cr)
	}
	lo, hi, h := c.paginate(len(runs))
	out := []map[string]any{}
	for _, cr := range runs[lo:hi] {
		out = append(out, s.checkRunJSON(c.repo, cr))
	}
	return response{status: http.StatusOK, header: h, body: map[string]any{"total_count": len(runs), "check_runs": out}}
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
	for _, it := range r.issues {
		if it.pull != nil && it.State == "open" && it.pull.HeadRepoFullName == "" && it.pull.HeadSHA == cr.HeadSHA {
			pulls = append(pulls, map[string]any{
				"id":     it.id,
				"number": it.Number,
				"url":    fmt.Sprintf("%srepos/%s/pulls/%d", s.APIURL(), r.fullName(), it.Number),
				"head":   map[string]any{"ref": it.pull.HeadRef, "sha": it.pull.HeadSHA, "repo": map[string]any{"id": r.ID, "name": r.Name}},
				"base":   map[string]any{"ref": it.pull.BaseRef, "sha": r.branchSHAOrFake(it.pull.BaseRef), "repo": map[string]any{"id": r.ID, "name": r.Name}},
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
		"check_suite":   map[string]any{"id": fakeSuiteID(cr.HeadSHA)},
		"app":           s.appJSON(),
		"pull_requests": pulls,
	}
}

// fakeSuiteID gives the runs on one commit one check suite, as GitHub gives
// an App one suite per commit.
func fakeSuiteID(sha string) int64 {
	var id int64
	for _, b := range []byte(sha) {
		id = (id*31 + int64(b)) % 1_000_000_007
	}
	return id + 1
}

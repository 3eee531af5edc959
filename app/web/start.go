package web

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// The start form: a run on an issue or pull request, or on a branch, of a
// repository the user can read, with their instructions. It is accepted
// as a comment's run would be (session.KindDashboard, the same intake);
// preparing it reads the user's permission on the repository as for a
// comment and applies policy.Authorize. An issue's or pull request's
// session replies on its thread; a branch has none, so its session's page
// is the reply and its change a new pull request into the branch
// (decision 0009). The issue or branch is read as the user: one they
// cannot see is not one to start on.

func (s *Server) readableNames(r *http.Request, v *viewer) ([]string, map[string]repoRef, error) {
	repos, err := s.readable(r.Context(), v)
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]repoRef{}
	var names []string
	for _, rr := range repos {
		n := rr.Owner + "/" + rr.Name
		byName[strings.ToLower(n)] = rr
		names = append(names, n)
	}
	sort.Strings(names)
	return names, byName, nil
}

func (s *Server) startForm(w http.ResponseWriter, r *http.Request) {
	s.renderStart(w, r, http.StatusOK, "", url.Values{})
}

func (s *Server) renderStart(w http.ResponseWriter, r *http.Request, status int, problem string, form url.Values) {
	v := viewerOf(r)
	names, _, err := s.readableNames(r, v)
	if err != nil {
		s.failUnreadable(w, v, err)
		return
	}
	s.render(w, status, "start.html", map[string]any{"Viewer": v, "Repos": names, "Problem": problem,
		"Repo": form.Get("repo"), "Number": form.Get("number"), "Branch": form.Get("branch"), "Instructions": form.Get("instructions")})
}

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	ctx := r.Context()
	form := r.PostForm
	_, byName, err := s.readableNames(r, v)
	if err != nil {
		s.failUnreadable(w, v, err)
		return
	}
	ref, ok := byName[strings.ToLower(form.Get("repo"))]
	if !ok {
		s.renderStart(w, r, http.StatusUnprocessableEntity, "Choose one of your repositories.", form)
		return
	}
	numberText := strings.TrimPrefix(strings.TrimSpace(form.Get("number")), "#")
	branch := strings.TrimSpace(form.Get("branch"))
	var number int
	switch {
	case numberText != "" && branch != "":
		s.renderStart(w, r, http.StatusUnprocessableEntity, "Give an issue or pull request, or a branch, not both.", form)
		return
	case branch != "":
		if why := policy.CheckBranchName(branch); why != "" {
			s.renderStart(w, r, http.StatusUnprocessableEntity, "That is not a branch name git takes: "+why+".", form)
			return
		}
	default:
		n, err := strconv.Atoi(numberText)
		if err != nil || n <= 0 {
			s.renderStart(w, r, http.StatusUnprocessableEntity, "Give the number of an issue or a pull request, such as 42, or a branch.", form)
			return
		}
		number = n
	}
	parsed := policy.ParseRequest(form.Get("instructions"))
	if parsed.Kind != policy.Command {
		s.renderStart(w, r, http.StatusUnprocessableEntity, "Say what Inspect should do.", form)
		return
	}
	c, err := s.gh.client(ctx, v.UserID, v.token)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "Inspect could not reach GitHub.")
		return
	}
	target := session.Branch(branch)
	if branch != "" {
		// Read as the user, as the issue is: GET git/ref/heads/{branch}
		// (go-github escapes each part of the name for the path).
		_, resp, err := c.Git.GetRef(ctx, ref.Owner, ref.Name, "heads/"+branch)
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			s.renderStart(w, r, http.StatusUnprocessableEntity, "There is no branch "+branch+" in "+ref.Owner+"/"+ref.Name+".", form)
			return
		}
		if err != nil {
			s.log.Warn().Err(err).Msg("dashboard: reading the branch failed")
			s.fail(w, http.StatusBadGateway, "GitHub did not answer about that branch. Try again.")
			return
		}
	} else {
		issue, resp, err := c.Issues.Get(ctx, ref.Owner, ref.Name, number)
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			s.renderStart(w, r, http.StatusUnprocessableEntity, "There is no such issue or pull request in "+ref.Owner+"/"+ref.Name+".", form)
			return
		}
		if err != nil {
			s.log.Warn().Err(err).Msg("dashboard: reading the issue failed")
			s.fail(w, http.StatusBadGateway, "GitHub did not answer about that issue. Try again.")
			return
		}
		target = session.Issue(number)
		if issue.IsPullRequest() {
			target = session.PullRequest(number)
		}
	}
	t := session.Trigger{
		DeliveryID: "web-" + random(12), Event: "dashboard", Kind: session.KindDashboard,
		Repo:           session.Repo{ID: ref.ID, Owner: ref.Owner, Name: ref.Name},
		InstallationID: ref.InstallationID,
		Sender:         session.Sender{Login: v.Login, ID: v.UserID, Type: "User"},
		Command:        parsed,
	}
	t.SetTarget(target)
	log := s.log.With().Str("delivery_id", t.DeliveryID).Str("login", v.Login).Str("repo", ref.Owner+"/"+ref.Name).Int("number", number).Logger()
	if err := s.commands.AcceptTrigger(log.WithContext(ctx), t); err != nil {
		log.Error().Err(err).Msg("dashboard: accepting a run failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not take the request. Try again.")
		return
	}
	log.Info().Msg("dashboard: run accepted")
	q := url.Values{"repo": {ref.Owner + "/" + ref.Name}, "requester": {v.Login}}
	http.Redirect(w, r, "/sessions?"+q.Encode(), http.StatusSeeOther)
}

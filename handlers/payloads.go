package handlers

import (
	"time"

	"github.com/inspecthq/inspect/session"
)

// Minimal payload shapes: only the fields Inspect reads. Decoding GitHub's
// 15–30 KB payloads into go-github's full event types cost most of the
// webhook's CPU time (see BENCHMARKS.md), and these also carry fields
// go-github v62 lacks, such as performed_via_github_app.

type payloadUser struct {
	Login string `json:"login"`
	Name  string `json:"name"` // push payloads name the owner here
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

type payloadRepo struct {
	ID            int64       `json:"id"`
	Name          string      `json:"name"`
	FullName      string      `json:"full_name"`
	DefaultBranch string      `json:"default_branch"`
	Owner         payloadUser `json:"owner"`
}

type payloadInstallation struct {
	ID int64 `json:"id"`
}

type issueCommentPayload struct {
	Action string `json:"action"`
	Issue  struct {
		Number      int       `json:"number"`
		PullRequest *struct{} `json:"pull_request"`
	} `json:"issue"`
	Comment struct {
		ID                    int64       `json:"id"`
		Body                  string      `json:"body"`
		User                  payloadUser `json:"user"`
		CreatedAt             *time.Time  `json:"created_at"`
		PerformedViaGithubApp *struct {
			ID int64 `json:"id"`
		} `json:"performed_via_github_app"`
	} `json:"comment"`
	Repository   payloadRepo         `json:"repository"`
	Installation payloadInstallation `json:"installation"`
	Sender       payloadUser         `json:"sender"`
}

type pushPayload struct {
	Ref     string `json:"ref"`
	After   string `json:"after"`
	Deleted bool   `json:"deleted"`
	Forced  bool   `json:"forced"`
	Commits []struct {
		ID        string     `json:"id"`
		Message   string     `json:"message"`
		Timestamp *time.Time `json:"timestamp"`
		Added     []string   `json:"added"`
		Modified  []string   `json:"modified"`
		Removed   []string   `json:"removed"`
	} `json:"commits"`
	Repository   payloadRepo         `json:"repository"`
	Installation payloadInstallation `json:"installation"`
}

// repo is the payload's repository as handlers report it.
func (r payloadRepo) repo() session.Repo {
	return session.Repo{ID: r.ID, Owner: r.Owner.Login, Name: r.Name, DefaultBranch: r.DefaultBranch}
}

// sender is the payload's sender as handlers report it.
func (u payloadUser) sender() session.Sender {
	return session.Sender{Login: u.Login, ID: u.ID, Type: u.Type}
}

// payloadApp is the GitHub App that owns a check run or check suite.
type payloadApp struct {
	ID   int64  `json:"id"`
	Slug string `json:"slug"`
}

// payloadPullRef is a pull request as check_run and check_suite payloads
// name it: only number, head and base.
type payloadPullRef struct {
	Number int `json:"number"`
	Head   struct {
		Ref  string `json:"ref"`
		SHA  string `json:"sha"`
		Repo struct {
			ID int64 `json:"id"`
		} `json:"repo"`
	} `json:"head"`
	Base struct {
		Repo struct {
			ID int64 `json:"id"`
		} `json:"repo"`
	} `json:"base"`
}

// pullRefs converts a payload's pull requests; none is nil.
func pullRefs(prs []payloadPullRef) []session.PullRef {
	if len(prs) == 0 {
		return nil
	}
	out := make([]session.PullRef, 0, len(prs))
	for _, p := range prs {
		out = append(out, session.PullRef{
			Number:     p.Number,
			HeadRef:    p.Head.Ref,
			HeadSHA:    p.Head.SHA,
			HeadRepoID: p.Head.Repo.ID,
			BaseRepoID: p.Base.Repo.ID,
		})
	}
	return out
}

type issuesPayload struct {
	Action string `json:"action"`
	Issue  struct {
		Number      int       `json:"number"`
		Title       string    `json:"title"`
		PullRequest *struct{} `json:"pull_request"`
	} `json:"issue"`
	Label struct {
		Name string `json:"name"`
	} `json:"label"`
	Repository   payloadRepo         `json:"repository"`
	Installation payloadInstallation `json:"installation"`
	Sender       payloadUser         `json:"sender"`
}

type checkRunPayload struct {
	Action   string `json:"action"`
	CheckRun struct {
		ID         int64      `json:"id"`
		Name       string     `json:"name"`
		HeadSHA    string     `json:"head_sha"`
		ExternalID string     `json:"external_id"`
		Conclusion string     `json:"conclusion"`
		App        payloadApp `json:"app"`
		CheckSuite struct {
			ID int64 `json:"id"`
		} `json:"check_suite"`
		PullRequests []payloadPullRef `json:"pull_requests"`
	} `json:"check_run"`
	RequestedAction struct {
		Identifier string `json:"identifier"`
	} `json:"requested_action"`
	Repository   payloadRepo         `json:"repository"`
	Installation payloadInstallation `json:"installation"`
	Sender       payloadUser         `json:"sender"`
}

type checkSuitePayload struct {
	Action     string `json:"action"`
	CheckSuite struct {
		ID           int64            `json:"id"`
		HeadSHA      string           `json:"head_sha"`
		Conclusion   string           `json:"conclusion"`
		App          payloadApp       `json:"app"`
		PullRequests []payloadPullRef `json:"pull_requests"`
	} `json:"check_suite"`
	Repository   payloadRepo         `json:"repository"`
	Installation payloadInstallation `json:"installation"`
	Sender       payloadUser         `json:"sender"`
}

type statusPayload struct {
	SHA          string              `json:"sha"`
	Context      string              `json:"context"`
	State        string              `json:"state"`
	Repository   payloadRepo         `json:"repository"`
	Installation payloadInstallation `json:"installation"`
	Sender       payloadUser         `json:"sender"`
}

type reviewCommentPayload struct {
	Action  string `json:"action"`
	Comment struct {
		ID        int64  `json:"id"`
		Body      string `json:"body"`
		Path      string `json:"path"`
		DiffHunk  string `json:"diff_hunk"`
		CommitID  string `json:"commit_id"`
		Side      string `json:"side"`
		InReplyTo int64  `json:"in_reply_to_id"`
		// User and CreatedAt: who wrote it and when, for the PR's fate.
		User      payloadUser `json:"user"`
		CreatedAt *time.Time  `json:"created_at"`
		// Line is null on an outdated comment; OriginalLine is then its
		// line in the commit it was made on.
		Line                  *int `json:"line"`
		OriginalLine          *int `json:"original_line"`
		StartLine             *int `json:"start_line"`
		PerformedViaGithubApp *struct {
			ID int64 `json:"id"`
		} `json:"performed_via_github_app"`
	} `json:"comment"`
	PullRequest struct {
		Number int `json:"number"`
	} `json:"pull_request"`
	Repository   payloadRepo         `json:"repository"`
	Installation payloadInstallation `json:"installation"`
	Sender       payloadUser         `json:"sender"`
}

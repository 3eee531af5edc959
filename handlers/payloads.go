package handlers

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
		Added    []string `json:"added"`
		Modified []string `json:"modified"`
		Removed  []string `json:"removed"`
	} `json:"commits"`
	Repository   payloadRepo         `json:"repository"`
	Installation payloadInstallation `json:"installation"`
}

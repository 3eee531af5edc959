package report

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// A requester who signed in, but whose own token GitHub refuses for the
// repository, still gets the session's pull request in the same report:
// the App's, saying so in its body. GitHub answers 404 to a user who cannot
// see a private repository and 403 to one who may only read it.
func TestARefusedRequesterTokenFallsBackToTheAppInTheSameReport(t *testing.T) {
	for _, tc := range []struct {
		name, role string
	}{
		{"404: cannot see the private repository", ""},
		{"403: may only read", "read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			gh := fakegithub.New()
			t.Cleanup(gh.Close)
			gh.AddInstallation(1, "acme")
			gh.AddRepo(fakegithub.Repo{ID: 101, Owner: "acme", Name: "widgets", InstallationID: 1, Private: true})
			gh.AddUser("bob", 6000, "User")
			if tc.role != "" {
				gh.SetPermission("acme", "widgets", "bob", tc.role)
			}
			gh.AddIssue("acme", "widgets", fakegithub.Issue{Number: 3, Title: "broken", State: "open", User: "bob"})
			pinned := gh.CommitFiles("acme", "widgets", "main", map[string]string{"a.txt": "a\n"}, "base")
			change := gh.CommitFiles("acme", "widgets", "scratch", map[string]string{"a.txt": "b\n"}, "the change")

			clients, err := ghclient.NewGitHubClients(gh.APIURL(), gh.AppID(), gh.AppPrivateKeyPEM(), "inspect-test", nil)
			if err != nil {
				t.Fatal(err)
			}
			installation, err := clients.Installation(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			asBob := github.NewClient(nil).WithAuthToken(gh.UserAccessToken("bob"))
			if asBob.BaseURL, err = url.Parse(gh.APIURL()); err != nil {
				t.Fatal(err)
			}
			h := &Handler{
				RequesterPRs: func(context.Context, store.Session) (ghwrite.PullRequestOpener, bool) {
					return asBob.PullRequests, true
				},
				SessionURL: func(string) *string { return nil },
				BotLogin:   gh.BotLogin,
				Store:      requestOnly{},
			}
			sess := store.Fixture(session.Reporting, store.Session{ID: "s-0123456789abcdef", RepoOwner: "acme", RepoName: "widgets",
				InstallationID: 1, Number: 3, TriggerKind: session.KindComment, RequesterLogin: "bob", RequesterID: 6000,
				RequesterType: "User", Instructions: "fix it", CommitSHA: change})
			spec := contract.Spec{PinnedSHA: pinned, Target: contract.Target{Kind: contract.TargetIssue, Number: 3, BaseBranch: "main"}}

			_, number, err := h.push(ctx, installation, sess, spec, true, policy.ChangeSummary{}, contract.Evidence{})
			if err != nil {
				t.Fatalf("the report failed instead of falling back to the App: %v", err)
			}
			pr, _, err := installation.PullRequests.Get(ctx, "acme", "widgets", number)
			if err != nil {
				t.Fatal(err)
			}
			if pr.GetUser().GetLogin() != gh.BotLogin() {
				t.Errorf("the PR is by %s, want the App's bot", pr.GetUser().GetLogin())
			}
			if !strings.Contains(pr.GetBody(), "Opened by Inspect's App, not as @bob") {
				t.Errorf("the PR's body does not say whose it is:\n%s", pr.GetBody())
			}
		})
	}
}

// requestOnly is a store whose sessions took no turns: push reads only
// the conversation (the request alone) of it.
type requestOnly struct{ Store }

func (requestOnly) ConversationTurns(context.Context, store.Session) ([]session.Turn, error) {
	return nil, nil
}

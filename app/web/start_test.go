package web

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/session"
)

// The start form takes a branch instead of a number: a name git would
// refuse, one that does not exist (read as the signed-in user), both a
// number and a branch, or neither is a 422 that says why and starts
// nothing; a branch that exists becomes a dashboard trigger with the
// branch and no number.
func TestStartFormTakesABranch(t *testing.T) {
	w := newWorld(t)
	w.gh.CreateBranch("acme", "widgets", "feature/login", "")
	w.signIn(t)
	_, page := w.get(t, "/sessions/new")
	csrf := between(page, `name="csrf" value="`, `"`)
	if csrf == "" || !strings.Contains(page, `id="branch"`) {
		t.Fatalf("the form has no CSRF token or no branch field:\n%s", page)
	}
	noRedirect := &http.Client{Jar: w.http.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(number, branch string) (int, string) {
		t.Helper()
		form := url.Values{"csrf": {csrf}, "repo": {"acme/widgets"}, "number": {number}, "branch": {branch}, "instructions": {"make it pass"}}
		resp, err := noRedirect.PostForm(w.srv.URL+"/sessions/new", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body) // a short read fails the checks below
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, number, branch, want string
	}{
		{"dot-dot", "", "a..b", "not a branch name git takes: a branch name must not contain &#39;..&#39;"},
		{"an option", "", "--upload-pack=x", "must not start with &#39;-&#39;"},
		{"a control character", "", "a\x01b", "must not contain control characters"},
		{"a space", "", "two words", "must not contain spaces"},
		{"a lock file", "", "x.lock", "end with &#39;.lock&#39;"},
		{"missing", "", "feature/<b>gone</b>", "There is no branch feature/&lt;b&gt;gone&lt;/b&gt; in acme/widgets."},
		{"a prefix of one that exists", "", "feature/log", "There is no branch feature/log in acme/widgets."},
		{"both", "3", "feature/login", "not both"},
		{"neither", "", "", "such as 42, or a branch"},
	} {
		code, body := post(tc.number, tc.branch)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d, want 422 saying %q:\n%s", tc.name, code, tc.want, between(body, `id="problem"`, "</p>"))
		}
		if strings.Contains(body, "<b>gone</b>") {
			t.Errorf("%s: the branch name reached the page unescaped", tc.name)
		}
	}
	if n := len(w.cmds.triggers); n != 0 {
		t.Fatalf("%d triggers from refused forms", n)
	}
	// The missing branch was looked for as alice, not as the App.
	reads := w.gh.RequestsMatching("GET", "/repos/acme/widgets/git/ref/heads/feature/")
	if len(reads) == 0 {
		t.Fatal("the branch was never read")
	}
	for _, r := range reads {
		if r.Auth != "user" {
			t.Errorf("%s read with a %s credential, want the user's", r.Path, r.Auth)
		}
	}

	if code, _ := post("", " feature/login "); code != http.StatusSeeOther {
		t.Fatalf("a branch that exists: %d, want 303", code)
	}
	if len(w.cmds.triggers) != 1 {
		t.Fatalf("%d triggers, want 1", len(w.cmds.triggers))
	}
	tr := w.cmds.triggers[0]
	if tr.Branch != "feature/login" || tr.Number != 0 || tr.IsPR || tr.Kind != "dashboard" || tr.Sender.Login != "alice" || tr.Command.Instructions != "make it pass" {
		t.Errorf("the trigger = %+v", tr)
	}
}

// A branch session is shown by its branch, escaped, in the list and on
// its page (with a link to the branch), never as "#0".
func TestBranchSessionIsShownByItsBranch(t *testing.T) {
	w := newWorld(t)
	branch := "feature/<i>x</i>"
	sess := store.Fixture(session.Running, store.Session{ID: "branch-1", RepoID: 101, RepoOwner: "acme", RepoName: "widgets", InstallationID: 1,
		TriggerKind: session.KindDashboard, DeliveryID: "web-b1", RequesterLogin: "alice", RequesterID: 5000, RequesterType: "User",
		Instructions: "do it", TriggerInfo: store.TriggerInfo{Branch: branch}.Encode()})
	if _, err := w.st.Accept(context.Background(), store.Acceptance{DeliveryID: sess.DeliveryID, Event: "dashboard", At: time.Now(), ClaimKey: "dashboard:web-b1", Session: &sess}); err != nil {
		t.Fatal(err)
	}
	w.signIn(t)
	_, list := w.get(t, "/sessions")
	row := between(list, `<a href="/sessions/branch-1">`, "</tr>")
	if !strings.Contains(row, "acme/widgets · feature/&lt;i&gt;x&lt;/i&gt;") || strings.Contains(row, "#0") {
		t.Errorf("the list's row: %s", row)
	}
	code, page := w.get(t, "/sessions/branch-1")
	if code != 200 || !strings.Contains(page, `<a id="branch" href="`+w.gh.URL()+`/acme/widgets/tree/feature/%3Ci%3Ex%3C/i%3E">feature/&lt;i&gt;x&lt;/i&gt;</a>`) ||
		strings.Contains(page, "<i>x</i>") || strings.Contains(page, "#0") {
		t.Errorf("the session's page (%d): %s", code, between(page, "<dt>Repository</dt>", "</dd>"))
	}
}

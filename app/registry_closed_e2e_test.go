package app_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakenpm"
)

// A registry closed to the agent (the server's default: setup and verify
// only) still has the agent's package managers pointed at the egress, so
// that their requests are refused there, with a 403 that says why, and not
// lost on a DNS lookup of the public defaults: the agent's `go mod
// download` and `npm install` reach no upstream, and each refusal is in the
// evidence's egress audit and on the pull request.
func TestAgentPackageManagersAreRefusedByARegistryClosedToTheAgent(t *testing.T) {
	goUp, alpha, goToken, goEgress := goRegistry(t)
	const npmToken = "npm-upstream-token-0123456789"
	npmUp := fakenpm.Serve(t, fakenpm.WithToken(npmToken, "inspect"))
	if _, err := npmUp.Add(fakenpm.Version{Name: "left-pad", Version: "1.3.0", Files: map[string]string{"index.js": "module.exports = 1\n"}}); err != nil {
		t.Fatal(err)
	}
	files := goDepsRepo(goUp, alpha)
	files["package.json"] = `{"name": "widgets", "version": "1.0.0", "dependencies": {"left-pad": "^1.3.0"}}` + "\n"
	// Each tool's failure is the agent's to see; the session goes on.
	files[".github/inspect.yml"] = "agent:\n" +
		"  preset: command\n" +
		"  command: [\"sh\", \"-c\", \"go mod download; npm install --ignore-scripts; echo 'looked at it' > NOTES.md\"]\n" +
		"env:\n  GOTOOLCHAIN: local\n  GOFLAGS: -mod=mod\n"
	r := newRealSessions(t, onLocal, goEgress, func(c *config.Server) {
		c.Egress.Registries["npmjs"] = config.Registry{Kind: "npm", URL: npmUp.URL(), Token: npmToken}
	})
	goBefore, npmBefore := len(goUp.Requests()), len(npmUp.Requests())
	sess := r.run(files, "/inspect take notes")
	if got := goUp.Requests()[goBefore:]; len(got) != 0 {
		t.Errorf("the Go upstream was reached: %+v", got)
	}
	if got := npmUp.Requests()[npmBefore:]; len(got) != 0 {
		t.Errorf("the npm upstream was reached: %+v", got)
	}

	a, err := r.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	var res contract.ResultUpload
	if err := json.Unmarshal([]byte(a.Result), &res); err != nil || res.Evidence.Egress == nil {
		t.Fatalf("no egress audit in the evidence: %v", err)
	}
	audit := res.Evidence.Egress
	for _, w := range []struct{ upstream, pathPrefix string }{
		{"goproxy", alpha.Path + "/@v/"},
		{"npmjs", "left-pad"},
	} {
		found := false
		for _, rec := range audit.Refused {
			if rec.Upstream == w.upstream && strings.HasPrefix(rec.Path, w.pathPrefix) && rec.Phase == contract.PhaseAgent &&
				rec.Method == "GET" && rec.Status == 403 && strings.Contains(rec.Why, "open only to these phases: setup, verify (not agent)") {
				found = true
			}
		}
		if !found {
			t.Errorf("no 403 for the agent's GET %s on %s in the evidence; refused: %+v", w.pathPrefix, w.upstream, audit.Refused)
		}
	}
	if audit.Registry.Requests != 0 {
		t.Errorf("the audit counts %d relayed registry requests, want none", audit.Registry.Requests)
	}

	pr, _, err := r.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	body := pr.GetBody()
	for _, line := range []string{
		// The PR shows @ as ＠ (render.pathSpan: no mention).
		"- `GET` `" + regexp.QuoteMeta(alpha.Path) + "/(@|＠)v/[^`]+` on `goproxy`, in agent\n",
		"- `GET` `left-pad` on `npmjs`, in agent\n",
	} {
		if !regexp.MustCompile(line).MatchString(body) {
			t.Errorf("the PR body does not list %q:\n%s", line, body)
		}
	}
	if strings.Contains(body, goToken) || strings.Contains(body, npmToken) || strings.Contains(r.allLogs(), goToken) || strings.Contains(r.allLogs(), npmToken) {
		t.Fatal("an upstream's token leaked")
	}
}

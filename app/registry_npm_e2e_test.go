package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakenpm"
)

// noTokenScript looks for the upstream's token, which only the app holds,
// in every process's environment and command line in the sandbox and in
// every file it can see. The token comes as two arguments, its halves, so
// that it is nowhere in the repository itself (noTokenStep).
const noTokenScript = "t=\"$1$2\"\n" +
	// Read into the shell first: a grep given the token would find it in
	// its own command line.
	"all=$(for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < \"$f\" 2>/dev/null; done)\n" +
	"case \"$all\" in *\"$t\"*) echo 'the token is in /proc'; exit 1;; esac\n" +
	"grep -rqsF -- \"$t\" /workspace /tmp /run && { echo 'the token is in a file'; exit 1; }\n" +
	"echo 'no token in the sandbox'\n"

// noTokenStep is a verify step, as .github/inspect.yml lists it, that runs
// scripts/no-token.sh (noTokenScript) for token.
func noTokenStep(token string) string {
	return "  - name: no token\n    run: [sh, scripts/no-token.sh, " + token[:10] + ", " + token[10:] + "]\n"
}

// An npm repository with a package-lock.json runs `npm ci` in setup and
// `node --test` in verify, on both executors, its packages coming through
// the registry egress from an upstream that wants a token, which the
// sandbox never holds: a verify command searches the sandbox for it.
func TestRealSessionInstallsNPMPackagesThroughTheRegistryEgress(t *testing.T) {
	forEachExecutor(t, testNPMInstall)
}

func testNPMInstall(t *testing.T, executor string) {
	const token = "npm-upstream-token-0123456789"
	up := fakenpm.Serve(t, fakenpm.WithToken(token, "inspect"), fakenpm.WithLatency(30*time.Millisecond))
	pkg := up.AddGreet(t)
	files := map[string]string{
		"package.json":      pkg,
		"package-lock.json": fakenpm.Lockfile(t, up, token, pkg),
		".gitignore":        "node_modules/\n",
		"test/greet.test.js": "const test = require('node:test')\nconst assert = require('node:assert')\nconst { greet } = require('greet')\n" +
			"test('greets loudly', () => assert.strictEqual(greet('ana'), 'HELLO ANA'))\n",
		"scripts/no-token.sh": noTokenScript,
		".github/inspect.yml": "agent:\n" +
			"  preset: command\n" +
			"  command: [\"sh\", \"-c\", \"echo 'looked at it' > NOTES.md\"]\n" +
			"setup:\n  - name: install\n    run: [npm, ci, --ignore-scripts]\n" +
			"verify:\n  - name: tests\n    run: [node, --test]\n" + noTokenStep(token),
	}
	r := newRealSessions(t, executor, func(c *config.Server) {
		c.Egress.Registries = map[string]config.Registry{"npmjs": {Kind: "npm", URL: up.URL(), Token: token}}
	})
	before := len(up.Requests())
	sess := r.run(files, "/inspect take notes")
	// Only what the session asked for counts: the lockfile was made
	// before it started.
	fetched := map[string]int{}
	for _, q := range up.Requests()[before:] {
		if q.Route == fakenpm.RouteTarball && q.Status == 200 {
			fetched[q.Package+"@"+q.Version]++
		}
		if !q.AuthValid {
			t.Fatalf("%s %s reached the upstream without the token", q.Method, q.Path)
		}
		if q.Route.IsWrite() {
			t.Fatalf("a write reached the upstream: %s %s", q.Method, q.Path)
		}
	}
	if fetched["greet@2.1.0"] < 1 || fetched["@acme/util@1.0.0"] < 1 {
		t.Fatalf("tarballs the session fetched through the egress: %v", fetched)
	}
	pr, _, err := r.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetDraft() || strings.Contains(pr.GetBody(), token) || strings.Contains(r.allLogs(), token) {
		t.Fatalf("PR draft=%v, or the token leaked into the PR body or the logs", pr.GetDraft())
	}
}

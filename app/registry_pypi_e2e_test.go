package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakepypi"
)

// pypiRepo is a Python repository whose requirements.txt pins greet's
// wheels by hash, with the verify step that looks for token in the
// sandbox. Setup installs them with the sandbox's python3 (Debian's, an
// externally managed one: --target, not the system's site-packages) into
// .deps, which PYTHONPATH names and .gitignore keeps out of the change.
func pypiRepo(token string, greet, shout fakepypi.File) map[string]string {
	return map[string]string{
		"requirements.txt": "acme-greet==2.1 --hash=sha256:" + greet.SHA256() + "\n" +
			"acme-shout==1.0 --hash=sha256:" + shout.SHA256() + "\n",
		".gitignore":          ".deps/\n__pycache__/\n",
		"tests/test_greet.py": "import unittest\n\nfrom acme_greet import greet\n\n\nclass GreetTest(unittest.TestCase):\n    def test_greets_loudly(self):\n        self.assertEqual(greet('ana'), 'HELLO ANA')\n",
		"scripts/no-token.sh": noTokenScript,
		".github/inspect.yml": "agent:\n" +
			"  preset: command\n" +
			"  command: [\"sh\", \"-c\", \"echo 'looked at it' > NOTES.md\"]\n" +
			"env:\n  PYTHONPATH: /workspace/.deps\n  PYTHONDONTWRITEBYTECODE: \"1\"\n  PIP_DISABLE_PIP_VERSION_CHECK: \"1\"\n" +
			"setup:\n  - name: install\n    run: [python3, -m, pip, install, --no-input, --target, .deps, --require-hashes, -r, requirements.txt]\n" +
			"verify:\n  - name: tests\n    run: [python3, -m, unittest, discover, -s, tests, -v]\n" + noTokenStep(token),
	}
}

// A Python repository installs its requirements from the simple index in
// setup and imports them in verify, on both executors, through the
// registry egress from an index that wants a token (HTTP Basic,
// "__token__" as on pypi.org), which the sandbox never holds.
func TestRealSessionInstallsPyPIPackagesThroughTheRegistryEgress(t *testing.T) {
	forEachExecutor(t, testPyPIInstall)
}

func testPyPIInstall(t *testing.T, executor string) {
	const token = "pypi-upstream-token-0123456789"
	up := fakepypi.Serve(t, fakepypi.WithToken(token), fakepypi.WithLatency(30*time.Millisecond))
	var wheels []fakepypi.File
	for _, w := range []fakepypi.Wheel{
		{Name: "acme-shout", Version: "1.0", Source: "def shout(s):\n    return s.upper()\n"},
		{Name: "acme-greet", Version: "2.1", Source: "from acme_shout import shout\n\n\ndef greet(name):\n    return shout('hello ' + name)\n",
			Requires: []string{"acme-shout>=1.0"}, RequiresPython: ">=3.8"},
	} {
		f, err := w.Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := up.Add(f); err != nil {
			t.Fatal(err)
		}
		wheels = append(wheels, f)
	}
	shout, greet := wheels[0], wheels[1]
	r := newRealSessions(t, executor, func(c *config.Server) {
		c.Egress.Registries = map[string]config.Registry{"pypi": {Kind: "pypi", URL: up.URL(), Token: token, Auth: "basic"}}
	})
	sess := r.run(pypiRepo(token, greet, shout), "/inspect take notes")
	// pip read the project pages and fetched both wheels, every request
	// with the credential the app added.
	pages := map[string]bool{}
	for _, q := range up.Requests() {
		if !q.AuthValid || q.AuthUser != fakepypi.TokenUser {
			t.Fatalf("%s %s reached the index without the token (user %q)", q.Method, q.Path, q.AuthUser)
		}
		if q.Route == fakepypi.RouteUpload {
			t.Fatalf("an upload reached the index: %s %s", q.Method, q.Path)
		}
		if q.Route == fakepypi.RouteProject && q.Status == 200 {
			pages[q.Project] = true
		}
	}
	if d := up.Downloads(); d[greet.Filename] < 1 || d[shout.Filename] < 1 || !pages["acme-greet"] || !pages["acme-shout"] {
		t.Fatalf("downloads %v and pages %v, want both projects' pages and wheels; requests: %+v", d, pages, up.Requests())
	}
	pr, _, err := r.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	// Not a draft: the tests passed, and the sandbox held no token.
	if pr.GetDraft() || !strings.Contains(pr.GetBody(), "`python3 -m unittest discover -s tests -v` | ✅ passed") {
		t.Errorf("PR draft=%v:\n%s", pr.GetDraft(), pr.GetBody())
	}
	if strings.Contains(pr.GetBody(), token) || strings.Contains(r.allLogs(), token) {
		t.Fatal("the token leaked into the PR body or the logs")
	}
}

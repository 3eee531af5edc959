package checkoutrun

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/internal/testpaths"
)

// `inspect run`'s summary flags test files by the one rule, over the
// shared table: an agent in the sandbox writes every path of it, and each
// line of the summary's change says "test file" exactly where the table
// does (decision 0047).
func TestSummaryFlagsTestFilesByTheSharedTable(t *testing.T) {
	t.Parallel()
	repo, _ := newRepo(t, map[string]string{
		"README.md": "seed\n",
		".github/inspect.yml": `verify:
  - name: readme
    run: ["test", "-f", "README.md"]
`,
	})
	var progress lockedBuffer
	opt := options(t, repo, &progress)
	// The paths reach the agent as argv elements, never inside the script.
	opt.Agent = []string{"sh", "-c", `for p do mkdir -p "$(dirname "$p")" && echo x > "$p" || exit 1; done`, "sh"}
	for _, p := range testpaths.Table {
		opt.Agent = append(opt.Agent, p.Path)
	}
	res, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	var summary bytes.Buffer
	res.WriteSummary(&summary)
	if res.Refusal != "" || len(res.Evidence.Changes) != len(testpaths.Table) {
		t.Fatalf("refusal %q, %d changes for %d paths:\n%s", res.Refusal, len(res.Evidence.Changes), len(testpaths.Table), summary.String())
	}
	lines := strings.Split(summary.String(), "\n")
	for _, p := range testpaths.Table {
		flagged, plain := false, false
		for _, l := range lines {
			flagged = flagged || strings.HasSuffix(l, "  "+p.Path+"  [test file]")
			plain = plain || strings.HasSuffix(l, "  "+p.Path)
		}
		switch {
		case p.Test && !flagged:
			t.Errorf("%s: not flagged as a test file", p.Path)
		case !p.Test && (flagged || !plain):
			t.Errorf("%s: flagged %v, plain line %v; want a plain line", p.Path, flagged, plain)
		}
	}
	if t.Failed() {
		t.Logf("summary:\n%s", summary.String())
	}
}

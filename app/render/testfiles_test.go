package render

import (
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/testpaths"
)

// The PR body flags test files by the one rule, over the shared table,
// along the report's own path: the manifest checked by the repo config
// (config.Repo.CheckChange, as app/report.go does), its summary rendered
// (decision 0047).
func TestPRBodyFlagsTestFilesByTheSharedTable(t *testing.T) {
	m := &contract.Manifest{}
	for _, p := range testpaths.Table {
		m.Files = append(m.Files, contract.FileChange{Path: p.Path, Mode: contract.ModeFile, Content: []byte("x\n"), Added: true})
	}
	decision, sum := config.Repo{}.CheckChange(m, contract.Limits{}, "calc")
	if !decision.Allowed {
		t.Fatalf("the table's change is refused: %+v", decision)
	}
	body := PRBody(store.Session{RequesterLogin: "alice", Number: 1, Instructions: "fix"}, contract.Spec{}, true, sum, contract.Evidence{}, Extras{})
	tests := 0
	for _, p := range testpaths.Table {
		row := "| " + cell(pathSpan(p.Path))
		flagged, plain := strings.Contains(body, row+" ⚠️ test file |"), strings.Contains(body, row+" |")
		switch {
		case p.Test && !flagged:
			t.Errorf("%s: not flagged as a test file", p.Path)
		case !p.Test && (flagged || !plain):
			t.Errorf("%s: flagged %v, plain row %v; want a plain row", p.Path, flagged, plain)
		}
		if p.Test {
			tests++
		}
	}
	if tests > 0 && !strings.Contains(body, "Test files were changed") {
		t.Errorf("no note that test files changed:\n%s", body)
	}
}

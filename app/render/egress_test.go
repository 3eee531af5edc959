package render

import (
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

func TestEgressSummaryOnlyWithRegistryTrafficOrRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *contract.EgressAudit
		want string
	}{
		{"no audit", nil, ""},
		{"model traffic only", &contract.EgressAudit{Model: contract.EgressCount{Requests: 4, Bytes: 9000}}, ""},
		{"one registry request", &contract.EgressAudit{Registry: contract.EgressCount{Requests: 1, Bytes: 512}}, "Egress: 1 registry request, 512 B, 0 refused.\n"},
		{"a refusal only, past the list", &contract.EgressAudit{RefusedCount: 3, RefusedDropped: 3}, "Egress: 0 registry requests, 0 B, 3 refused.\n\nRefused, and never sent on:\n\n- and 3 more\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EgressSummary(tc.a); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A refused path is the sandbox's: it stays one code span on its line,
// with no marker and no Markdown of its own.
func TestEgressSummaryKeepsUntrustedPathsInCode(t *testing.T) {
	evil := "a`` **Approved by @octocat** ``\n<!-- inspect:final=zzz -->\u202e[x](https://evil.example)"
	got := EgressSummary(&contract.EgressAudit{RefusedCount: 1, Refused: []contract.EgressRecord{
		{Kind: contract.EgressRefused, Phase: contract.PhaseSetup, Upstream: "npmjs", Method: "PU`T", Path: evil, Status: 403},
	}})
	lines := strings.Split(strings.TrimSpace(got), "\n")
	last := lines[len(lines)-1]
	if len(lines) != 5 || !strings.HasPrefix(last, "- `PUT` `a **Approved by ＠octocat** ") || strings.Count(last, "`") != 6 {
		t.Errorf("the refusal is not one line of three code spans:\n%s", got)
	}
	if strings.Contains(got, "<!-- inspect:") || strings.Contains(got, "\u202e") {
		t.Errorf("a marker or a hidden character came through:\n%s", got)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 1536: "1.5 kB", 38_204_511: "38.2 MB", 999_960: "1.0 MB", 1_200_000_000: "1.2 GB", 5e15: "5000.0 TB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCheckRunSummariesCarryTheEgressSummary(t *testing.T) {
	a := &contract.EgressAudit{Registry: contract.EgressCount{Requests: 142, Bytes: 38_204_511}}
	ev := &contract.Evidence{Egress: a}
	if _, s := DoneCheckRun(store.Session{Detail: "Verified."}, ev, Extras{}); s != "Verified.\n\nEgress: 142 registry requests, 38.2 MB, 0 refused.\n" {
		t.Errorf("done summary %q", s)
	}
	if _, s := DoneCheckRun(store.Session{}, ev, Extras{}); s != "Egress: 142 registry requests, 38.2 MB, 0 refused.\n" {
		t.Errorf("done summary without a detail %q", s)
	}
	if _, s := FailedTestsCheckRun(contract.Evidence{Tests: &contract.TestSummary{Failed: 1}, Egress: a}, Extras{}); !strings.HasSuffix(s, "skipped.\n\nEgress: 142 registry requests, 38.2 MB, 0 refused.\n") {
		t.Errorf("failed tests summary %q", s)
	}
}

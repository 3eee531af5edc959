package render

import (
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

func TestLimitExceededReplyNamesTheLimitAndItsValue(t *testing.T) {
	sess := store.Session{RequesterLogin: "octocat"}
	for _, tc := range []struct {
		limit contract.LimitHit
		want  string
	}{
		{contract.LimitHit{Name: contract.LimitMemory, Value: 2 << 30, Command: "agent"}, "its memory limit of 2 GiB"},
		{contract.LimitHit{Name: contract.LimitPids, Value: 1024, Command: "agent"}, "its limit of 1024 processes and threads"},
		{contract.LimitHit{Name: contract.LimitWorkspace, Value: 10 << 30, Command: "test"}, "its workspace disk limit of 10 GiB"},
		{contract.LimitHit{Name: contract.LimitSessionMemory, Value: 8 << 30, Command: "agent"}, "the session's memory limit of 8 GiB (`executor.limits.session_memory_bytes`"},
		{contract.LimitHit{Name: contract.LimitSessionPids, Value: 8192, Command: "agent"}, "the session's limit of 8192 processes and threads (`executor.limits.session_pids`"},
	} {
		got := LimitExceededReply(sess, contract.Evidence{Outcome: contract.OutcomeLimitExceeded, Limit: &tc.limit})
		if !strings.Contains(got, tc.want) || !strings.Contains(got, "@octocat") || !strings.Contains(got, "Nothing was pushed") {
			t.Errorf("%+v: %q, want it to say %q", tc.limit, got, tc.want)
		}
	}
}

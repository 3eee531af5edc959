package supervisor

import (
	"regexp"
	"strings"
	"sync"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner/testreport"
)

// tailBuffer keeps the last max bytes written to it. It keeps more than
// the output tail evidence will hold, so that redaction sees a secret whole
// before the tail is cut (contract.TailOutput's rule), and so that only a
// secret straddling the far start of the window can be cut.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped bool
	tests   *testreport.Scanner // optional: also read test runners' output
}

func newTailBuffer(keep int64) *tailBuffer {
	return &tailBuffer{max: int(max(4*keep, 1<<20))}
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tests != nil {
		_, _ = t.tests.Write(p) // never fails
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return len(p), nil
}

// tail redacts what was kept and returns its last keep bytes for
// CommandResult.OutputTail.
func (t *tailBuffer) tail(red *contract.Redactor, keep int64) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tail, cut := contract.TailOutput(red.RedactBytes(t.buf), int(keep))
	return tail, cut || t.dropped
}

// moduleLine reads the module path from a go.mod.
var moduleLine = regexp.MustCompile(`(?m)^module\s+"?([^\s"]+)"?\s*$`)

// cleanLine makes untrusted text a single line without control or
// invisible characters.
func cleanLine(s string) string {
	return contract.CleanProgressMessage(s)
}

// cleanText makes untrusted text valid for a text field: valid UTF-8, no
// hidden characters (policy.IsHidden, NUL among them), at most max bytes.
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = policy.CleanText(s)
	return policy.TruncateUTF8(s, max)
}

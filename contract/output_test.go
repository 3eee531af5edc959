package contract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestOutputChunkValidate(t *testing.T) {
	ok := OutputChunk{Seq: 1, Time: time.Unix(1, 0), Phase: PhaseVerify, Command: "go test", Text: "ok\n\tmulti-line\n"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good chunk: %v", err)
	}
	for name, tc := range map[string]struct {
		mut  func(*OutputChunk)
		want string
	}{
		"seq":           {func(c *OutputChunk) { c.Seq = 0 }, "seq"},
		"time":          {func(c *OutputChunk) { c.Time = time.Time{} }, "time"},
		"setup phase":   {func(c *OutputChunk) { c.Phase = PhaseSetup }, "must be agent or verify"},
		"no command":    {func(c *OutputChunk) { c.Command = "" }, "command"},
		"command line":  {func(c *OutputChunk) { c.Command = "a\nb" }, "control or invisible"},
		"empty text":    {func(c *OutputChunk) { c.Text = "" }, "text"},
		"NUL":           {func(c *OutputChunk) { c.Text = "a\x00" }, "NUL"},
		"invalid UTF-8": {func(c *OutputChunk) { c.Text = "\xff" }, "UTF-8"},
		"too long":      {func(c *OutputChunk) { c.Text = strings.Repeat("a", MaxOutputChunkTextBytes+1) }, "more than"},
	} {
		c := ok
		tc.mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	// The biggest text, all escapes, still fits a message.
	big := ok
	big.Text = strings.Repeat("\x01", MaxOutputChunkTextBytes)
	b, err := json.Marshal(big)
	if err != nil || len(b) > MaxOutputChunkBytes {
		t.Fatalf("%d bytes (cap %d), %v", len(b), MaxOutputChunkBytes, err)
	}
	if _, err := DecodeOutputChunk(strings.NewReader(string(b))); err != nil {
		t.Fatalf("decoding the biggest chunk: %v", err)
	}
}

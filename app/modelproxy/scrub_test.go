package modelproxy

import (
	"bytes"
	"strings"
	"testing"
)

// However the stream splits the key, none of it goes out whole, and
// nothing else is lost.
func TestKeyScrubberCatchesTheKeyAcrossReads(t *testing.T) {
	const key = "sk-test-0123456789"
	stream := "before " + key + " middle sk-te" + key + " end sk-"
	want := strings.ReplaceAll(stream, key, "[redacted]")
	for size := 1; size <= len(stream); size++ {
		s := newKeyScrubber(key)
		var out bytes.Buffer
		for i := 0; i < len(stream); i += size {
			out.Write(s.next([]byte(stream[i:min(i+size, len(stream))])))
		}
		out.Write(s.rest())
		if out.String() != want {
			t.Fatalf("reads of %d: %q, want %q", size, out.String(), want)
		}
	}
}

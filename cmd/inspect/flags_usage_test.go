package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestEveryFlagsUsageReadsRight runs each command's -h and checks each
// flag's line: the flag package takes the first `quoted` word of a usage
// string as the flag's value name, so a backtick in the text printed
// "-public-url inspect serve" instead of "-public-url string". A flag's
// line must be its name, then nothing (a bool) or its type.
func TestEveryFlagsUsageReadsRight(t *testing.T) {
	types := []string{"string", "int", "uint", "int64", "uint64", "float", "duration", "value"}
	for _, args := range [][]string{
		{"serve"}, {"setup"}, {"run"}, {"runner"}, {"runner", "forward"}, {"runner", "probe-tcp"},
		{"snapshot", "build"}, {"snapshot", "list"}, {"snapshot", "gc"}, {"buildkite", "setup"}, {"tools", "build"}, {"outcomes"}, {"outcomes", "backfill"},
	} {
		var out, errOut bytes.Buffer
		code := run(append(args, "-h"), &out, &errOut)
		help := out.String() + errOut.String()
		flags := 0
		for _, line := range strings.Split(help, "\n") {
			if !strings.HasPrefix(line, "  -") {
				continue
			}
			flags++
			head, _, _ := strings.Cut(line, "\t") // a short bool's usage follows a tab
			fields := strings.Fields(head)
			if len(fields) > 2 || len(fields) == 2 && !slices.Contains(types, fields[1]) {
				t.Errorf("inspect %s -h (exit %d): %q: a flag's name must be followed by its type only", strings.Join(args, " "), code, line)
			}
		}
		if flags == 0 {
			t.Errorf("inspect %s -h (exit %d) lists no flags:\n%s", strings.Join(args, " "), code, help)
		}
	}
}

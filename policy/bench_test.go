package policy

import (
	"strings"
	"testing"
)

// BenchmarkParse measures the grammar on the webhook's hot path.
func BenchmarkParse(b *testing.B) {
	bodies := map[string]string{
		"command": "/inspect fix the flaky test in scheduler_test.go",
		"prose":   strings.Repeat("This looks good to me, but please check the edge case with empty input.\n", 20),
		"mixed":   "Thanks!\n\n> /inspect quoted\n\n```\n/inspect fenced\n```\n/inspect fix it\nand add a test",
	}
	for name, body := range bodies {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Parse(body, "/inspect")
			}
		})
	}
}

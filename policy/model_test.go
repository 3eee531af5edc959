package policy

import (
	"strings"
	"testing"
)

func TestDecideModelRequestServesNamedRoutesOnly(t *testing.T) {
	for _, tc := range []struct {
		kind, method, escaped string
		allowed               bool
		why                   string
	}{
		{"openai", "POST", "responses", true, ""},
		{"openai", "POST", "chat/completions", true, ""},
		{"anthropic", "POST", "v1/messages", true, ""},
		{"anthropic", "POST", "v1/messages/count_tokens", true, ""},
		{"openai", "GET", "files", false, `"GET files" is not one`},
		{"openai", "DELETE", "files/file-1", false, `"DELETE files/file-1"`},
		{"openai", "TRACE", "responses", false, "TRACE responses"},
		{"openai", "CONNECT", "responses", false, "CONNECT"},
		{"openai", "POST", "v1/messages", false, "kind openai"},
		{"anthropic", "POST", "responses", false, "it serves POST v1/messages, POST v1/messages/count_tokens"},
		{"openai", "POST", "%72esponses", true, ""}, // decoded once: "responses"
		{"openai", "POST", "%252e%252e/%252e%252e/admin/keys", false, "encoded twice"},
		{"openai", "POST", "%2e%2e/admin", false, `".." segment`},
		{"openai", "POST", "chat%2Fcompletions", false, `character '/'`},
		{"openai", "POST", "responses/", false, "empty segment"},
		{"openai", "POST", "./responses", false, `"." segment`},
		{"openai", "POST", "respo nses", false, "character ' '"},
		{"openai", "POST", "%zz", false, "not a valid escaped path"},
		{"other", "POST", "responses", false, "no model provider of kind other"},
	} {
		segs, err := ModelPathSegments(tc.escaped)
		var d ModelDecision
		if err != nil {
			d.Why = err.Error()
		} else {
			d = DecideModelRequest(tc.kind, tc.method, segs)
		}
		if d.Allowed != tc.allowed || !strings.Contains(d.Why, tc.why) {
			t.Errorf("%s %s %s = %v %q, want %v and %q", tc.kind, tc.method, tc.escaped, d.Allowed, d.Why, tc.allowed, tc.why)
		}
	}
}

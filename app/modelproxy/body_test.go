package modelproxy

import (
	"testing"

	"github.com/inspecthq/inspect/policy"
)

// A request reserves its estimated input plus its output cap for each
// choice it asks for: Chat Completions' n answers are all charged
// (https://platform.openai.com/docs/api-reference/chat/create). The
// issue's n:64 was charged 64,010 tokens against a reservation of about
// 1,000.
func TestPrepareBodyReservesEveryChoice(t *testing.T) {
	chat := policy.ModelRoute{Method: "POST", Path: "chat/completions"}
	for _, tc := range []struct {
		name   string
		body   string
		output int64 // the reserved output; the input is len(body)/4+1
	}{
		{"no n", `{"model":"m","messages":[],"max_tokens":1000}`, 1000},
		{"n 1", `{"model":"m","messages":[],"max_tokens":1000,"n":1}`, 1000},
		{"n 64", `{"model":"m","messages":[],"max_tokens":1000,"n":64}`, 64000},
		{"n without a cap", `{"model":"m","messages":[],"n":3}`, 3 * 500},
		{"n not a count", `{"model":"m","messages":[],"max_tokens":1000,"n":"64"}`, 1000},
		{"n past any budget", `{"model":"m","messages":[],"max_tokens":1000000000,"n":9223372036854775807}`, maxOutputReservation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := prepareBody(chat, []byte(tc.body), 500)
			if want := int64(len(tc.body))/bytesPerToken + 1 + tc.output; got != want {
				t.Errorf("reserved %d, want %d", got, want)
			}
		})
	}
}

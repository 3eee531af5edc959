package modelproxy

import (
	"encoding/json"

	"github.com/inspecthq/inspect/policy"
)

// bytesPerToken turns a request body's size into its input tokens for a
// reservation: about four bytes a token for English and code, and JSON's
// quoting only makes a body longer than its tokens, so the estimate errs
// high.
const bytesPerToken = 4

// outputCapFields are the body fields that cap a request's output tokens,
// by API: Responses' max_output_tokens, Chat Completions' max_tokens and
// max_completion_tokens, Messages' max_tokens.
var outputCapFields = []string{"max_output_tokens", "max_tokens", "max_completion_tokens"}

// reservationCounts are the body fields whose numbers the reservation
// reads: the output caps and Chat Completions' n. The allowlist holds
// each to a JSON integer in range (countRefusal), the one form
// prepareBody reads.
var reservationCounts = append([]string{"n"}, outputCapFields...)

// maxOutputReservation bounds a request's reserved output, so that n
// times a cap cannot overflow: it is far past any budget, and holds the
// session's next request until it settles.
const maxOutputReservation = 1 << 50

// freeRoute reports whether the provider charges nothing for a route's
// answers: Anthropic's token counting is free
// (https://docs.anthropic.com/en/docs/build-with-claude/token-counting),
// and its answer, {"input_tokens": N}, is a count, not usage.
func freeRoute(route policy.ModelRoute) bool {
	return route.Path == "v1/messages/count_tokens"
}

// prepareBody is the body as it goes to the provider, and the tokens the
// request reserves. A streamed Chat Completions request is made to report
// its usage (stream_options.include_usage), which it does not by default:
// without it a stream would count nothing. The reservation is the input
// estimated from the body's size plus the request's own output cap, or
// defaultOutput when it names none, for each choice it asks for: Chat
// Completions' n generates n answers, each up to the cap, and all are
// charged (https://platform.openai.com/docs/api-reference/chat/create).
// body has passed modelRefusal (one JSON object, or empty).
func prepareBody(route policy.ModelRoute, body []byte, defaultOutput int64) ([]byte, int64) {
	reserve := int64(len(body))/bytesPerToken + 1
	var doc map[string]json.RawMessage
	if len(body) == 0 || json.Unmarshal(body, &doc) != nil {
		return body, reserve + defaultOutput
	}
	var output int64
	for _, f := range outputCapFields {
		var n int64
		if v, ok := doc[f]; ok && json.Unmarshal(v, &n) == nil && n > 0 {
			output = max(output, n)
		}
	}
	if output == 0 {
		output = defaultOutput
	}
	output = min(output, maxOutputReservation) // a cap past any budget stays one
	var choices int64
	if v, ok := doc["n"]; ok && json.Unmarshal(v, &choices) == nil && choices > 1 && output > 0 {
		if choices > maxOutputReservation/output {
			output = maxOutputReservation
		} else {
			output *= choices
		}
	}
	if route.Path == "chat/completions" {
		var stream bool
		if v, ok := doc["stream"]; ok && json.Unmarshal(v, &stream) == nil && stream {
			opts := map[string]json.RawMessage{}
			_ = json.Unmarshal(doc["stream_options"], &opts) // not an object (or absent): replaced whole
			if opts == nil {
				opts = map[string]json.RawMessage{}
			}
			opts["include_usage"] = json.RawMessage("true")
			doc["stream_options"], _ = json.Marshal(opts) // a map of raw JSON always marshals
			if out, err := json.Marshal(doc); err == nil {
				body = out
			}
		}
	}
	return body, reserve + output
}

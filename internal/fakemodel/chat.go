package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The OpenAI Chat Completions API (POST /v1/chat/completions), the turn's
// Message only (tool calls are not scripted here). A streamed turn is
// "data: CHUNK" lines, each a chat.completion.chunk with one delta, then
// "data: [DONE]"; as the real API does, the usage comes in a last chunk
// with no choices only when the request asks for it with
// stream_options.include_usage. A request that does not stream gets one
// chat.completion with its usage.
//
// A request's "n" asks for that many choices
// (https://platform.openai.com/docs/api-reference/chat/create): each is
// the turn's Message, at its own "index" (a streamed chunk carries one
// choice's delta), and all are charged: the usage's completion_tokens is
// n times the turn's OutputTokens. Cached input is
// prompt_tokens_details.cached_tokens, a part of prompt_tokens.

var chatDialect = dialect{
	inputField: "messages",
	apiKey:     bearerKey,
	errBody:    openAIError,
	outputs:    func(json.RawMessage) [][2]string { return nil },
	answer:     answerChat,
}

// chatUsage is a Chat Completions usage object for n choices of u's
// output each.
func chatUsage(u Usage, n int64) map[string]any {
	output := n * u.OutputTokens
	total := u.TotalTokens
	if total == 0 {
		total = u.InputTokens + output
	}
	return map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": output, "total_tokens": total,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens}}
}

// maxChoices bounds the choices one answer holds, so that a request's n
// cannot make the stand-in build a huge answer; tests ask for a few.
const maxChoices = 128

// choicesOf is the request's "n": 1 when absent or not a count, at most
// maxChoices.
func choicesOf(raw map[string]json.RawMessage) int64 {
	var n int64
	if json.Unmarshal(raw["n"], &n) != nil || n < 1 {
		return 1
	}
	return min(n, maxChoices)
}

func answerChat(w http.ResponseWriter, req *parsedRequest, t Turn, n int64) {
	id := fmt.Sprintf("chatcmpl-%d", n)
	created := time.Now().Unix()
	choiceCount := choicesOf(req.raw)
	if !req.stream {
		choices := make([]any, choiceCount)
		for i := range choices {
			choices[i] = map[string]any{"index": i, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": t.Message}}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.model,
			"choices": choices, "usage": chatUsage(t.Usage, choiceCount),
		}, nil)
		return
	}
	var opts struct {
		IncludeUsage bool `json:"include_usage"`
	}
	_ = json.Unmarshal(req.raw["stream_options"], &opts) // absent or not an object: no usage, as the API does
	es := newEventStream(w, false)
	chunk := func(choices []any, usage any) {
		_, _ = fmt.Fprintf(es.w, "data: %s\n\n", marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.model,
			"choices": choices, "usage": usage,
		}))
		_ = es.rc.Flush() // the client may be gone; the stream is its to drop
	}
	pieces := []string{t.Message}
	if t.Pace > 0 {
		pieces = strings.SplitAfter(t.Message, " ")
	}
	for _, p := range pieces {
		if t.Pace > 0 {
			wait := time.NewTimer(t.Pace)
			select { // a provider's pace, not a synchronisation
			case <-wait.C:
			case <-req.ctx.Done():
				wait.Stop()
				return
			}
		}
		for i := range choiceCount {
			chunk([]any{map[string]any{"index": i, "delta": map[string]any{"role": "assistant", "content": p}, "finish_reason": nil}}, nil)
		}
	}
	if t.HoldUsage != nil {
		select { // the client hangs up (or the test lets the stream end)
		case <-t.HoldUsage:
		case <-req.ctx.Done():
			return
		}
	}
	for i := range choiceCount {
		chunk([]any{map[string]any{"index": i, "delta": map[string]any{}, "finish_reason": "stop"}}, nil)
	}
	if opts.IncludeUsage {
		chunk([]any{}, chatUsage(t.Usage, choiceCount))
	}
	_, _ = fmt.Fprint(es.w, "data: [DONE]\n\n")
	_ = es.rc.Flush()
}

// echoHeaders answers with the request's headers, key and all, one byte
// per write and flush: an upstream that hands the key back split across
// as many reads as it can.
func echoHeaders(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var text []byte
	for k, vs := range r.Header {
		for _, v := range vs {
			text = append(text, k+": "+v+"\n"...)
		}
	}
	for i := range text {
		if _, err := w.Write(text[i : i+1]); err != nil {
			return // the client went away
		}
		_ = rc.Flush() // as above
	}
}

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

var chatDialect = dialect{
	inputField: "messages",
	apiKey:     bearerKey,
	errBody:    openAIError,
	outputs:    func(json.RawMessage) [][2]string { return nil },
	answer:     answerChat,
}

func chatUsage(u Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.total()}
}

func answerChat(w http.ResponseWriter, req *parsedRequest, t Turn, n int64) {
	id := fmt.Sprintf("chatcmpl-%d", n)
	created := time.Now().Unix()
	if !req.stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": t.Message}}},
			"usage": chatUsage(t.Usage),
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
		chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": p}, "finish_reason": nil}}, nil)
	}
	if t.HoldUsage != nil {
		select { // the client hangs up (or the test lets the stream end)
		case <-t.HoldUsage:
		case <-req.ctx.Done():
			return
		}
	}
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}, nil)
	if opts.IncludeUsage {
		chunk([]any{}, chatUsage(t.Usage))
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

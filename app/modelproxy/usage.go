package modelproxy

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/inspecthq/inspect/policy"
)

// usageMeter finds the token counts a provider reports in its answer: the
// usage object of a streamed completion event (OpenAI Responses'
// response.completed; Anthropic's message_start and message_delta) or of a
// whole JSON body.
//
// Input is everything the provider charges as input. OpenAI counts its
// cached input inside input_tokens (prompt_tokens) and says how much of
// it was cached in input_tokens_details.cached_tokens
// (prompt_tokens_details): https://platform.openai.com/docs/guides/prompt-caching.
// Anthropic reports its cache reads and writes beside input_tokens, not in
// it, so its input is the sum of the three:
// https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching.
// Both record the cached parts apart (Usage.CacheReadTokens,
// CacheWriteTokens), which the providers price apart.
type usageMeter struct {
	line  []byte
	body  bytes.Buffer
	found Usage
	// anthropic is a Messages stream's usage so far: message_start's,
	// each field replaced by a later message_delta's that has it.
	// All zero when the answer is not a Messages stream.
	anthropic anthropicUsage
	sse       bool
	// final is set when the answer's closing usage report arrived (a
	// stream's last usage event, or a whole body's usage): without it the
	// request is charged its reservation.
	final bool
}

// maxMeteredBody bounds what is kept of a non-streamed body to find its usage.
const maxMeteredBody = 8 << 20

func (m *usageMeter) Write(p []byte) {
	if m.body.Len() < maxMeteredBody {
		m.body.Write(p[:min(len(p), maxMeteredBody-m.body.Len())])
	}
	for _, b := range p {
		if b != '\n' {
			if len(m.line) < maxMeteredBody {
				m.line = append(m.line, b)
			}
			continue
		}
		if data, ok := bytes.CutPrefix(bytes.TrimRight(m.line, "\r"), []byte("data:")); ok {
			m.sse = true
			m.add(bytes.TrimSpace(data))
		}
		m.line = m.line[:0]
	}
}

func (m *usageMeter) usage() Usage {
	if !m.sse {
		m.add(m.body.Bytes())
	}
	return m.total()
}

func (m *usageMeter) total() Usage {
	u := m.found
	a := m.anthropic
	u.InputTokens += a.input + a.cacheWrite + a.cacheRead
	u.CacheReadTokens += a.cacheRead
	u.CacheWriteTokens += a.cacheWrite
	u.OutputTokens += a.output
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	return u
}

// settles reports whether the answer's own report settles its request,
// rather than its reservation: a closing usage report does, and so does a
// whole non-streamed answer that is not a success (an error, which
// providers do not charge) or is on a free route. A successful answer
// without usage (an OpenAI background response, still queued, reports
// "usage": null) was charged for, or will be: it is charged its whole
// reservation, never 0.
func (m *usageMeter) settles(status int, relayed bool, route policy.ModelRoute) bool {
	if m.final {
		return true
	}
	success := status >= http.StatusOK && status < http.StatusMultipleChoices
	return relayed && !m.sse && (!success || freeRoute(route))
}

type usageJSON struct {
	// Pointers where an Anthropic message_delta may leave a field out,
	// keeping message_start's.
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`

	TotalTokens         int64         `json:"total_tokens"`
	PromptTokens        int64         `json:"prompt_tokens"`
	CompletionTokens    int64         `json:"completion_tokens"`
	InputTokensDetails  *cachedTokens `json:"input_tokens_details"`
	PromptTokensDetails *cachedTokens `json:"prompt_tokens_details"`
}

type cachedTokens struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// anthropicUsage is a Messages answer's usage: input_tokens is the input
// after the last cache breakpoint only.
type anthropicUsage struct {
	input, cacheWrite, cacheRead, output int64
}

// update takes each count u has. A message_delta's counts are cumulative
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming), so
// they replace message_start's; the official SDKs' stream accumulators
// do the same, field by field.
func (a *anthropicUsage) update(u usageJSON) {
	for _, f := range []struct {
		to   *int64
		from *int64
	}{
		{&a.input, u.InputTokens},
		{&a.cacheWrite, u.CacheCreationInputTokens},
		{&a.cacheRead, u.CacheReadInputTokens},
		{&a.output, u.OutputTokens},
	} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
}

// add counts the usage in one JSON event or body. A Responses stream
// reports it once, in response.completed; an Anthropic stream reports it
// in message_start and again, cumulatively, in each message_delta; a
// whole body (Chat Completions, Responses, Messages' "type":"message")
// reports it once.
func (m *usageMeter) add(doc []byte) {
	var ev struct {
		Type     string     `json:"type"`
		Usage    *usageJSON `json:"usage"`
		Response *struct {
			Usage *usageJSON `json:"usage"`
		} `json:"response"`
		Message *struct {
			Usage *usageJSON `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(doc, &ev) != nil {
		return
	}
	switch {
	case ev.Type == "message_start" && ev.Message != nil && ev.Message.Usage != nil:
		m.anthropic.update(*ev.Message.Usage)
	case ev.Type == "message_delta" && ev.Usage != nil:
		m.anthropic.update(*ev.Usage)
		m.final = true
	case ev.Response != nil && ev.Response.Usage != nil:
		m.count(*ev.Response.Usage)
		m.final = true
	case ev.Usage != nil && (ev.Type == "" || ev.Type == "message"):
		// A whole body (Chat Completions, Responses, Messages), or a Chat
		// Completions stream's last chunk.
		m.count(*ev.Usage)
		m.final = true
	}
}

// count adds one whole usage report, of whichever provider: the fields
// of the other are absent.
func (m *usageMeter) count(u usageJSON) {
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	cacheWrite, cacheRead := val(u.CacheCreationInputTokens), val(u.CacheReadInputTokens) // Anthropic's, beside input_tokens
	for _, d := range []*cachedTokens{u.InputTokensDetails, u.PromptTokensDetails} {
		if d != nil {
			cacheRead += d.CachedTokens // OpenAI's, a part of input_tokens (prompt_tokens)
		}
	}
	m.found.InputTokens += val(u.InputTokens) + u.PromptTokens + val(u.CacheCreationInputTokens) + val(u.CacheReadInputTokens)
	m.found.CacheReadTokens += cacheRead
	m.found.CacheWriteTokens += cacheWrite
	m.found.OutputTokens += val(u.OutputTokens) + u.CompletionTokens
	m.found.TotalTokens += u.TotalTokens
}

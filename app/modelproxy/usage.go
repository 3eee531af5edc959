package modelproxy

import (
	"bytes"
	"encoding/json"
)

// usageMeter finds the token counts a provider reports in its answer: the
// usage object of a streamed completion event (OpenAI Responses'
// response.completed; Anthropic's message_start and message_delta) or of a
// whole JSON body.
type usageMeter struct {
	line  []byte
	body  bytes.Buffer
	found Usage
	sse   bool
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
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	return u
}

type usageJSON struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// add counts the usage in one JSON event or body. A Responses stream
// reports it once, in response.completed; an Anthropic stream reports the
// input in message_start and the output so far in each message_delta.
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
		m.found.InputTokens += ev.Message.Usage.InputTokens
	case ev.Type == "message_delta" && ev.Usage != nil:
		m.found.OutputTokens = max(m.found.OutputTokens, ev.Usage.OutputTokens) // cumulative
		m.final = true
	case ev.Response != nil && ev.Response.Usage != nil:
		m.count(*ev.Response.Usage)
		m.final = true
	case ev.Usage != nil && ev.Type == "":
		m.count(*ev.Usage) // a whole body, or a Chat Completions stream's last chunk
		m.final = true
	}
}

func (m *usageMeter) count(u usageJSON) {
	m.found.InputTokens += u.InputTokens + u.PromptTokens
	m.found.OutputTokens += u.OutputTokens + u.CompletionTokens
	m.found.TotalTokens += u.TotalTokens
}

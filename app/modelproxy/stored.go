package modelproxy

import (
	"encoding/json"
	"fmt"
	"strings"
)

// contentFields are the body fields that carry a request's content, by
// API: where a provider lets content be named by the id it stored it under.
var contentFields = map[string][]string{
	apiOpenAIResponses:   {"input"},
	apiOpenAIChat:        {"messages"},
	apiAnthropicMessages: {"messages", "system"},
}

// storedReference says why a request is refused for content it names by
// an id the provider stored ("" when it names none). The provider reads
// such content itself and bills it as input, but the request holds only
// the id: the reservation (prepareBody, from the body's size) would be a
// few tokens, and an answer the agent aborts before its usage report is
// charged only that, while the provider bills the whole stored content,
// up to the model's context window, on every request. So stored content
// is refused outright, whatever its size: the CLIs send everything inline
// (testdata/recorded). The top-level continuations (previous_response_id,
// conversation, prompt) are off the allowlist (decision 0055); this finds
// the ones inside the content (decision 0061):
//   - OpenAI Responses: an input item of type item_reference, or with no
//     type and no role (an item reference by its id alone), and a
//     reasoning item without its encrypted_content (read from the stored
//     response by its id)
//     (https://platform.openai.com/docs/api-reference/responses/create,
//     https://platform.openai.com/docs/guides/reasoning);
//   - a file by its file_id: Responses' input_file and input_image, Chat
//     Completions' file part (https://platform.openai.com/docs/guides/pdf-files),
//     Anthropic's {"type": "file"} source and container_upload block
//     (https://platform.claude.com/docs/en/build-with-claude/files);
//   - Chat Completions' assistant audio by the id of an earlier answer
//     (https://platform.openai.com/docs/api-reference/chat/create).
//
// body has passed allowedRequest: empty, or one JSON object.
func storedReference(api string, body []byte) string {
	var doc map[string]json.RawMessage
	if len(body) == 0 || json.Unmarshal(body, &doc) != nil {
		return ""
	}
	for _, field := range contentFields[api] {
		raw, ok := doc[field]
		if !ok {
			continue
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue // the provider refuses it as it is
		}
		what := ""
		if items, ok := v.([]any); ok {
			for _, item := range items {
				if what = storedItem(api, item); what != "" {
					break
				}
			}
		}
		if what == "" {
			what = storedFile(v)
		}
		if what != "" {
			return fmt.Sprintf("the request field %q names %s, content the provider stored: it would bill that content as input, "+
				"which the request does not hold and no reservation can count; send the content inline", field, what)
		}
	}
	return ""
}

// storedItem is what one top-level item of a content field names by a
// stored id ("" for nothing): a Responses item reference or reasoning read
// by its id, or a Chat Completions message's audio of an earlier answer.
func storedItem(api string, item any) string {
	m, ok := item.(map[string]any)
	if !ok {
		return ""
	}
	// Keys as the provider reads them, in any case (fieldFolded).
	typ, _ := fieldFolded(m, "type").(string)
	switch api {
	case apiOpenAIResponses:
		hasRole := hasFolded(m, "role")
		switch {
		case typ == "item_reference":
			return "an item_reference"
		case fieldFolded(m, "type") == nil && !hasRole:
			return "an item by its id alone (an item reference)"
		case typ == "reasoning":
			if enc, _ := fieldFolded(m, "encrypted_content").(string); enc == "" {
				return "a reasoning item without its encrypted_content"
			}
		}
	case apiOpenAIChat:
		if audio, ok := fieldFolded(m, "audio").(map[string]any); ok && fieldFolded(audio, "id") != nil {
			return "the audio of an earlier answer by its id"
		}
	}
	return ""
}

// storedFile finds a file named by its file_id anywhere in v, but not in
// the arguments of a tool call (an Anthropic tool_use block's input),
// which are the model's own words.
func storedFile(v any) string {
	switch x := v.(type) {
	case map[string]any:
		typ, _ := fieldFolded(x, "type").(string)
		switch typ {
		case "input_file", "input_image":
			if fieldFolded(x, "file_id") != nil {
				return fmt.Sprintf("an %s by its file_id", typ)
			}
		case "file":
			if fieldFolded(x, "file_id") != nil {
				return "a file source by its file_id"
			}
			if f, ok := fieldFolded(x, "file").(map[string]any); ok && fieldFolded(f, "file_id") != nil {
				return "a file part by its file_id"
			}
		case "container_upload":
			return "a container_upload by its file_id"
		}
		for k, e := range x {
			if isToolCallInput(typ, k) {
				continue
			}
			if what := storedFile(e); what != "" {
				return what
			}
		}
	case []any:
		for _, e := range x {
			if what := storedFile(e); what != "" {
				return what
			}
		}
	}
	return ""
}

// isToolCallInput says whether key k of an object of type typ holds a
// tool call's arguments (an Anthropic tool_use or server_tool_use block's
// input): the model's own words, which the provider neither fetches nor
// reads from storage, so neither walk of content looks inside them.
func isToolCallInput(typ, k string) bool {
	return strings.EqualFold(k, "input") && (typ == "tool_use" || typ == "server_tool_use")
}

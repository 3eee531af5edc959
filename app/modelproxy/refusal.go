package modelproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// modelRefusal says why a model request's body is refused ("" when it is
// not): it must be empty or one JSON object, and its only key naming a
// model must be exactly "model", once, with the session's model or none.
// Decoders disagree where JSON is loose: Go matches keys regardless of
// case with the last one winning, others take the first of two equal
// keys, and providers read the exact key. So {"model":"x","Model":"ok"}
// and {"model":"x","model":"ok"} are both refused.
func modelRefusal(body []byte, allowed string) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	const notObject = "the request body is not one JSON object"
	only := "this session's agent may use only the model " + allowed
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return notObject
	}
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		var value json.RawMessage
		if err != nil || !isKey || dec.Decode(&value) != nil {
			return notObject
		}
		if !strings.EqualFold(key, "model") {
			continue
		}
		var model string
		if seen || key != "model" || json.Unmarshal(value, &model) != nil || model != "" && model != allowed {
			return only
		}
		seen = true
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return notObject // something after the object
	}
	return ""
}

package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
)

// RecordDirEnv names a directory to which every Server writes each
// request it accepts, one JSON file (a Recorded) each, when the variable
// is set. It is how the model proxy's allowlist is re-derived from the
// real agent CLIs (app/modelproxy/testdata/recorded/README.md): run a
// real-agent test with it set, and the requests the pinned CLI made are
// on disk, without changing the test.
const RecordDirEnv = "INSPECT_FAKEMODEL_RECORD_DIR"

// recordedHeaders are the request headers a recording keeps: what says
// which API features a request asks for. Keys (Authorization, X-Api-Key)
// are never written.
var recordedHeaders = []string{"Content-Type", "Accept", "Anthropic-Version", "Anthropic-Beta", "OpenAI-Beta", "Originator", "Version"}

// Recorded is one accepted request as a recording keeps it.
type Recorded struct {
	Method string              `json:"method"`
	Path   string              `json:"path"`
	Query  string              `json:"query,omitempty"`
	Header map[string][]string `json:"header"`
	Body   json.RawMessage     `json:"body"`
}

// recordTo writes rec as the n-th recording of the server on port
// (its port: several servers may record into one dir) in dir.
func recordTo(dir string, port uint16, n int64, rec Request) error {
	out := Recorded{Method: rec.Method, Path: rec.Path, Query: rec.Query, Header: map[string][]string{}, Body: rec.Body}
	for _, k := range recordedHeaders {
		if v := rec.Header.Values(k); len(v) > 0 {
			out.Header[http.CanonicalHeaderKey(k)] = v
		}
	}
	if !json.Valid(out.Body) {
		return fmt.Errorf("request %d: the body is not JSON", n)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("request-%d-%03d.json", port, n)), append(b, '\n'), 0o644)
}

package contract

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden pins the wire form of every document. The files in testdata/
// are also the readable examples of each schema. A change here is a change
// to the contract: bump the document's version (see the package doc), then
// run `go test ./contract -run TestGolden -update`.
func TestGolden(t *testing.T) {
	m := validManifest()
	m.Normalize()
	upload := ResultUpload{Evidence: validEvidence(), Manifest: &m, AgentState: []byte("\x1f\x8b packed")}
	upload.Evidence.AgentState = &AgentStateNote{Restored: "01hx3k9q2m7e4w-0", KeptBytes: 9}
	spec := validSpec()
	spec.AgentState = &AgentStateRef{AttemptID: "01hx3k9q2m7e4w-0"}
	cases := []struct {
		file   string
		value  any
		decode func([]byte) (any, error)
	}{
		{"spec.json", spec, func(b []byte) (any, error) { return DecodeSpec(bytes.NewReader(b)) }},
		{"evidence.json", validEvidence(), func(b []byte) (any, error) { return DecodeEvidence(bytes.NewReader(b)) }},
		{"manifest.json", m, func(b []byte) (any, error) { return DecodeManifest(bytes.NewReader(b), ManifestLimits{}) }},
		{"claim-request.json", ClaimRequest{AttemptID: "01hx3k9q2m7e4w-1", ClaimCode: "c1a1mc0de-3f9a7b2e8d4c6a1f", SpecVersion: SpecVersion, RunnerVersion: "v0.3.0"},
			func(b []byte) (any, error) { return DecodeClaimRequest(bytes.NewReader(b)) }},
		{"progress-event.json", ProgressEvent{Seq: 4, Time: t0, Phase: PhaseVerify, Message: "verify: go test -json ./... (1 of 2)"},
			func(b []byte) (any, error) { return DecodeProgressEvent(bytes.NewReader(b)) }},
		{"result-upload.json", upload, func(b []byte) (any, error) { return DecodeResultUpload(bytes.NewReader(b), ManifestLimits{}) }},
		{"error-response.json", ErrorResponse{Code: ErrorClaimUsed, Message: "this claim code was already used"},
			func(b []byte) (any, error) { return DecodeErrorResponse(bytes.NewReader(b)) }},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			want, err := json.MarshalIndent(tc.value, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the encoding of the Go value; the wire form changed (bump the version, then -update):\n%s", path, want)
			}
			decoded, err := tc.decode(got)
			if err != nil {
				t.Fatalf("%s does not decode: %v", path, err)
			}
			if !reflect.DeepEqual(decoded, tc.value) {
				t.Errorf("%s decodes to\n%+v\nwant\n%+v", path, decoded, tc.value)
			}
		})
	}
}

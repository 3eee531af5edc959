package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// readCapped reads all of r, refusing more than max bytes without reading
// further than max+1.
func readCapped(r io.Reader, document string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", document, err)
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Document: document, Limit: max}
	}
	return data, nil
}

// unmarshalStrict decodes exactly one JSON value into v, refusing unknown
// fields and anything after the value.
func unmarshalStrict(data []byte, document string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding %s: %w", document, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("decoding %s: unexpected data after the JSON value", document)
	}
	return nil
}

// checkVersion reads only the "version" member, so that a document of
// another version is refused as such, before its fields are compared with
// ours.
func checkVersion(data []byte, document, want string) error {
	var head struct {
		Version *string `json:"version"`
	}
	// A Decoder reads the first value only; trailing data is
	// unmarshalStrict's to report.
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&head); err != nil {
		return fmt.Errorf("decoding %s: %w", document, err)
	}
	if head.Version == nil || *head.Version != want {
		got := ""
		if head.Version != nil {
			got = *head.Version
		}
		return &VersionError{Document: document, Got: got, Want: want}
	}
	return nil
}

// decodeDocument is the common path of the Decode functions: cap, version
// (when want is not empty), strict decoding.
func decodeDocument(r io.Reader, document string, max int64, want string, v any) error {
	data, err := readCapped(r, document, max)
	if err != nil {
		return err
	}
	if want != "" {
		if err := checkVersion(data, document, want); err != nil {
			return err
		}
	}
	return unmarshalStrict(data, document, v)
}

// Duration is a time.Duration that travels in JSON as Go's duration string
// ("90s", "15m0s"), which people can read and write in a spec or a golden
// file, instead of a count of nanoseconds.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string; a number is refused, because its
// unit would be a guess. null leaves d unchanged, as encoding/json does.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`a duration must be a string such as "90s" or "15m"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("a duration must be a string such as \"90s\" or \"15m\": %s", safeQuote(s))
	}
	*d = Duration(v)
	return nil
}

package contract

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is one fault in one field of a document. Field is the JSON path
// of the value ("repo.clone_url", "files[3].path"), so that whoever sent the
// document can find it; Fault says what is wrong in words, without echoing
// anything that looks like a secret.
type FieldError struct {
	Field string
	Fault string
}

// Error gives "field: fault".
func (e FieldError) Error() string { return e.Field + ": " + e.Fault }

// ValidationError is every fault found in one document. Validate reports
// them all at once so a caller fixes a document in one round, as the config
// loaders do.
type ValidationError struct {
	// Document names the kind of document ("session spec", "evidence", ...).
	Document string
	Faults   []FieldError
}

// Error lists every fault, separated by "; ".
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Faults))
	for i, f := range e.Faults {
		parts[i] = f.Error()
	}
	return "invalid " + e.Document + ": " + strings.Join(parts, "; ")
}

// Has reports whether some fault names field exactly. Tests and callers that
// react to one particular fault use it instead of matching message text.
func (e *ValidationError) Has(field string) bool {
	for _, f := range e.Faults {
		if f.Field == field {
			return true
		}
	}
	return false
}

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("document too large")

// TooLargeError is a document refused before decoding because it is bigger
// than its cap. Caps bound the memory a peer can make the other side spend.
type TooLargeError struct {
	Document string
	Limit    int64
}

// Error names the document and its cap.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.Document, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// ErrVersion is matched (errors.Is) by every *VersionError.
var ErrVersion = errors.New("unsupported document version")

// VersionError is a document of a version this build does not read. On
// Buildkite the supervisor may be a different build from the app; this error
// says so plainly instead of failing on some unknown field.
type VersionError struct {
	Document string
	Got      string
	Want     string
}

// Error names both versions and what to do about it.
func (e *VersionError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("%s has no version (this build reads %q)", e.Document, e.Want)
	}
	return fmt.Sprintf("%s has version %s, this build reads %q; run the same inspect release on both sides", e.Document, safeQuote(e.Got), e.Want)
}

// Is makes errors.Is(err, ErrVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

// maxFaults caps the faults one ValidationError lists, so that a manifest
// of ten thousand bad paths does not produce a megabyte of error text.
const maxFaults = 100

// faults collects FieldErrors while a document is validated.
type faults struct {
	list    []FieldError
	dropped int
}

func (f *faults) add(field, format string, args ...any) {
	if len(f.list) >= maxFaults {
		f.dropped++
		return
	}
	f.list = append(f.list, FieldError{Field: field, Fault: fmt.Sprintf(format, args...)})
}

// count is the number of faults found so far, listed or not.
func (f *faults) count() int { return len(f.list) + f.dropped }

func (f *faults) err(document string) error {
	if f.count() == 0 {
		return nil
	}
	list := f.list
	if f.dropped > 0 {
		list = append(list, FieldError{Field: "(more)", Fault: fmt.Sprintf("%d more faults not listed", f.dropped)})
	}
	return &ValidationError{Document: document, Faults: list}
}

// at joins a JSON path and a field name.
func at(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

// index appends an index to a JSON path.
func index(prefix string, i int) string { return fmt.Sprintf("%s[%d]", prefix, i) }

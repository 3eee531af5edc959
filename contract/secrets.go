package contract

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// tokenPattern is one known credential format. The same list drives both
// the spec's refusal (SecretKind) and the Redactor, so whatever a Redactor
// has scrubbed passes the spec's check.
type tokenPattern struct {
	kind string
	re   *regexp.Regexp
	// detectOnly marks a pattern that finds a secret's start but not its
	// extent; the Redactor has its own rule for it.
	detectOnly bool
}

// tokenPatterns are credential formats recognised anywhere in text.
//
//   - GitHub tokens: ghp_ (classic personal), gho_ (OAuth), ghu_
//     (user-to-server), ghs_ (installation), ghr_ (refresh). The body class
//     includes '.' and '_' and the length is open-ended, because the new
//     installation tokens are ~520 characters of the form ghs_<id>_<...>
//     with dots. 20 characters is the floor, so a prose mention such as
//     "ghs_ tokens" is not a match.
//   - GitHub fine-grained personal tokens: github_pat_...
//   - Slack tokens: xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-.
//   - "sk-" API keys (OpenAI, Anthropic sk-ant-...), only at a word start so
//     that "task-", "disk-" or "risk-" never match.
//   - PEM private keys of any algorithm (RSA, EC, OPENSSH, ENCRYPTED, PGP).
//     Certificates and public keys are not secrets, and legitimately appear
//     in issues, so a bare "-----BEGIN" is not enough.
var tokenPatterns = []tokenPattern{
	{"a GitHub token", regexp.MustCompile(`gh[pousr]_[A-Za-z0-9_.]{20,}`), false},
	{"a GitHub fine-grained token", regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`), false},
	{"a Slack token", regexp.MustCompile(`xox[abposr]-[A-Za-z0-9-]{10,}`), false},
	{"an API key (sk-…)", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), false},
	{"a private key", regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY`), true},
}

// SecretKind reports which known credential format s contains ("a GitHub
// token", "a private key", ...), or "" when it contains none. It never
// returns any part of s, so its answer is safe to log.
func SecretKind(s string) string {
	for _, p := range tokenPatterns {
		if p.re.MatchString(s) {
			return p.kind
		}
	}
	return ""
}

// FindSecrets reports every string reachable from v (a document, or a
// pointer to one) that contains a known credential format, by JSON path and
// kind, never by value. Spec.Validate refuses a spec with any; tests use it
// to prove that no token reached evidence or a progress event.
func FindSecrets(v any) []FieldError {
	var found []FieldError
	walkStrings(reflect.ValueOf(v), "", func(path string, s reflect.Value) {
		if kind := SecretKind(s.String()); kind != "" {
			found = append(found, FieldError{Field: path, Fault: "looks like " + kind})
		}
	})
	return found
}

// scanSecrets reports every string in v (a struct, pointer, slice or
// string, walked recursively) that contains a known credential format. The
// fault names the field and the kind, never the value.
func scanSecrets(f *faults, prefix string, v reflect.Value) {
	walkStrings(v, prefix, func(path string, s reflect.Value) {
		if kind := SecretKind(s.String()); kind != "" {
			f.add(path, "looks like %s; credentials never travel in this document (redact it before building the document)", kind)
		}
	})
}

// walkStrings calls fn for every string reachable from v through exported
// struct fields, pointers, interfaces, slices and arrays. Paths use JSON
// names. Byte slices are data, not text, and are skipped (a manifest's file
// content is the change itself). Map values are walked through a copy that
// is stored back, so fn may change them as it may change any other string
// (keys are names, never secrets, and are not walked).
func walkStrings(v reflect.Value, path string, fn func(path string, s reflect.Value)) {
	switch v.Kind() {
	case reflect.String:
		fn(path, v)
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), path, fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, ok := jsonName(sf)
			if !ok {
				continue
			}
			walkStrings(v.Field(i), at(path, name), fn)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			val := reflect.New(iter.Value().Type()).Elem()
			val.Set(iter.Value())
			walkStrings(val, at(path, fmt.Sprint(iter.Key().Interface())), fn)
			v.SetMapIndex(iter.Key(), val)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			walkStrings(v.Index(i), index(path, i), fn)
		}
	}
}

// jsonName is a struct field's JSON name, and false for fields JSON skips.
func jsonName(sf reflect.StructField) (string, bool) {
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = sf.Name
	}
	return name, true
}

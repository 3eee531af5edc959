package contract

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Redacted replaces every secret a Redactor finds.
const Redacted = "[REDACTED]"

// MinSecretLen is the shortest exact value a Redactor will look for. Shorter
// values are ignored: redacting every "main" or "12345" in a log would
// destroy the log and give away which short word was the secret. Credentials
// we mint are far longer than this.
const MinSecretLen = 8

// Redactor scrubs secrets from text before it is logged, written to
// evidence, or posted to GitHub. It knows two kinds of secret:
//
//   - exact values it was given (tokens the app minted, a model key, the
//     session token), at least MinSecretLen bytes long; and
//   - built-in formats: GitHub tokens (including the ~520-character
//     installation tokens with dots and underscores), GitHub fine-grained
//     tokens, Slack tokens, "sk-" API keys, PEM private key blocks (to the
//     end of the text when the END line is missing), the value of an
//     Authorization or Proxy-Authorization header, and the password part of
//     a URL's user info (https://x-access-token:SECRET@github.com).
//
// Each is replaced by Redacted. Redaction is idempotent. It works on whole
// texts: a secret split across two calls is not recognised, so redact a
// command's output before cutting its tail, not after.
//
// A Redactor is safe for concurrent use, including Add while others redact.
// The zero value and a nil *Redactor redact the built-in formats only.
type Redactor struct {
	mu    sync.Mutex // serialises Add
	exact atomic.Pointer[exactValues]
}

type exactValues struct {
	values   []string
	replacer *strings.Replacer
}

// NewRedactor returns a Redactor for the built-in formats and the given
// exact values (see Add for which are kept).
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add teaches the Redactor more exact values, for tokens minted after it was
// made (the repo token arrives after the claim). Values shorter than
// MinSecretLen, and values that occur inside Redacted itself, are ignored.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var values []string
	if cur := r.exact.Load(); cur != nil {
		values = slices.Clone(cur.values)
	}
	added := false
	for _, s := range secrets {
		if len(s) < MinSecretLen || strings.Contains(Redacted, s) || slices.Contains(values, s) {
			continue
		}
		values = append(values, s)
		added = true
	}
	if !added {
		return
	}
	// Longest first, so a secret that contains another is replaced whole
	// (strings.Replacer tries the old strings in argument order).
	slices.SortFunc(values, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, Redacted)
	}
	r.exact.Store(&exactValues{values: values, replacer: strings.NewReplacer(pairs...)})
}

// Redact returns s with every secret replaced by Redacted.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	if r != nil {
		if ex := r.exact.Load(); ex != nil {
			s = ex.replacer.Replace(s)
		}
	}
	for _, rule := range redactRules {
		s = rule.apply(s)
	}
	return s
}

// RedactBytes is Redact for a byte slice. It returns a new slice and leaves b
// unchanged; nil stays nil.
func (r *Redactor) RedactBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return []byte(r.Redact(string(b)))
}

// RedactStrings redacts, in place, every string reachable from ptr (a
// pointer to a struct such as *Evidence or *ProgressEvent) through exported
// fields, pointers and slices. Byte slices are left alone: a manifest's file
// content is the change itself, and policy, not redaction, decides about a
// change that contains a token.
func (r *Redactor) RedactStrings(ptr any) {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	walkStrings(v, "", func(_ string, s reflect.Value) {
		if s.CanSet() {
			s.SetString(r.Redact(s.String()))
		}
	})
}

// redactRule replaces one capture group (0: the whole match) of each match.
type redactRule struct {
	re    *regexp.Regexp
	group int
}

func (rule redactRule) apply(s string) string {
	locs := rule.re.FindAllStringSubmatchIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		start, end := loc[2*rule.group], loc[2*rule.group+1]
		if start < 0 || start < last || alreadyRedacted(s, start, end) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Redacted)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// alreadyRedacted keeps redaction idempotent: a value that is the marker, or
// the marker's inside, is left as it is.
func alreadyRedacted(s string, start, end int) bool {
	if s[start:end] == Redacted {
		return true
	}
	return start > 0 && end < len(s) && s[start-1:end+1] == Redacted
}

// redactRules run in order after the exact values. PEM blocks go first so a
// key is replaced as one block.
var redactRules = func() []redactRule {
	rules := []redactRule{
		// A PEM private key, to its END line, or to the end of the text
		// when the END line is missing (a truncated log).
		{re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\z)`)},
	}
	for _, p := range tokenPatterns {
		if !p.detectOnly {
			rules = append(rules, redactRule{re: p.re})
		}
	}
	return append(rules,
		// git's credential-in-URL form, even without a scheme.
		redactRule{re: regexp.MustCompile(`x-access-token:([^\s/@]+)@`), group: 1},
		// The password of any URL's user info.
		redactRule{re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s/:@]*:([^\s/@]+)@`), group: 1},
		// An Authorization header's value, in header, JSON, or Go's
		// printed http.Header (map[Authorization:[Bearer x]]) form. A
		// scheme word (Bearer, token, Basic, ...) is kept.
		// The marker is the first alternative, so a value redacted before
		// is matched whole (and left alone) rather than as "[REDACTED".
		redactRule{re: regexp.MustCompile(`(?i)\b(?:proxy-)?authorization["']?[ \t]*[:=][ \t]*["']?\[?(?:(?:bearer|token|basic|digest|bot|negotiate)[ \t]+)?(\[REDACTED\]|[^\s"',;\]]+)`), group: 1},
	)
}()

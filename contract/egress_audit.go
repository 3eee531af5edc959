package contract

import (
	"reflect"
	"slices"
	"strings"

	"github.com/inspecthq/inspect/policy"
)

// Caps on the egress audit. Records and Refused bound what one attempt's
// evidence can carry however chatty its package managers are; the counts
// stay exact.
const (
	// MaxEgressRecords caps EgressAudit.Records; past it, Totals stand in.
	MaxEgressRecords = 500
	// MaxEgressRefusals caps EgressAudit.Refused. Refusals are kept
	// whatever Records holds; past this many, RefusedDropped counts the
	// rest.
	MaxEgressRefusals = 1000
	// MaxEgressTotals caps EgressAudit.Totals (one per upstream and kind);
	// past it, the rest fold into one total with no upstream.
	MaxEgressTotals = 64
	// MaxEgressPathBytes caps EgressRecord.Path.
	MaxEgressPathBytes = 512
	// MaxEgressWhyBytes caps EgressRecord.Why.
	MaxEgressWhyBytes = 512
	// MaxEgressAuditBytes bounds an EgressAudit encoded as JSON, its
	// full lists at their longest texts, each byte escaped to at most six:
	// what a message carrying one (SnapshotResult) must make room for.
	MaxEgressAuditBytes = (MaxEgressRecords+MaxEgressRefusals)*maxEgressRecordBytes + MaxEgressTotals*maxEgressTotalBytes + 1<<10

	// maxEgressRecordBytes bounds one EgressRecord's JSON: its texts
	// escaped, and room for its names, numbers and punctuation.
	maxEgressRecordBytes = 6*(MaxEgressPathBytes+MaxEgressWhyBytes+2*MaxNameBytes) + 256
	// maxEgressTotalBytes bounds one EgressTotal's JSON.
	maxEgressTotalBytes = 6*MaxNameBytes + 128
)

// EgressKind says what an egress request was.
type EgressKind string

// Egress kinds.
const (
	// EgressModel: relayed to a model provider (/v1/providers/{name}/...).
	EgressModel EgressKind = "model"
	// EgressRegistry: relayed to a package registry
	// (/v1/registries/{name}/...).
	EgressRegistry EgressKind = "registry"
	// EgressRefused: turned away by the supervisor with a 403; it never
	// reached the app or an upstream.
	EgressRefused EgressKind = "refused"
)

// EgressAudit records the sandbox's egress requests in one attempt (issue
// 15, decision 0018): every request the supervisor relayed, up to
// MaxEgressRecords, with Totals standing in for the rest, and every
// refusal, up to MaxEgressRefusals, with RefusedDropped counting any
// beyond. Model, Registry and RefusedCount count everything, whatever the
// lists kept. The supervisor builds it with Add; nil in the evidence when
// the sandbox sent nothing.
type EgressAudit struct {
	// Model counts every model request relayed, and its response bytes.
	Model EgressCount `json:"model"`
	// Registry counts every registry request relayed.
	Registry EgressCount `json:"registry"`
	// RefusedCount counts every refusal, quiet ones included.
	RefusedCount int `json:"refused_count"`
	// Records are the relayed requests (kind model or registry), in the
	// order they ended, up to MaxEgressRecords.
	Records []EgressRecord `json:"records,omitempty"`
	// Totals are per upstream and kind, for the relayed requests past
	// MaxEgressRecords: those, and only those, are not in Records.
	Totals []EgressTotal `json:"totals,omitempty"`
	// Refused are the refusals (kind refused), in order, up to
	// MaxEgressRefusals: kept whether or not Records is full.
	Refused []EgressRecord `json:"refused,omitempty"`
	// RefusedDropped counts refusals past MaxEgressRefusals, not listed.
	RefusedDropped int `json:"refused_dropped,omitempty"`
}

// EgressCount is a number of requests and the response bytes relayed for
// them.
type EgressCount struct {
	Requests int   `json:"requests"`
	Bytes    int64 `json:"bytes"`
}

// EgressTotal counts the relayed requests of one kind to one upstream that
// Records had no room for. Upstream "" is every upstream past
// MaxEgressTotals.
type EgressTotal struct {
	Kind     EgressKind `json:"kind"`
	Upstream string     `json:"upstream,omitempty"`
	EgressCount
}

// EgressRecord is one egress request.
type EgressRecord struct {
	Kind EgressKind `json:"kind"`
	// Phase is the phase the supervisor was in as the request arrived.
	Phase Phase `json:"phase"`
	// Upstream is the server-side name the request named: the provider or
	// the registry. For a refusal, "" when it named none (CONNECT, an
	// absolute-form request, another path) or no valid name.
	Upstream string `json:"upstream,omitempty"`
	Method   string `json:"method"`
	// Path is below the upstream's name, escaped as it arrived, without
	// the query; for a refusal that named no upstream, the whole request
	// target. Redacted, then cut to MaxEgressPathBytes (CleanEgressText).
	// Untrusted: the sandbox chose it.
	Path string `json:"path"`
	// Status is the HTTP status the sandbox got (403 for a refusal, 502
	// when the app could not be reached).
	Status int `json:"status"`
	// Bytes is the response body bytes relayed to the sandbox (0 for a
	// refusal: its 403 is the supervisor's own).
	Bytes int64 `json:"bytes"`
	// Millis is from the request's arrival to its response's end.
	Millis int64 `json:"millis"`
	// Why says why a refusal was refused (refusals only).
	Why string `json:"why,omitempty"`
	// Quiet marks a refusal of a client's own audit call (npm audit),
	// refused without a warning (decision 0018): listed and counted, not
	// shown among the refusals on GitHub.
	Quiet bool `json:"quiet,omitempty"`
}

// CleanEgressText makes an untrusted request detail fit for a record:
// valid UTF-8, no NUL, control or invisible character (each becomes
// U+FFFD), at most max bytes cut on a character boundary. Redact before
// cleaning: a token cut in half is no longer recognised.
func CleanEgressText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r == 0 || policy.IsHiddenInLine(r) {
			return '\uFFFD'
		}
		return r
	}, s)
	return policy.TruncateUTF8(s, max)
}

// Add records r: a refusal into Refused (or RefusedDropped), a relayed
// request into Records, or into Totals once Records is full; the counts
// always. Path and Why are cleaned (CleanEgressText); redact them first.
// Add is not safe for concurrent use.
func (a *EgressAudit) Add(r EgressRecord) {
	r.Path = CleanEgressText(r.Path, MaxEgressPathBytes)
	r.Why = CleanEgressText(r.Why, MaxEgressWhyBytes)
	r.Method = CleanEgressText(r.Method, MaxNameBytes)
	if ValidProviderName(r.Upstream) != nil {
		r.Upstream = ""
	}
	r.Bytes, r.Millis = max(r.Bytes, 0), max(r.Millis, 0)
	if r.Kind == EgressRefused {
		a.RefusedCount++
		if len(a.Refused) < MaxEgressRefusals {
			a.Refused = append(a.Refused, r)
		} else {
			a.RefusedDropped++
		}
		return
	}
	c := &a.Registry
	if r.Kind == EgressModel {
		c = &a.Model
	}
	c.Requests++
	c.Bytes += r.Bytes
	if len(a.Records) < MaxEgressRecords {
		a.Records = append(a.Records, r)
		return
	}
	up := r.Upstream
	i := slices.IndexFunc(a.Totals, func(t EgressTotal) bool { return t.Kind == r.Kind && t.Upstream == up })
	if i < 0 && len(a.Totals) >= MaxEgressTotals-1 {
		up = "" // the last slot is everyone else's
		i = slices.IndexFunc(a.Totals, func(t EgressTotal) bool { return t.Kind == r.Kind && t.Upstream == "" })
	}
	if i < 0 {
		a.Totals = append(a.Totals, EgressTotal{Kind: r.Kind, Upstream: up})
		i = len(a.Totals) - 1
	}
	a.Totals[i].Requests++
	a.Totals[i].Bytes += r.Bytes
}

// Empty reports whether nothing was recorded.
func (a *EgressAudit) Empty() bool {
	return a == nil || a.Model.Requests == 0 && a.Registry.Requests == 0 && a.RefusedCount == 0
}

// Clone is a deep copy of a.
func (a *EgressAudit) Clone() *EgressAudit {
	if a == nil {
		return nil
	}
	c := *a
	c.Records = slices.Clone(a.Records)
	c.Totals = slices.Clone(a.Totals)
	c.Refused = slices.Clone(a.Refused)
	return &c
}

func (a *EgressAudit) validate(f *faults, prefix string) {
	if len(a.Records) > MaxEgressRecords {
		f.add(at(prefix, "records"), "has %d records, more than the %d allowed (totals stand in for the rest)", len(a.Records), MaxEgressRecords)
	}
	if len(a.Refused) > MaxEgressRefusals {
		f.add(at(prefix, "refused"), "has %d refusals, more than the %d allowed (refused_dropped counts the rest)", len(a.Refused), MaxEgressRefusals)
	}
	if len(a.Totals) > MaxEgressTotals {
		f.add(at(prefix, "totals"), "has %d totals, more than the %d allowed", len(a.Totals), MaxEgressTotals)
	}
	if len(a.Totals) > 0 && len(a.Records) < MaxEgressRecords {
		f.add(at(prefix, "totals"), "stand in for records past the %d kept, but only %d are", MaxEgressRecords, len(a.Records))
	}
	if a.RefusedDropped > 0 && len(a.Refused) < MaxEgressRefusals {
		f.add(at(prefix, "refused_dropped"), "counts refusals past the %d kept, but only %d are", MaxEgressRefusals, len(a.Refused))
	}
	var sums [2]EgressCount // model, registry
	kindIndex := func(k EgressKind) int {
		if k == EgressModel {
			return 0
		}
		return 1
	}
	for i, r := range a.Records {
		p := index(at(prefix, "records"), i)
		if r.Kind != EgressModel && r.Kind != EgressRegistry {
			f.add(at(p, "kind"), "must be model or registry, not %s", safeQuote(string(r.Kind)))
		}
		if err := ValidProviderName(r.Upstream); err != nil {
			f.add(at(p, "upstream"), "%v", err)
		}
		if r.Why != "" || r.Quiet {
			f.add(p, "only a refusal has a why or is quiet")
		}
		r.validate(f, p)
		s := &sums[kindIndex(r.Kind)]
		s.Requests++
		s.Bytes += r.Bytes
	}
	seen := map[EgressTotal]bool{}
	for i, t := range a.Totals {
		p := index(at(prefix, "totals"), i)
		if t.Kind != EgressModel && t.Kind != EgressRegistry {
			f.add(at(p, "kind"), "must be model or registry, not %s", safeQuote(string(t.Kind)))
		}
		if t.Upstream != "" {
			if err := ValidProviderName(t.Upstream); err != nil {
				f.add(at(p, "upstream"), "%v", err)
			}
		}
		if k := (EgressTotal{Kind: t.Kind, Upstream: t.Upstream}); seen[k] {
			f.add(p, "is listed twice")
		} else {
			seen[k] = true
		}
		if t.Requests < 1 || t.Bytes < 0 {
			f.add(p, "must count at least one request and no negative bytes")
		}
		s := &sums[kindIndex(t.Kind)]
		s.Requests += t.Requests
		s.Bytes += t.Bytes
	}
	for i, r := range a.Refused {
		p := index(at(prefix, "refused"), i)
		if r.Kind != EgressRefused {
			f.add(at(p, "kind"), "must be refused, not %s", safeQuote(string(r.Kind)))
		}
		if r.Upstream != "" {
			if err := ValidProviderName(r.Upstream); err != nil {
				f.add(at(p, "upstream"), "%v", err)
			}
		}
		checkLine(f, at(p, "why"), r.Why, MaxEgressWhyBytes, false)
		r.validate(f, p)
	}
	for _, c := range []struct {
		field string
		got   EgressCount
		want  EgressCount
	}{{"model", a.Model, sums[0]}, {"registry", a.Registry, sums[1]}} {
		if c.got != c.want {
			f.add(at(prefix, c.field), "counts %d requests and %d bytes, but the records and totals hold %d and %d", c.got.Requests, c.got.Bytes, c.want.Requests, c.want.Bytes)
		}
	}
	if a.RefusedDropped < 0 || a.RefusedCount != len(a.Refused)+a.RefusedDropped {
		f.add(at(prefix, "refused_count"), "is %d, but %d refusals are listed and %d dropped", a.RefusedCount, len(a.Refused), a.RefusedDropped)
	}
	// The paths are the sandbox's: redacted before they were recorded,
	// and checked here all the same.
	scanSecrets(f, prefix, reflect.ValueOf(a).Elem())
}

func (r EgressRecord) validate(f *faults, prefix string) {
	if !slices.Contains(phases, r.Phase) {
		f.add(at(prefix, "phase"), "must be a phase, not %s", safeQuote(string(r.Phase)))
	}
	checkLine(f, at(prefix, "method"), r.Method, MaxNameBytes, true)
	checkLine(f, at(prefix, "path"), r.Path, MaxEgressPathBytes, false)
	if r.Status < 100 || r.Status > 599 {
		f.add(at(prefix, "status"), "must be an HTTP status (100 to 599)")
	}
	if r.Bytes < 0 {
		f.add(at(prefix, "bytes"), "must not be negative")
	}
	if r.Millis < 0 {
		f.add(at(prefix, "millis"), "must not be negative")
	}
}

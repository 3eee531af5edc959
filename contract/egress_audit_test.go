package contract

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func registryGET(upstream string, bytes int64) EgressRecord {
	return EgressRecord{Kind: EgressRegistry, Phase: PhaseSetup, Upstream: upstream, Method: "GET", Path: "x/@v/list", Status: 200, Bytes: bytes, Millis: 30}
}

func refusal(path string) EgressRecord {
	return EgressRecord{Kind: EgressRefused, Phase: PhaseSetup, Upstream: "npmjs", Method: "PUT", Path: path, Status: 403, Why: "only GET and HEAD"}
}

// Records past the cap fold into per-upstream totals, the counts stay
// exact, and refusals are kept whether or not the records are full.
func TestEgressAuditBounding(t *testing.T) {
	for _, tc := range []struct {
		name            string
		add             func(a *EgressAudit)
		records         int
		totals          []EgressTotal
		refused         int
		refusedDropped  int
		model, registry EgressCount
	}{
		{"under the cap", func(a *EgressAudit) {
			for range 3 {
				a.Add(registryGET("gomods", 10))
			}
			a.Add(EgressRecord{Kind: EgressModel, Phase: PhaseAgent, Upstream: "openai", Method: "POST", Path: "responses", Status: 200, Bytes: 7})
		}, 4, nil, 0, 0, EgressCount{1, 7}, EgressCount{3, 30}},
		{"exactly the cap", func(a *EgressAudit) {
			for range MaxEgressRecords {
				a.Add(registryGET("gomods", 1))
			}
		}, MaxEgressRecords, nil, 0, 0, EgressCount{}, EgressCount{MaxEgressRecords, MaxEgressRecords}},
		{"past the cap, per upstream and kind", func(a *EgressAudit) {
			for range MaxEgressRecords {
				a.Add(registryGET("gomods", 1))
			}
			a.Add(registryGET("gomods", 100))
			a.Add(registryGET("npmjs", 200))
			a.Add(registryGET("gomods", 100))
			a.Add(EgressRecord{Kind: EgressModel, Phase: PhaseAgent, Upstream: "gomods", Method: "POST", Path: "responses", Status: 200, Bytes: 5})
		}, MaxEgressRecords, []EgressTotal{
			{Kind: EgressRegistry, Upstream: "gomods", EgressCount: EgressCount{2, 200}},
			{Kind: EgressRegistry, Upstream: "npmjs", EgressCount: EgressCount{1, 200}},
			{Kind: EgressModel, Upstream: "gomods", EgressCount: EgressCount{1, 5}},
		}, 0, 0, EgressCount{1, 5}, EgressCount{MaxEgressRecords + 3, MaxEgressRecords + 400}},
		{"refusals kept past the records' cap", func(a *EgressAudit) {
			for range MaxEgressRecords + 10 {
				a.Add(registryGET("gomods", 1))
			}
			a.Add(refusal("left-pad"))
			a.Add(refusal("right-pad"))
		}, MaxEgressRecords, []EgressTotal{{Kind: EgressRegistry, Upstream: "gomods", EgressCount: EgressCount{10, 10}}},
			2, 0, EgressCount{}, EgressCount{MaxEgressRecords + 10, MaxEgressRecords + 10}},
		{"refusals past their own cap are counted", func(a *EgressAudit) {
			for i := range MaxEgressRefusals + 7 {
				a.Add(refusal(fmt.Sprint("p", i)))
			}
		}, 0, nil, MaxEgressRefusals, 7, EgressCount{}, EgressCount{}},
		{"too many upstreams fold into one total", func(a *EgressAudit) {
			for range MaxEgressRecords {
				a.Add(registryGET("gomods", 1))
			}
			for i := range MaxEgressTotals + 5 {
				a.Add(registryGET(fmt.Sprint("r", i), 1))
			}
		}, MaxEgressRecords, func() []EgressTotal {
			var ts []EgressTotal
			for i := range MaxEgressTotals - 1 {
				ts = append(ts, EgressTotal{Kind: EgressRegistry, Upstream: fmt.Sprint("r", i), EgressCount: EgressCount{1, 1}})
			}
			return append(ts, EgressTotal{Kind: EgressRegistry, EgressCount: EgressCount{6, 6}})
		}(), 0, 0, EgressCount{}, EgressCount{MaxEgressRecords + MaxEgressTotals + 5, MaxEgressRecords + MaxEgressTotals + 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a EgressAudit
			tc.add(&a)
			if len(a.Records) != tc.records {
				t.Errorf("%d records, want %d", len(a.Records), tc.records)
			}
			if fmt.Sprint(a.Totals) != fmt.Sprint(tc.totals) {
				t.Errorf("totals = %+v\nwant %+v", a.Totals, tc.totals)
			}
			if len(a.Refused) != tc.refused || a.RefusedDropped != tc.refusedDropped || a.RefusedCount != tc.refused+tc.refusedDropped {
				t.Errorf("refused %d, dropped %d, count %d; want %d, %d", len(a.Refused), a.RefusedDropped, a.RefusedCount, tc.refused, tc.refusedDropped)
			}
			if a.Model != tc.model || a.Registry != tc.registry {
				t.Errorf("model %+v registry %+v, want %+v %+v", a.Model, a.Registry, tc.model, tc.registry)
			}
			e := validEvidence()
			e.Egress = &a
			if err := e.Validate(); err != nil {
				t.Errorf("the audit Add built does not validate: %v", err)
			}
		})
	}
}

// Add makes an untrusted path fit: cut on a character boundary, with no
// control or invisible characters, and an invalid upstream name dropped.
func TestEgressAuditAddCleans(t *testing.T) {
	var a EgressAudit
	long := strings.Repeat("é", MaxEgressPathBytes) // two bytes each
	a.Add(EgressRecord{Kind: EgressRefused, Phase: PhaseSetup, Upstream: "Else/where", Method: "GET\n", Path: "a\nb\u202e\x00\xff" + long, Status: 403, Why: "x\ty", Bytes: -1})
	r := a.Refused[0]
	if len(r.Path) > MaxEgressPathBytes || !utf8.ValidString(r.Path) || !strings.HasPrefix(r.Path, "a\uFFFDb\uFFFD\uFFFD\uFFFDé") {
		t.Errorf("path %q", r.Path)
	}
	if r.Upstream != "" || r.Method != "GET\uFFFD" || r.Why != "x\uFFFDy" || r.Bytes != 0 {
		t.Errorf("record %+v", r)
	}
	e := validEvidence()
	e.Egress = &a
	if err := e.Validate(); err != nil {
		t.Errorf("cleaned refusal does not validate: %v", err)
	}
}

func TestEgressAuditValidate(t *testing.T) {
	full := func() *EgressAudit {
		var a EgressAudit
		for range MaxEgressRecords + 1 {
			a.Add(registryGET("gomods", 1))
		}
		return &a
	}
	for _, tc := range []struct {
		name   string
		mutate func(a *EgressAudit) *EgressAudit
		faults []string
	}{
		{"valid", func(a *EgressAudit) *EgressAudit { return a }, nil},
		{"valid past the cap", func(*EgressAudit) *EgressAudit { return full() }, nil},
		{"too many records", func(*EgressAudit) *EgressAudit {
			a := full()
			a.Records = append(a.Records, registryGET("gomods", 1))
			a.Totals = nil
			return a
		}, []string{"egress.records"}},
		{"totals with room in the records", func(a *EgressAudit) *EgressAudit {
			a.Totals = []EgressTotal{{Kind: EgressRegistry, Upstream: "gomods", EgressCount: EgressCount{1, 1}}}
			a.Registry.Requests++
			a.Registry.Bytes++
			return a
		}, []string{"egress.totals"}},
		{"counts off", func(a *EgressAudit) *EgressAudit { a.Registry.Requests = 9; return a }, []string{"egress.registry"}},
		{"refused count off", func(a *EgressAudit) *EgressAudit { a.RefusedCount = 0; return a }, []string{"egress.refused_count"}},
		{"dropped with room", func(a *EgressAudit) *EgressAudit { a.RefusedDropped = 1; a.RefusedCount = 2; return a }, []string{"egress.refused_dropped"}},
		{"a refusal among the records", func(a *EgressAudit) *EgressAudit {
			a.Records[0].Kind = EgressRefused
			a.Records[0].Why = "no"
			return a
		}, []string{"egress.records[0].kind", "egress.records[0]"}},
		{"a relayed request among the refusals", func(a *EgressAudit) *EgressAudit { a.Refused[0].Kind = EgressModel; return a }, []string{"egress.refused[0].kind"}},
		{"record upstream", func(a *EgressAudit) *EgressAudit { a.Records[0].Upstream = ""; return a }, []string{"egress.records[0].upstream"}},
		{"record phase", func(a *EgressAudit) *EgressAudit { a.Records[0].Phase = "later"; return a }, []string{"egress.records[0].phase"}},
		{"record path newline", func(a *EgressAudit) *EgressAudit { a.Records[0].Path = "a\nb"; return a }, []string{"egress.records[0].path"}},
		{"record path too long", func(a *EgressAudit) *EgressAudit {
			a.Records[0].Path = strings.Repeat("p", MaxEgressPathBytes+1)
			return a
		}, []string{"egress.records[0].path"}},
		{"record method", func(a *EgressAudit) *EgressAudit { a.Records[0].Method = ""; return a }, []string{"egress.records[0].method"}},
		{"record status", func(a *EgressAudit) *EgressAudit { a.Records[0].Status = 0; return a }, []string{"egress.records[0].status"}},
		{"record bytes", func(a *EgressAudit) *EgressAudit {
			a.Records[0].Bytes = -16
			a.Registry.Bytes -= 32
			return a
		}, []string{"egress.records[0].bytes"}},
		{"a token in a path", func(a *EgressAudit) *EgressAudit {
			a.Refused[0].Path = "x/ghs_" + strings.Repeat("A", 36)
			return a
		}, []string{"egress.refused[0].path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := validEvidence()
			e.Egress = tc.mutate(e.Egress)
			wantFaults(t, e.Validate(), tc.faults...)
		})
	}
}

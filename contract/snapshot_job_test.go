package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func validSnapshotJob() SnapshotJob {
	return SnapshotJob{
		Version: SnapshotJobVersion, AttemptID: "01hx3k9q2m7e4w-s",
		Repo:     Repo{Owner: "octo-org", Name: "hello.world", ID: 1296269, CloneURL: "https://github.com/octo-org/hello.world.git", DefaultBranch: "main"},
		SHA:      strings.Repeat("a", 40),
		Store:    "registry.example.com/inspect",
		Setup:    []Command{{Name: "snapshot deps", Argv: []string{"go", "mod", "download"}, Timeout: Duration(time.Minute)}},
		Caches:   []Cache{{Path: "/cache/go", Lockfiles: []string{"go.sum"}}},
		Env:      map[string]string{"GOFLAGS": "-trimpath"},
		Deadline: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func TestSnapshotJobValidateAndDecode(t *testing.T) {
	j := validSnapshotJob()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSnapshotJob(bytes.NewReader(b))
	if err != nil || got.SHA != j.SHA || got.Caches[0].Path != "/cache/go" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for name, c := range map[string]struct {
		mutate func(*SnapshotJob)
		field  string
	}{
		"other version":    {func(j *SnapshotJob) { j.Version = "inspect.snapshot-job/v0" }, "version"},
		"no store":         {func(j *SnapshotJob) { j.Store = "" }, "store"},
		"short sha":        {func(j *SnapshotJob) { j.SHA = "abc" }, "sha"},
		"cache in .git":    {func(j *SnapshotJob) { j.Caches[0].Path = "/workspace/.git" }, "caches[0].path"},
		"token in the env": {func(j *SnapshotJob) { j.Env["T"] = "ghp_" + strings.Repeat("a", 36) }, "env.T"},
		"no deadline":      {func(j *SnapshotJob) { j.Deadline = time.Time{} }, "deadline"},
	} {
		t.Run(name, func(t *testing.T) {
			j := validSnapshotJob()
			c.mutate(&j)
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), c.field) {
				t.Errorf("error %v does not name %s", err, c.field)
			}
		})
	}
	// Unknown fields are refused, as in every document.
	if _, err := DecodeSnapshotJob(strings.NewReader(strings.Replace(string(b), `"sha"`, `"token":"x","sha"`, 1))); err == nil {
		t.Error("an unknown field was accepted")
	}
}

func TestSnapshotResultAndClaimKind(t *testing.T) {
	for name, c := range map[string]struct {
		body string
		ok   bool
	}{
		"digest":            {`{"digest":"sha256:` + strings.Repeat("b", 64) + `","sha":"` + strings.Repeat("a", 40) + `"}`, true},
		"error":             {`{"error":"setup failed"}`, true},
		"neither":           {`{}`, false},
		"bad digest":        {`{"digest":"latest","sha":"` + strings.Repeat("a", 40) + `"}`, false},
		"digest, no sha":    {`{"digest":"sha256:` + strings.Repeat("b", 64) + `"}`, false},
		"unknown field":     {`{"error":"x","extra":1}`, false},
		"footprint and log": {`{"digest":"sha256:` + strings.Repeat("b", 64) + `","sha":"` + strings.Repeat("a", 40) + `","size":1048576,"layers":3,"log":"--- deps\nok\n"}`, true},
		"a failure's log":   {`{"error":"setup failed","log":"--- deps: x exited 1 after 1s\n"}`, true},
		"size, no digest":   {`{"error":"setup failed","size":10,"layers":1}`, false},
		"negative size":     {`{"digest":"sha256:` + strings.Repeat("b", 64) + `","sha":"` + strings.Repeat("a", 40) + `","size":-1}`, false},
		"NUL in the log":    {`{"error":"x","log":"a\u0000b"}`, false},
		"a log too long":    {`{"error":"x","log":"` + strings.Repeat("y", MaxSnapshotLogBytes+1) + `"}`, false},
		"the longest log":   {`{"error":"x","log":"` + strings.Repeat(`\u0001`, MaxSnapshotLogBytes) + `"}`, true},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeSnapshotResult(strings.NewReader(c.body))
			if (err == nil) != c.ok {
				t.Errorf("err = %v, want ok=%v", err, c.ok)
			}
		})
	}
	resp := ClaimResponse{SessionToken: strings.Repeat("t", 32), ExpiresAt: time.Now(), Kind: "cron"}
	if err := resp.Validate(); err == nil {
		t.Error("an unknown attempt kind was accepted")
	}
	resp.Kind = KindSnapshot
	if err := resp.Validate(); err != nil {
		t.Error(err)
	}
}

// A build's log names each setup command and how it ended before its
// output, says where a command's output was cut, and keeps the end of
// the whole when it is too long, on a character boundary.
func TestSnapshotLog(t *testing.T) {
	if got := SnapshotLog(nil); got != "" {
		t.Errorf("no command: %q", got)
	}
	log := SnapshotLog([]CommandResult{
		{Name: "deps", Argv: []string{"go", "mod", "download"}, DurationMS: 2500, OutputTail: "fetched\n"},
		{Name: "build", Argv: []string{"make"}, ExitCode: -1, Signal: "SIGKILL", DurationMS: 60000, OutputTail: "partial", OutputTruncated: true},
		{Name: "slow", Argv: []string{"sleep", "9"}, TimedOut: true, DurationMS: 1000},
	})
	want := "--- deps: go mod download exited with status 0 after 2.5s\nfetched\n" +
		"--- build: make was killed by SIGKILL after 1m0s\n[… earlier output cut]\npartial\n" +
		"--- slow: sleep 9 timed out after 1s\n"
	if log != want {
		t.Errorf("log =\n%s\nwant\n%s", log, want)
	}
	long := SnapshotLog([]CommandResult{{Name: "noisy", Argv: []string{"yes"}, OutputTail: strings.Repeat("é", MaxSnapshotLogBytes) + "\nlast line\n"}})
	if len(long) > MaxSnapshotLogBytes || !strings.HasSuffix(long, "last line\n") || !utf8.ValidString(long) || strings.HasPrefix(long, "---") {
		t.Errorf("a long log: %d bytes, ends %q, valid %v", len(long), long[len(long)-12:], utf8.ValidString(long))
	}
}

// A snapshot result carries its setup's egress audit, as the evidence
// does: it travels whole, is checked as the evidence's is, holds only the
// setup phase, and the fullest audit at its longest texts fits the
// result's cap.
func TestSnapshotResultEgress(t *testing.T) {
	ok := func() *EgressAudit {
		var a EgressAudit
		a.Add(registryGET("goproxy", 2048))
		a.Add(refusal("fake.test/beta/@v/list"))
		return &a
	}
	digest := SnapshotResult{Digest: "sha256:" + strings.Repeat("b", 64), SHA: strings.Repeat("a", 40)}
	for _, tc := range []struct {
		name  string
		res   SnapshotResult
		field string // "" when valid
	}{
		{"a built snapshot's", SnapshotResult{Digest: digest.Digest, SHA: digest.SHA, Egress: ok()}, ""},
		{"a failed build's", SnapshotResult{Error: "setup failed", Egress: ok()}, ""},
		{"counts off", SnapshotResult{Error: "x", Egress: func() *EgressAudit { a := ok(); a.Registry.Requests = 5; return a }()}, "egress.registry"},
		{"a record of the agent's", SnapshotResult{Error: "x", Egress: func() *EgressAudit { a := ok(); a.Records[0].Phase = PhaseAgent; return a }()}, "egress.records[0].phase"},
		{"a refusal of verify's", SnapshotResult{Error: "x", Egress: func() *EgressAudit { a := ok(); a.Refused[0].Phase = PhaseVerify; return a }()}, "egress.refused[0].phase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := json.Marshal(tc.res)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeSnapshotResult(bytes.NewReader(body))
			if tc.field != "" {
				if err == nil || !strings.Contains(err.Error(), tc.field) {
					t.Fatalf("err = %v, want a fault at %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Egress == nil || got.Egress.Registry != tc.res.Egress.Registry || len(got.Egress.Refused) != 1 || got.Egress.Refused[0].Why != "only GET and HEAD" {
				t.Errorf("decoded egress %+v, want %+v", got.Egress, tc.res.Egress)
			}
		})
	}

	// The fullest audit, every text at its longest and escaped six to a
	// byte, with the longest log.
	var full EgressAudit
	path, why := strings.Repeat("\x01", MaxEgressPathBytes), strings.Repeat("\x01", MaxEgressWhyBytes)
	for range MaxEgressRecords {
		full.Add(EgressRecord{Kind: EgressRegistry, Phase: PhaseSetup, Upstream: "goproxy", Method: "GET", Path: path, Status: 200, Bytes: 1 << 40, Millis: 1 << 40})
	}
	for i := range MaxEgressTotals + 2 {
		full.Add(EgressRecord{Kind: EgressRegistry, Phase: PhaseSetup, Upstream: fmt.Sprintf("registry-%d", i), Method: "GET", Path: "x", Status: 200, Bytes: 1 << 40})
	}
	for range MaxEgressRefusals {
		full.Add(EgressRecord{Kind: EgressRefused, Phase: PhaseSetup, Upstream: "goproxy", Method: "PROPFIND", Path: path, Status: 403, Why: why, Millis: 1 << 40})
	}
	// CleanEgressText made each \x01 a U+FFFD: the longest text is the
	// control character escaped, so put it back, as a sandbox could not
	// but the cap must still hold for.
	for _, l := range [][]EgressRecord{full.Records, full.Refused} {
		for i := range l {
			l[i].Path = path
			if l[i].Why != "" {
				l[i].Why = why
			}
		}
	}
	res := SnapshotResult{Error: strings.Repeat("\x01", 4<<10), Log: strings.Repeat("\x01", MaxSnapshotLogBytes), Egress: &full}
	body, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > MaxSnapshotResultBytes {
		t.Fatalf("the fullest result is %d bytes, over the cap of %d", len(body), MaxSnapshotResultBytes)
	}
}

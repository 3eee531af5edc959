package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEvidenceValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Evidence)
		faults []string
	}{
		{"valid", func(*Evidence) {}, nil},
		{"valid minimal (partial, cancelled early)", func(e *Evidence) {
			*e = Evidence{Version: EvidenceVersion, SessionID: "s", AttemptID: "a", PinnedSHA: sha1, StartedAt: t0, EndedAt: t0, Outcome: OutcomeCancelled, Partial: true}
		}, nil},
		{"valid clone workspace", func(e *Evidence) { e.Workspace = &Workspace{Source: WorkspaceClone, PrepareMS: 9000} }, nil},

		{"version", func(e *Evidence) { e.Version = "inspect.evidence/v0" }, []string{"version"}},
		{"session id", func(e *Evidence) { e.SessionID = "" }, []string{"session_id"}},
		{"attempt id", func(e *Evidence) { e.AttemptID = "a b" }, []string{"attempt_id"}},
		{"runner version newline", func(e *Evidence) { e.RunnerVersion = "v1\n" }, []string{"runner_version"}},
		{"tools image not a digest", func(e *Evidence) { e.ToolsImage = "registry.example.com/tools:latest" }, []string{"tools_image"}},
		{"sha", func(e *Evidence) { e.PinnedSHA = "HEAD" }, []string{"pinned_sha"}},
		{"started missing", func(e *Evidence) { e.StartedAt = time.Time{} }, []string{"started_at"}},
		{"ended missing", func(e *Evidence) { e.EndedAt = time.Time{} }, []string{"ended_at"}},
		{"ended before started", func(e *Evidence) { e.EndedAt = t0.Add(-time.Second) }, []string{"ended_at"}},
		{"outcome missing", func(e *Evidence) { e.Outcome = "" }, []string{"outcome"}},
		{"outcome unknown", func(e *Evidence) { e.Outcome = "changed" }, []string{"outcome"}},
		{"reason too long", func(e *Evidence) { e.Reason = strings.Repeat("r", MaxReasonBytes+1) }, []string{"reason"}},

		{"workspace source", func(e *Evidence) { e.Workspace.Source = "" }, []string{"workspace.source"}},
		{"workspace snapshot digest", func(e *Evidence) { e.Workspace.SnapshotDigest = "latest" }, []string{"workspace.snapshot_digest"}},
		{"workspace clone with snapshot", func(e *Evidence) { e.Workspace.Source = WorkspaceClone }, []string{"workspace"}},
		{"workspace drift negative", func(e *Evidence) { e.Workspace.DriftCommits = -1 }, []string{"workspace.drift_commits"}},
		{"workspace prepare negative", func(e *Evidence) { e.Workspace.PrepareMS = -1 }, []string{"workspace.prepare_ms"}},
		{"valid clone with restore error", func(e *Evidence) {
			e.Workspace = &Workspace{Source: WorkspaceClone, RestoreError: "layer sha256:ab: entry \"../x\" climbs out of the root"}
		}, nil},
		{"restore error on a snapshot", func(e *Evidence) { e.Workspace.RestoreError = "x" }, []string{"workspace.restore_error"}},
		{"restore error too long", func(e *Evidence) {
			e.Workspace = &Workspace{Source: WorkspaceClone, RestoreError: strings.Repeat("r", MaxReasonBytes+1)}
		}, []string{"workspace.restore_error"}},
		{"image root on a clone (the spec's base image)", func(e *Evidence) {
			e.Workspace = &Workspace{Source: WorkspaceClone, ImageRoot: &ImageRoot{Layers: 3}}
		}, nil},
		{"drift on a clone", func(e *Evidence) {
			e.Workspace = &Workspace{Source: WorkspaceClone, DriftCommits: 2}
		}, []string{"workspace"}},
		{"image root without layers", func(e *Evidence) { e.Workspace.ImageRoot = &ImageRoot{} }, []string{"workspace.image_root.layers"}},
		{"base image on a clone (the spec's)", func(e *Evidence) {
			e.Workspace = &Workspace{Source: WorkspaceClone, BaseImage: &BaseImage{Name: "x", Digest: "sha256:" + strings.Repeat("ef", 32)}}
		}, nil},
		{"base image on a clone without a digest", func(e *Evidence) {
			e.Workspace = &Workspace{Source: WorkspaceClone, BaseImage: &BaseImage{Name: "x"}}
		}, []string{"workspace.base_image.digest"}},
		{"base image digest not one", func(e *Evidence) { e.Workspace.BaseImage.Digest = "latest" }, []string{"workspace.base_image.digest"}},
		{"base image without a name", func(e *Evidence) { e.Workspace.BaseImage.Name = "" }, []string{"workspace.base_image.name"}},
		{"image root negative count", func(e *Evidence) { e.Workspace.ImageRoot.SetIDBitsDropped = -1 }, []string{"workspace.image_root"}},

		{"too many commands", func(e *Evidence) {
			e.Commands = make([]CommandResult, MaxEvidenceCommands+1)
			for i := range e.Commands {
				e.Commands[i] = CommandResult{Phase: PhaseVerify, Name: "x", Argv: []string{"true"}}
			}
		}, []string{"commands"}},
		{"command phase", func(e *Evidence) { e.Commands[0].Phase = PhasePrepare }, []string{"commands[0].phase"}},
		{"command name", func(e *Evidence) { e.Commands[0].Name = "" }, []string{"commands[0].name"}},
		{"command argv", func(e *Evidence) { e.Commands[1].Argv = nil }, []string{"commands[1].argv"}},
		{"exit code range", func(e *Evidence) { e.Commands[1].ExitCode = 256 }, []string{"commands[1].exit_code"}},
		{"signal with exit code", func(e *Evidence) { e.Commands[2].ExitCode = 137 }, []string{"commands[2].exit_code"}},
		{"signal name", func(e *Evidence) { e.Commands[2].Signal = "kill" }, []string{"commands[2].signal"}},
		{"duration negative", func(e *Evidence) { e.Commands[0].DurationMS = -1 }, []string{"commands[0].duration_ms"}},
		{"output tail too long", func(e *Evidence) { e.Commands[0].OutputTail = strings.Repeat("o", HardMaxOutputBytes+1) }, []string{"commands[0].output_tail"}},
		{"output tail invalid UTF-8", func(e *Evidence) { e.Commands[0].OutputTail = "\xfe" }, []string{"commands[0].output_tail"}},
		{"output tail NUL", func(e *Evidence) { e.Commands[0].OutputTail = "a\x00" }, []string{"commands[0].output_tail"}},

		{"tests negative", func(e *Evidence) { e.Tests.Skipped = -1 }, []string{"tests"}},
		{"tests too many failures", func(e *Evidence) {
			e.Tests.Failures = make([]TestFailure, MaxTestFailures+1)
			for i := range e.Tests.Failures {
				e.Tests.Failures[i].Name = "T"
			}
		}, []string{"tests.failures"}},
		{"failure name", func(e *Evidence) { e.Tests.Failures[0].Name = "" }, []string{"tests.failures[0].name"}},
		{"failure file newline", func(e *Evidence) { e.Tests.Failures[0].File = "a\nb" }, []string{"tests.failures[0].file"}},
		{"failure line negative", func(e *Evidence) { e.Tests.Failures[0].Line = -3 }, []string{"tests.failures[0].line"}},
		{"failure line without file", func(e *Evidence) { e.Tests.Failures[0].File = "" }, []string{"tests.failures[0].line"}},
		{"failure message too long", func(e *Evidence) { e.Tests.Failures[0].Message = strings.Repeat("m", MaxTestMessageBytes+1) }, []string{"tests.failures[0].message"}},

		{"change path", func(e *Evidence) { e.Changes[0].Path = "../x" }, []string{"changes[0].path"}},
		{"change path twice", func(e *Evidence) { e.Changes[1].Path = e.Changes[0].Path }, []string{"changes[1].path"}},
		{"change status", func(e *Evidence) { e.Changes[0].Status = "renamed" }, []string{"changes[0].status"}},
		{"change counts", func(e *Evidence) { e.Changes[0].Deletions = -1 }, []string{"changes[0]"}},

		{"final answer too long", func(e *Evidence) { e.FinalAnswer = strings.Repeat("a", MaxFinalAnswerBytes+1) }, []string{"final_answer"}},
		{"prompt at the cap", func(e *Evidence) { e.Prompt = strings.Repeat("p", MaxPromptBytes) }, nil},
		{"prompt too long", func(e *Evidence) { e.Prompt = strings.Repeat("p", MaxPromptBytes+1) }, []string{"prompt"}},
		{"prompt invalid UTF-8", func(e *Evidence) { e.Prompt = "a\xff" }, []string{"prompt"}},
		{"prompt NUL", func(e *Evidence) { e.Prompt = "a\x00" }, []string{"prompt"}},

		{"usage zero", func(e *Evidence) { e.Usage = &TokenUsage{} }, nil},
		{"usage input negative", func(e *Evidence) { e.Usage.Input = -1 }, []string{"usage.input"}},
		{"usage output negative", func(e *Evidence) { e.Usage.Output = -1 }, []string{"usage.output"}},
		{"usage total negative", func(e *Evidence) { e.Usage.Total = -1 }, []string{"usage.total"}},
		{"usage requests negative", func(e *Evidence) { e.Usage.Requests = -1 }, []string{"usage.requests"}},
		{"usage all negative", func(e *Evidence) { *e.Usage = TokenUsage{Input: -1, Output: -1, Total: -1, Requests: -1} },
			[]string{"usage.input", "usage.output", "usage.total", "usage.requests"}},
		{"usage cache negative", func(e *Evidence) { e.Usage.CacheRead, e.Usage.CacheWrite = -1, -1 },
			[]string{"usage.cache_read", "usage.cache_write"}},
		{"usage cache parts of the input", func(e *Evidence) { e.Usage.CacheRead, e.Usage.CacheWrite = 1000, 200 }, nil},
		{"usage cache more than the input", func(e *Evidence) { e.Usage.CacheRead, e.Usage.CacheWrite = 1000, 201 },
			[]string{"usage.cache_read"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := validEvidence()
			tc.mutate(&e)
			wantFaults(t, e.Validate(), tc.faults...)
		})
	}
}

func TestEvidenceRoundTrip(t *testing.T) {
	e := validEvidence()
	data, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEvidence(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("round trip changed the evidence:\n got %+v\nwant %+v", got, e)
	}
	// Optional parts are left out, not written as zeros.
	minimal := Evidence{Version: EvidenceVersion, SessionID: "s", AttemptID: "a", PinnedSHA: sha1, StartedAt: t0, EndedAt: t1, Outcome: OutcomeOK}
	data, err = json.Marshal(&minimal)
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"usage", "prompt", "tests", "workspace", "partial", "commands", "snapshot_created_at"} {
		if bytes.Contains(data, []byte(`"`+absent+`"`)) {
			t.Errorf("minimal evidence writes %q: %s", absent, data)
		}
	}
}

func TestDecodeEvidenceStrict(t *testing.T) {
	e := validEvidence()
	good, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		data []byte
		want error
		text string
	}{
		"unknown field":       {bytes.Replace(good, []byte(`"outcome":`), []byte(`"mood":"ok","outcome":`), 1), nil, `unknown field "mood"`},
		"wrong version":       {bytes.Replace(good, []byte(EvidenceVersion), []byte("inspect.evidence/v1"), 1), ErrVersion, "v1"},
		"unknown usage field": {bytes.Replace(good, []byte(`"requests":`), []byte(`"cached":1,"requests":`), 1), nil, `unknown field "cached"`},
		"prompt too long":     {bytes.Replace(good, []byte(`"prompt":"`), []byte(`"prompt":"`+strings.Repeat("p", MaxPromptBytes)), 1), nil, "prompt"},
		"oversize":            {append([]byte(`{"version":"`+EvidenceVersion+`","final_answer":"`), bytes.Repeat([]byte("a"), MaxEvidenceBytes)...), ErrTooLarge, "larger than"},
		"invalid inside":      {bytes.Replace(good, []byte(`"outcome":"verify_failed"`), []byte(`"outcome":"great"`), 1), nil, "outcome"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeEvidence(bytes.NewReader(tc.data))
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestCommandResultSucceeded(t *testing.T) {
	for _, tc := range []struct {
		c    CommandResult
		want bool
	}{
		{CommandResult{ExitCode: 0}, true},
		{CommandResult{ExitCode: 1}, false},
		{CommandResult{ExitCode: -1, Signal: "SIGKILL"}, false},
		{CommandResult{ExitCode: 0, TimedOut: true}, false},
	} {
		if got := tc.c.Succeeded(); got != tc.want {
			t.Errorf("%+v.Succeeded() = %v", tc.c, got)
		}
	}
}

func TestPhases(t *testing.T) {
	for _, p := range phases {
		want := p == PhaseSetup || p == PhaseAgent || p == PhaseVerify
		if p.IsCommandPhase() != want {
			t.Errorf("%s.IsCommandPhase() = %v", p, !want)
		}
	}
}

func TestTailOutput(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		max       int
		want      string
		truncated bool
	}{
		{"short", "hello\n", 10, "hello\n", false},
		{"exact", "hello", 5, "hello", false},
		{"cut", "0123456789", 4, "6789", true},
		{"empty", "", 4, "", false},
		{"zero max", "abc", 0, "", true},
		{"cut inside a rune", "aé€", 4, "€", true},        // é is 2 bytes, € is 3
		{"cut inside a 4-byte rune", "a😀b", 4, "b", true}, // 😀 is 4 bytes
		{"invalid bytes", "a\xffb", 10, "a\uFFFDb", false},
		{"NUL", "a\x00b", 10, "a\uFFFDb", false},
		{"invalid run becomes one replacement", "\xff\xff\xff", 3, "\uFFFD", false},
		{"replacement grows past max", "a\xff", 3, "\uFFFD", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, truncated := TailOutput([]byte(tc.in), tc.max)
			if got != tc.want || truncated != tc.truncated {
				t.Fatalf("TailOutput(%q, %d) = %q, %v; want %q, %v", tc.in, tc.max, got, truncated, tc.want, tc.truncated)
			}
		})
	}
}

func FuzzTailOutput(f *testing.F) {
	f.Add([]byte("hello wörld \xff\x00 😀"), 7)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		max = max % (1 << 12)
		if max < 0 {
			max = -max
		}
		s, _ := TailOutput(b, max)
		if len(s) > max || !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			t.Fatalf("TailOutput(%q, %d) = %q", b, max, s)
		}
		c := CommandResult{Phase: PhaseVerify, Name: "x", Argv: []string{"x"}, OutputTail: s}
		var fl faults
		c.validate(&fl, "c")
		if len(fl.list) > 0 {
			t.Fatalf("tail %q is not valid evidence: %v", s, fl.list)
		}
	})
}

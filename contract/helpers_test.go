package contract

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// Fake credentials are assembled at run time, so that no secret scanner
// mistakes this file for a leak.
func fakeToken(prefix string, n int) string {
	const alphabet = "aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uVwXyZ"
	var b strings.Builder
	b.WriteString(prefix)
	for i := range n {
		b.WriteByte(alphabet[i%len(alphabet)])
	}
	return b.String()
}

// newGHS is a token of the new installation format: ghs_<id>_<...> with
// dots and underscores, about 520 characters long.
func newGHS() string {
	body := fakeToken("", 500)
	return "gh" + "s_" + "12345678_" + body[:200] + "." + body[200:400] + "_" + body[400:]
}

// fakeTokens are one of each format SecretKind recognises.
func fakeTokens() map[string]string {
	return map[string]string{
		"ghs classic": fakeToken("gh"+"s_", 36),
		"ghs new":     newGHS(),
		"ghp":         fakeToken("gh"+"p_", 36),
		"gho":         fakeToken("gh"+"o_", 36),
		"ghu":         fakeToken("gh"+"u_", 36),
		"ghr":         fakeToken("gh"+"r_", 36),
		"github_pat":  fakeToken("github"+"_pat_", 82),
		"slack":       fakeToken("xo"+"xb-", 40),
		"sk":          fakeToken("s"+"k-", 48),
		"sk-ant":      fakeToken("s"+"k-ant-api03-", 40),
		"pem":         "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
		"pem openssh": "-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA",
		"pem ec":      "-----BEGIN " + "EC PRIVATE KEY-----",
	}
}

var (
	t0 = time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(5 * time.Minute)
)

const (
	sha1 = "0123456789abcdef0123456789abcdef01234567"
	sha2 = "89abcdef0123456789abcdef0123456789abcdef"
)

func validSpec() Spec {
	return Spec{
		Version:   SpecVersion,
		SessionID: "01hx3k9q2m7e4w",
		AttemptID: "01hx3k9q2m7e4w-1",
		Repo: Repo{
			Owner:         "octo-org",
			Name:          "hello.world",
			ID:            1296269,
			CloneURL:      "https://github.com/octo-org/hello.world.git",
			DefaultBranch: "main",
		},
		PinnedSHA: sha1,
		Target:    Target{Kind: TargetPullRequest, Number: 42, BaseBranch: "main", HeadBranch: "feature/fix-tests"},
		Snapshot: &Snapshot{
			Store: "registry.example.com/inspect", Digest: "sha256:" + strings.Repeat("ab", 32),
			Caches: []Cache{{Path: "/cache/go", Lockfiles: []string{"go.sum"}}},
			Setup:  []Command{{Name: "download modules", Argv: []string{"go", "mod", "download"}, Timeout: Duration(10 * time.Minute)}},
		},
		Env:          map[string]string{"GOFLAGS": "-trimpath", "GOMODCACHE": "/cache/go/mod"},
		Instructions: "make the failing test pass",
		Requester:    Requester{Login: "octocat", ID: 583231},
		Context: []ContextItem{
			{Kind: ContextTitle, Author: "octocat", Text: "TestAdd fails", Untrusted: false},
			{Kind: ContextBody, Author: "someone-else", Text: "It returns 3 for 1+1.", Untrusted: true},
			{Kind: ContextCheckOutput, Source: "ci/test", Text: "--- FAIL: TestAdd (0.00s)\n", Untrusted: true},
			{Kind: ContextAgentsMD, Source: "AGENTS.md", Text: "Run go test ./..."},
		},
		Agent: Agent{Preset: PresetCommand, Command: []string{"./examples/stand-in-agent.sh", "--quiet"}, Model: "gpt-5-codex"},
		Setup: []Command{{Name: "deps", Argv: []string{"go", "mod", "download"}, Timeout: Duration(5 * time.Minute)}},
		Verify: []Command{
			{Name: "test", Argv: []string{"go", "test", "-json", "./..."}, Timeout: Duration(10 * time.Minute)},
			{Name: "vet", Argv: []string{"go", "vet", "./..."}, Timeout: Duration(2 * time.Minute)},
		},
		Registries: []Registry{
			{Name: "goproxy", Kind: "goproxy", Phases: []Phase{PhaseSetup, PhaseVerify}, SumDB: "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8", NoSumDB: []string{"example.com/private/*"}},
			{Name: "npmjs", Kind: "npm", Phases: []Phase{PhaseSetup}},
		},
		Artifacts: &ArtifactSpec{Patterns: []string{"screenshots/*.png", "reports/**"}, MaxFileBytes: 10 << 20, MaxSessionBytes: 50 << 20},
		BaseImage: "registry.example.com/mirror/golang@sha256:" + strings.Repeat("9f", 32),
		Limits: Limits{
			Deadline:        t0.Add(time.Hour),
			Timeout:         Duration(45 * time.Minute),
			MaxOutputBytes:  64 << 10,
			MaxChangedFiles: 100,
			MaxChangeBytes:  1 << 20,
		},
	}
}

func validEvidence() Evidence {
	return Evidence{
		Version:       EvidenceVersion,
		SessionID:     "01hx3k9q2m7e4w",
		AttemptID:     "01hx3k9q2m7e4w-1",
		RunnerVersion: "v0.3.0",
		PinnedSHA:     sha1,
		StartedAt:     t0,
		EndedAt:       t1,
		Outcome:       OutcomeVerifyFailed,
		Workspace: &Workspace{Source: WorkspaceSnapshot, SnapshotDigest: "sha256:" + strings.Repeat("cd", 32), SnapshotCreatedAt: t0.Add(-20 * time.Minute), DriftCommits: 3, PrepareMS: 2100,
			ImageRoot: &ImageRoot{Layers: 3, SetIDBitsDropped: 1, DeviceNodesSkipped: 2},
			BaseImage: &BaseImage{Name: "ghcr.io/acme/toolchain", Digest: "sha256:" + strings.Repeat("ef", 32)}},
		Commands: []CommandResult{
			{Phase: PhaseAgent, Name: "agent", Argv: []string{"./agent", "/run/prompt.md"}, ExitCode: 0, DurationMS: 60000, OutputTail: "done\n"},
			{Phase: PhaseVerify, Name: "test", Argv: []string{"go", "test", "./..."}, ExitCode: 1, DurationMS: 3000, OutputTail: "…FAIL\n", OutputTruncated: true},
			{Phase: PhaseVerify, Name: "slow", Argv: []string{"sleep", "1000"}, ExitCode: -1, Signal: "SIGKILL", TimedOut: true, DurationMS: 120000},
		},
		Tests: &TestSummary{Passed: 10, Failed: 1, Skipped: 2, Failures: []TestFailure{
			{Name: "example.com/calc.TestAdd", File: "calc/add_test.go", Line: 12, Message: "got 3, want 2"},
		}},
		Changes: []ChangedFile{
			{Path: "calc/add.go", Status: ChangeModified, Additions: 1, Deletions: 1},
			{Path: "calc/add_test.go", Status: ChangeModified, Additions: 4, Test: true},
		},
		Diff:        &Diff{Patch: "diff --git a/calc/add.go b/calc/add.go\nindex 3b18e51..a042389 100644\n--- a/calc/add.go\n+++ b/calc/add.go\n@@ -1,3 +1,3 @@\n func Add(a, b int) int {\n-\treturn a + b + 1\n+\treturn a + b\n }\n"},
		FinalAnswer: "Fixed the off-by-one in Add.",
		Prompt:      "# Inspect session 01hx3k9q2m7e4w\n\nYou are working in /workspace, a checkout of octo-org/hello.world at commit " + sha1 + ".\n\n## Request\n\n```text\nmake the failing test pass\n```\n",
		Usage:       &TokenUsage{Input: 1200, Output: 300, Total: 1500, Requests: 4, CacheRead: 900, CacheWrite: 100},
		Egress: &EgressAudit{
			Model:        EgressCount{Requests: 1, Bytes: 5120},
			Registry:     EgressCount{Requests: 2, Bytes: 40960},
			RefusedCount: 1,
			Records: []EgressRecord{
				{Kind: EgressRegistry, Phase: PhaseSetup, Upstream: "gomods", Method: "GET", Path: "golang.org/x/mod/@v/list", Status: 200, Bytes: 16, Millis: 31},
				{Kind: EgressRegistry, Phase: PhaseSetup, Upstream: "gomods", Method: "GET", Path: "golang.org/x/mod/@v/v0.20.0.zip", Status: 200, Bytes: 40944, Millis: 45},
				{Kind: EgressModel, Phase: PhaseAgent, Upstream: "openai", Method: "POST", Path: "responses", Status: 200, Bytes: 5120, Millis: 2200},
			},
			Refused: []EgressRecord{
				{Kind: EgressRefused, Phase: PhaseSetup, Upstream: "npmjs", Method: "PUT", Path: "left-pad", Status: 403, Why: "only GET and HEAD reach a registry"},
			},
		},
		Artifacts: []Artifact{
			{Name: "screenshots/home.png", Size: 20480, ContentType: "image/png", SHA256: strings.Repeat("ab", 32)},
			{Name: "reports/trace.zip", Size: 90 << 20, Refused: "over the 10485760-byte limit per file"},
		},
	}
}

func validManifest() Manifest {
	return Manifest{
		Version: ManifestVersion,
		BaseSHA: sha1,
		Files: []FileChange{
			{Path: "calc/add.go", Mode: ModeFile, Content: []byte("package calc\n")},
			{Path: "calc/new_test.go", Mode: ModeFile, Content: []byte("package calc\n"), Added: true},
			{Path: "old.txt", Deleted: true},
			{Path: "scripts/run", Mode: ModeExecutable, Content: []byte("#!/bin/sh\n")},
			{Path: "link", Mode: ModeSymlink, Content: []byte("calc/add.go")},
		},
	}
}

// wantFaults checks that err is a *ValidationError whose faults name
// exactly the given fields (in any order, with repeats collapsed).
func wantFaults(t *testing.T, err error, fields ...string) {
	t.Helper()
	if len(fields) == 0 {
		if err != nil {
			t.Fatalf("want no fault, got %v", err)
		}
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a *ValidationError naming %v, got %v", fields, err)
	}
	var got []string
	for _, f := range ve.Faults {
		if f.Field == "" || f.Fault == "" {
			t.Errorf("fault with an empty field or text: %#v", f)
		}
		if !slices.Contains(got, f.Field) {
			got = append(got, f.Field)
		}
	}
	want := slices.Clone(fields)
	slices.Sort(got)
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Fatalf("faults name %v, want %v\n%v", got, want, err)
	}
}

package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/cjson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/inspecthq/inspect/contract"
)

// PredicateType is the URI of Inspect's provenance predicate, documented
// in docs/decisions/0078 and docs/configuration.md ("Provenance").
const PredicateType = "https://inspect.dev/provenance/v1"

// PayloadType is the DSSE payload type of an in-toto statement.
const PayloadType = "application/vnd.in-toto+json"

// Subject names: the commit Inspect made, and the patch the session page
// shows.
const (
	SubjectCommit = "commit"
	SubjectPatch  = "patch"
)

// Facts are what an attestation says: the attempt, the commit made of its
// change, the patch as stored, and its spec's agent and evidence.
type Facts struct {
	// Repository is owner/name.
	Repository         string
	SessionID          string
	AttemptID          string
	CommitSHA          string
	Patch              string
	PatchTruncated     bool
	AgentPreset, Model string
	Evidence           contract.Evidence
	SignedAt           time.Time
}

// Predicate is the predicate of PredicateType, as JSON.
type Predicate struct {
	Repository string `json:"repository"`
	SessionID  string `json:"session_id"`
	AttemptID  string `json:"attempt_id"`
	// PinnedSHA is the commit the change was made on.
	PinnedSHA     string `json:"pinned_sha"`
	RunnerVersion string `json:"runner_version,omitempty"`
	StartedAt     string `json:"started_at,omitempty"`
	EndedAt       string `json:"ended_at,omitempty"`
	Outcome       string `json:"outcome"`
	// Snapshot is the snapshot restored ("" digest: a cold clone).
	Workspace  *Workspace            `json:"workspace,omitempty"`
	ToolsImage string                `json:"tools_image,omitempty"`
	Agent      Agent                 `json:"agent"`
	Commands   []Command             `json:"commands"`
	Tests      *contract.TestSummary `json:"tests,omitempty"`
	// EgressAudit is the sha256 of the egress audit's canonical JSON
	// (securesystemslib's cjson of contract.EgressAudit); "" when there
	// was no egress.
	EgressAudit string               `json:"egress_audit_sha256,omitempty"`
	Usage       *contract.TokenUsage `json:"usage,omitempty"`
	// PatchTruncated says the patch subject is the stored, cut patch,
	// not the whole change.
	PatchTruncated bool   `json:"patch_truncated,omitempty"`
	SignedAt       string `json:"signed_at"`
}

// Workspace is where the attempt ran.
type Workspace struct {
	Source            string              `json:"source"`
	SnapshotDigest    string              `json:"snapshot_digest,omitempty"`
	SnapshotCreatedAt string              `json:"snapshot_created_at,omitempty"`
	DriftCommits      int                 `json:"drift_commits,omitempty"`
	BaseImage         *contract.BaseImage `json:"base_image,omitempty"`
}

// Agent is the agent preset and model the spec named.
type Agent struct {
	Preset string `json:"preset"`
	Model  string `json:"model,omitempty"`
}

// Command is one command the evidence lists, without its output.
type Command struct {
	Phase      string   `json:"phase"`
	Name       string   `json:"name"`
	Argv       []string `json:"argv"`
	ExitCode   int      `json:"exit_code"`
	Signal     string   `json:"signal,omitempty"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	DurationMS int64    `json:"duration_ms"`
}

// PatchDigest is the patch's sha256, hex.
func PatchDigest(patch string) string {
	sum := sha256.Sum256([]byte(patch))
	return hex.EncodeToString(sum[:])
}

// EgressDigest is the sha256 (hex) of the audit's canonical JSON; "" for
// none.
func EgressDigest(a *contract.EgressAudit) (string, error) {
	if a == nil {
		return "", nil
	}
	b, err := cjson.EncodeCanonical(a)
	if err != nil {
		return "", fmt.Errorf("the egress audit's canonical JSON: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// PredicateOf is the predicate the facts make.
func PredicateOf(f Facts) (Predicate, error) {
	ev := f.Evidence
	egress, err := EgressDigest(ev.Egress)
	if err != nil {
		return Predicate{}, err
	}
	p := Predicate{
		Repository: f.Repository, SessionID: f.SessionID, AttemptID: f.AttemptID, PinnedSHA: ev.PinnedSHA,
		RunnerVersion: ev.RunnerVersion, StartedAt: stamp(ev.StartedAt), EndedAt: stamp(ev.EndedAt), Outcome: string(ev.Outcome),
		ToolsImage: ev.ToolsImage, Agent: Agent{Preset: f.AgentPreset, Model: f.Model}, Commands: []Command{},
		Tests: ev.Tests, EgressAudit: egress, Usage: ev.Usage, PatchTruncated: f.PatchTruncated, SignedAt: stamp(f.SignedAt),
	}
	if w := ev.Workspace; w != nil {
		p.Workspace = &Workspace{Source: string(w.Source), SnapshotDigest: w.SnapshotDigest, SnapshotCreatedAt: stamp(w.SnapshotCreatedAt),
			DriftCommits: w.DriftCommits, BaseImage: w.BaseImage}
	}
	for _, c := range ev.Commands {
		p.Commands = append(p.Commands, Command{Phase: string(c.Phase), Name: c.Name, Argv: c.Argv, ExitCode: c.ExitCode,
			Signal: c.Signal, TimedOut: c.TimedOut, DurationMS: c.DurationMS})
	}
	return p, nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Statement is the in-toto statement of the facts: subject the commit
// (gitCommit) and the patch (sha256), predicate PredicateOf's.
func Statement(f Facts) (*intoto.Statement, error) {
	if len(f.CommitSHA) != 40 {
		return nil, errors.New("provenance: no commit to attest")
	}
	p, err := PredicateOf(f)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	pred, err := structpb.NewStruct(m)
	if err != nil {
		return nil, err
	}
	st := &intoto.Statement{
		Type: intoto.StatementTypeUri,
		Subject: []*intoto.ResourceDescriptor{
			{Name: SubjectCommit, Digest: map[string]string{"gitCommit": f.CommitSHA}},
			{Name: SubjectPatch, Digest: map[string]string{"sha256": PatchDigest(f.Patch)}},
		},
		PredicateType: PredicateType,
		Predicate:     pred,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("provenance: the statement: %w", err)
	}
	return st, nil
}

package contract

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"
)

// AttemptKind says what an attempt runs.
type AttemptKind string

// Attempt kinds.
const (
	KindSession  AttemptKind = "session"
	KindSnapshot AttemptKind = "snapshot"
	// KindBaseline is the base's verify (decision 0080): a spec with
	// Baseline set, run on the pinned commit with no agent and no change.
	KindBaseline AttemptKind = "baseline"
)

// SnapshotJobVersion is the version of SnapshotJob this build writes and
// reads.
//
// v2 added Registries: a build's setup reaches package registries.
const SnapshotJobVersion = "inspect.snapshot-job/v2"

// MaxSnapshotJobBytes caps a SnapshotJob.
const MaxSnapshotJobBytes = 256 << 10

// SnapshotJob is a snapshot build on an executor (decision 0012): build the
// repo at SHA as the repo's config says and push it to Store. Like a spec,
// it holds no credential: the read token comes from PathRepoToken, and
// push credentials are the executor host's own.
type SnapshotJob struct {
	Version   string `json:"version"`
	AttemptID string `json:"attempt_id"`
	Repo      Repo   `json:"repo"`
	SHA       string `json:"sha"`
	// Store is where to push (as Snapshot.Store).
	Store string `json:"store"`
	// BaseImage is a reference to the toolchain image, pinned by digest;
	// empty for none.
	BaseImage string            `json:"base_image,omitempty"`
	Setup     []Command         `json:"setup,omitempty"`
	Caches    []Cache           `json:"caches,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	// Registries are the package registries the build's setup may reach
	// through the egress, as a session's spec names them (those open to
	// the setup phase are; their URLs and credentials stay in the app).
	Registries []Registry `json:"registries,omitempty"`
	Deadline   time.Time  `json:"deadline"`
}

// Validate reports every fault in the job, each naming its field.
func (j *SnapshotJob) Validate() error {
	var f faults
	if j.Version != SnapshotJobVersion {
		f.add("version", "must be %q, not %s", SnapshotJobVersion, safeQuote(j.Version))
	}
	checkID(&f, "attempt_id", j.AttemptID)
	j.Repo.validate(&f, "repo")
	checkSHA(&f, "sha", j.SHA)
	if err := ValidateSnapshotStore(j.Store); err != nil {
		f.add("store", "%v", err)
	}
	checkLine(&f, "base_image", j.BaseImage, 512, false)
	validateCommands(&f, "setup", j.Setup)
	validateCaches(&f, "caches", j.Caches)
	validateEnv(&f, "env", j.Env)
	validateRegistries(&f, "registries", j.Registries)
	if j.Deadline.IsZero() {
		f.add("deadline", "is required")
	}
	scanSecrets(&f, "", reflect.ValueOf(j).Elem())
	return f.err("snapshot job")
}

// DecodeSnapshotJob reads a SnapshotJob strictly and validates it.
func DecodeSnapshotJob(r io.Reader) (SnapshotJob, error) {
	var j SnapshotJob
	if err := decodeDocument(r, "snapshot job", MaxSnapshotJobBytes, SnapshotJobVersion, &j); err != nil {
		return SnapshotJob{}, err
	}
	if err := j.Validate(); err != nil {
		return SnapshotJob{}, err
	}
	return j, nil
}

// MaxSnapshotLogBytes caps a snapshot build's log: the tail of its setup
// output that the app keeps and the snapshots page shows.
const MaxSnapshotLogBytes = 64 << 10

// MaxSnapshotResultBytes caps a SnapshotResult: its log, JSON-escaped
// (each byte at most six), its egress audit, and the rest.
const MaxSnapshotResultBytes = 6*MaxSnapshotLogBytes + MaxEgressAuditBytes + 16<<10

// SnapshotResult ends a snapshot build: the pushed image's digest and the
// commit it holds, or why there is none; and either way the tail of its
// setup's output and its setup's egress audit.
//
// Like every channel message it has no version of its own (the "/v1/"
// path is its version, ChannelVersion); Egress joined it with
// omitempty, so a supervisor older than that change still reports, and
// one newer than the app is refused by the strict decoding: the app is
// upgraded first (decision 0065).
type SnapshotResult struct {
	Digest string `json:"digest,omitempty"`
	SHA    string `json:"sha,omitempty"`
	// Size is the pushed image's layers' compressed bytes, summed, and
	// Layers how many it has (its manifest's), base image's included.
	Size   int64 `json:"size,omitempty"`
	Layers int   `json:"layers,omitempty"`
	// Error says why the build failed (redacted; shown to operators).
	Error string `json:"error,omitempty"`
	// Log is the end of the setup commands' output (SnapshotLog),
	// redacted; empty when no setup command ran.
	Log string `json:"log,omitempty"`
	// Egress is the audit of setup's registry egress, as a session's
	// evidence carries it (every request relayed and every refusal, in
	// the setup phase), also when the build failed; nil when setup sent
	// nothing (no registry was open to it, or setup did not run).
	Egress *EgressAudit `json:"egress,omitempty"`
}

// Validate reports the result's faults.
func (r SnapshotResult) Validate() error {
	var f faults
	switch {
	case r.Digest == "" && r.Error == "":
		f.add("error", "is required when there is no digest")
	case r.Digest != "":
		if !IsImageDigest(r.Digest) {
			f.add("digest", `must be "sha256:" followed by 64 lowercase hex digits`)
		}
		checkSHA(&f, "sha", r.SHA)
	}
	if r.Size < 0 || r.Layers < 0 {
		f.add("size", "and layers must not be negative")
	}
	if r.Digest == "" && (r.Size != 0 || r.Layers != 0) {
		f.add("size", "and layers describe a pushed image: not without a digest")
	}
	checkText(&f, "error", r.Error, 4<<10, false)
	checkText(&f, "log", r.Log, MaxSnapshotLogBytes, false)
	if r.Egress != nil {
		r.Egress.validate(&f, "egress")
		// A build has one phase: its setup's.
		for _, l := range []struct {
			field string
			recs  []EgressRecord
		}{{"egress.records", r.Egress.Records}, {"egress.refused", r.Egress.Refused}} {
			for i, rec := range l.recs {
				if rec.Phase != PhaseSetup && slices.Contains(phases, rec.Phase) {
					f.add(at(index(l.field, i), "phase"), "must be setup, not %s: a snapshot build has no other phase", rec.Phase)
				}
			}
		}
	}
	return f.err("snapshot result")
}

// DecodeSnapshotResult reads a SnapshotResult strictly and validates it.
func DecodeSnapshotResult(r io.Reader) (SnapshotResult, error) {
	var res SnapshotResult
	err := decodeMessage(r, "snapshot result", MaxSnapshotResultBytes, &res)
	return res, err
}

// SnapshotLog is a snapshot build's log: each setup command that ran, a
// header line naming it and how it ended, then its output's tail, in
// order; the whole cut to its last MaxSnapshotLogBytes (on a character
// boundary, TailOutput). The results' texts must be redacted already.
// Empty when no command ran (setup was skipped, or the build stopped
// before it).
func SnapshotLog(results []CommandResult) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "--- %s: %s %s after %s\n", r.Name, strings.Join(r.Argv, " "), r.Ending(), (time.Duration(r.DurationMS) * time.Millisecond).String())
		if r.OutputTruncated {
			b.WriteString("[… earlier output cut]\n")
		}
		b.WriteString(r.OutputTail)
		if r.OutputTail != "" && !strings.HasSuffix(r.OutputTail, "\n") {
			b.WriteByte('\n')
		}
	}
	log, _ := TailOutput([]byte(b.String()), MaxSnapshotLogBytes) // that it was cut shows in its first line
	return log
}

package supervisor

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/inspecthq/inspect/contract"
)

// An agent's state between attempts (decision 0073): the part of its Home
// the CLI needs to resume, in a gzipped tarball kept in the store as
// artifacts are (decision 0029). Its first entry is a manifest
// (agentStateManifest); the rest are regular files and directories under
// the preset's kept paths (keptState), nothing else.
const (
	// MaxAgentStateBytes caps the packed tarball: what the store keeps
	// and the channel carries. A conversation's transcript is text and
	// compresses well; one over this starts fresh.
	MaxAgentStateBytes = contract.MaxAgentStateBytes
	// maxAgentStateUnpacked caps the files' total size, packed or
	// restored (a small tarball must not unpack into a disk's worth).
	maxAgentStateUnpacked = 64 << 20
	// maxAgentStateFiles caps the entries.
	maxAgentStateFiles = 2000
	// MaxAgentStateAge is how old a state may be when it is restored, by
	// default: the artifacts' default retention.
	MaxAgentStateAge = 30 * 24 * time.Hour

	agentStateManifestName = "inspect-agent-state.json"
	agentStateVersion      = 1
)

// agentStateManifest is the tarball's first entry.
type agentStateManifest struct {
	Version      int               `json:"version"`
	Conversation ConversationState `json:"conversation"`
	// CLIVersion is the preset's pinned CLI version that wrote the
	// state; another version's state starts fresh.
	CLIVersion string    `json:"cli_version,omitempty"`
	PackedAt   time.Time `json:"packed_at"`
}

// ErrAgentStateTooBig is PackAgentState's refusal of a state over the caps.
var ErrAgentStateTooBig = errors.New("the agent's conversation state is over its size cap")

// keptState is the part of Home, by paths relative to it (a directory ends
// in "/"), that the preset's CLI needs to resume a conversation, and
// nothing of its configuration, which the preset writes anew:
//
//   - Codex CLI: its rollouts (codex/sessions/), each thread's whole
//     conversation.
//   - Claude Code: its session transcripts (claude/projects/).
//   - OpenCode: its database, with the write-ahead log a stopped run may
//     not have checkpointed (opencode/data/opencode/opencode.db*).
//   - a `command` agent: nothing; its conversation is the turn files the
//     supervisor writes.
func keptState(p contract.Preset) []string {
	switch p {
	case contract.PresetCodex:
		return []string{"codex/sessions/"}
	case contract.PresetClaudeCode:
		return []string{"claude/projects/"}
	case contract.PresetOpenCode:
		db := "opencode/data/opencode/opencode.db"
		return []string{db, db + "-wal", db + "-shm"}
	}
	return nil
}

// kept reports whether rel (slash-separated, relative to Home) is in
// prefixes, or is a directory on the way to one (dir is true).
func kept(prefixes []string, rel string, dir bool) bool {
	for _, k := range prefixes {
		d, isDir := strings.CutSuffix(k, "/")
		switch {
		case rel == k, isDir && (rel == d || strings.HasPrefix(rel, k)):
			return true
		case dir && strings.HasPrefix(k, rel+"/"):
			return true
		}
	}
	return false
}

// cliVersion is the pinned version of the preset's CLI ("" for command).
func cliVersion(p contract.Preset) string {
	switch p {
	case contract.PresetCodex:
		return CodexVersion
	case contract.PresetClaudeCode:
		return ClaudeCodeVersion
	case contract.PresetOpenCode:
		return OpenCodeVersion
	}
	return ""
}

// PackAgentState packs the kept part of home (AgentPaths.Home, opened by
// OpenAgentHome) with st, after the agent's run has ended. The agent
// wrote all of it: only regular files and directories are taken (a link,
// device or socket is left out and named in skipped), each read through an
// os.Root with O_NOFOLLOW. Every secret red knows (the tokens we minted)
// and its built-in formats are redacted from each file; a file that is not
// UTF-8 text and held one (a database) cannot be redacted without breaking
// it, so the state is refused. Over MaxAgentStateBytes packed, the
// unpacked cap or the file cap, it is refused with ErrAgentStateTooBig.
func PackAgentState(home *os.Root, st ConversationState, red *contract.Redactor, now time.Time) (data []byte, skipped []string, err error) {
	if err := st.Validate(contract.Agent{Preset: st.Preset}); err != nil {
		return nil, nil, err
	}
	prefixes := keptState(st.Preset)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	man, err := json.Marshal(agentStateManifest{Version: agentStateVersion, Conversation: st,
		CLIVersion: cliVersion(st.Preset), PackedAt: now.UTC()})
	if err != nil {
		return nil, nil, err
	}
	if err := writeTarFile(tw, agentStateManifestName, man, now); err != nil {
		return nil, nil, err
	}
	var total int64
	files := 0
	walkErr := fs.WalkDir(home.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if !kept(prefixes, rel, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if contract.ValidatePath(rel) != nil {
			skipped = append(skipped, rel+" (not a plain path)")
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if files++; files > maxAgentStateFiles {
			return fmt.Errorf("%w: more than %d files", ErrAgentStateTooBig, maxAgentStateFiles)
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: now})
		case !d.Type().IsRegular():
			skipped = append(skipped, rel+" (not a regular file)")
			return nil
		}
		content, err := readStateFile(home, rel, maxAgentStateUnpacked-total)
		if err != nil {
			return err
		}
		if redacted := red.Redact(string(content)); redacted != string(content) {
			if !utf8.Valid(content) {
				return fmt.Errorf("%s holds a secret and is not text: it cannot be redacted without breaking it", rel)
			}
			content = []byte(redacted)
		}
		total += int64(len(content))
		if err := writeTarFile(tw, rel, content, now); err != nil {
			return err
		}
		if buf.Len() > MaxAgentStateBytes {
			return fmt.Errorf("%w: over %d bytes packed", ErrAgentStateTooBig, MaxAgentStateBytes)
		}
		return nil
	})
	if walkErr != nil {
		return nil, skipped, walkErr
	}
	if err := tw.Close(); err != nil {
		return nil, skipped, err
	}
	if err := zw.Close(); err != nil {
		return nil, skipped, err
	}
	if buf.Len() > MaxAgentStateBytes {
		return nil, skipped, fmt.Errorf("%w: %d bytes packed, over %d", ErrAgentStateTooBig, buf.Len(), MaxAgentStateBytes)
	}
	return buf.Bytes(), skipped, nil
}

// readStateFile reads rel through root without following a link, no more
// than limit bytes (more is ErrAgentStateTooBig).
func readStateFile(root *os.Root, rel string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s changed type while it was packed", rel)
	case fi.Size() > limit:
		return nil, fmt.Errorf("%w: over %d bytes unpacked", ErrAgentStateTooBig, maxAgentStateUnpacked)
	}
	content, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(content)) > limit {
		return nil, fmt.Errorf("%w: over %d bytes unpacked", ErrAgentStateTooBig, maxAgentStateUnpacked)
	}
	return content, nil
}

func writeTarFile(tw *tar.Writer, name string, content []byte, now time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: int64(len(content)), ModTime: now}); err != nil {
		return err
	}
	_, err := tw.Write(content)
	return err
}

// RestoreAgentState unpacks a state PackAgentState made into root (the new
// attempt's AgentPaths.Home, empty, opened by OpenAgentHome), for agent a,
// owned by uid:gid, and returns the conversation to continue. When the
// state cannot serve, fresh says why, nothing is written, and the turn
// starts a new conversation (the caller says so): there is none (data is
// empty: never kept, or gone past its retention), it is older than
// maxAge, over the caps, for another preset or CLI version, or not a state
// this code packs (an entry that is not a regular file or directory under
// the preset's kept paths, a path that is not plain). err is for the
// caller's own failures (writing into root).
//
// The caller then writes ResumeInvocation's Files over it (WriteHomeFiles):
// the state was written by the agent, and the preset's configuration must
// be the one that counts.
func RestoreAgentState(root *os.Root, a contract.Agent, data []byte, now time.Time, maxAge time.Duration, uid, gid int) (st ConversationState, fresh string, err error) {
	man, entries, fresh := readAgentState(a, data, now, maxAge)
	if fresh != "" {
		return ConversationState{}, fresh, nil
	}
	chown := uid != os.Geteuid() || gid != os.Getegid()
	for _, e := range entries {
		name := filepath.FromSlash(e.name)
		if e.dir {
			err = root.MkdirAll(name, 0o755)
		} else if err = root.MkdirAll(filepath.Dir(name), 0o755); err == nil {
			err = writeNewFile(root, name, e.content)
		}
		if chown {
			// The entry and every directory above it: the CLI writes
			// new files beside the restored ones.
			for d := e.name; d != "." && err == nil; d = path.Dir(d) {
				err = root.Lchown(filepath.FromSlash(d), uid, gid)
			}
		}
		if err != nil {
			for _, top := range topNames(entries) {
				_ = root.RemoveAll(top) // best effort: the error below is what counts
			}
			return ConversationState{}, "", fmt.Errorf("restoring the agent's state: %w", err)
		}
	}
	return man.Conversation, "", nil
}

// writeNewFile creates name under root (never through a link, never over
// a file) with content.
func writeNewFile(root *os.Root, name string, content []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}

// topNames are the first components of the entries' names.
func topNames(entries []stateEntry) []string {
	var tops []string
	for _, e := range entries {
		top, _, _ := strings.Cut(e.name, "/")
		if !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	return tops
}

type stateEntry struct {
	name    string
	dir     bool
	content []byte
}

// readAgentState reads and checks the whole tarball before anything is
// written, or says why it cannot serve.
func readAgentState(a contract.Agent, data []byte, now time.Time, maxAge time.Duration) (agentStateManifest, []stateEntry, string) {
	var man agentStateManifest
	switch {
	case len(data) == 0:
		return man, nil, "no conversation state was kept from an earlier attempt (none was saved, or it is gone)"
	case len(data) > MaxAgentStateBytes:
		return man, nil, fmt.Sprintf("the conversation state is %d bytes, over the %d-byte cap", len(data), MaxAgentStateBytes)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return man, nil, "the conversation state is not a gzipped tarball: " + err.Error()
	}
	tr := tar.NewReader(zr)
	prefixes := keptState(a.Preset)
	var entries []stateEntry
	var total int64
	for i := 0; ; i++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return man, nil, "the conversation state is not a readable tarball: " + err.Error()
		}
		if i > maxAgentStateFiles {
			return man, nil, fmt.Sprintf("the conversation state has more than %d entries", maxAgentStateFiles)
		}
		name := strings.TrimSuffix(h.Name, "/")
		dir := h.Typeflag == tar.TypeDir
		switch {
		case i == 0 && (h.Name != agentStateManifestName || h.Typeflag != tar.TypeReg):
			return man, nil, "the conversation state has no manifest first"
		case h.Typeflag != tar.TypeReg && !dir:
			return man, nil, fmt.Sprintf("the conversation state holds %q, which is not a regular file or directory", h.Name)
		case i > 0 && (contract.ValidatePath(name) != nil || path.Clean(name) != name):
			return man, nil, fmt.Sprintf("the conversation state holds %q, which is not a plain relative path", h.Name)
		case i > 0 && !kept(prefixes, name, dir):
			return man, nil, fmt.Sprintf("the conversation state holds %q, which is not part of a %s conversation", h.Name, a.Preset)
		case h.Size < 0 || h.Size > maxAgentStateUnpacked-total:
			return man, nil, fmt.Sprintf("the conversation state unpacks to more than %d bytes", maxAgentStateUnpacked)
		}
		content, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil || int64(len(content)) != h.Size {
			return man, nil, "the conversation state is truncated"
		}
		total += h.Size
		if i == 0 {
			if err := json.Unmarshal(content, &man); err != nil {
				return man, nil, "the conversation state's manifest is not JSON: " + err.Error()
			}
			if fresh := checkManifest(a, man, now, maxAge); fresh != "" {
				return man, nil, fresh
			}
			continue
		}
		entries = append(entries, stateEntry{name: name, dir: dir, content: content})
	}
	if man.Version == 0 {
		return man, nil, "the conversation state has no manifest first"
	}
	return man, entries, ""
}

// checkManifest says why a state's manifest cannot serve agent a, or "".
func checkManifest(a contract.Agent, man agentStateManifest, now time.Time, maxAge time.Duration) string {
	switch age := now.Sub(man.PackedAt); {
	case man.Version != agentStateVersion:
		return fmt.Sprintf("the conversation state is of version %d, not %d", man.Version, agentStateVersion)
	case man.Conversation.Preset != a.Preset:
		return fmt.Sprintf("the conversation state is %s's, and the agent is now %s", man.Conversation.Preset, a.Preset)
	case man.CLIVersion != cliVersion(a.Preset):
		return fmt.Sprintf("the conversation state was written by %s %s, and this runner has %s", a.Preset, man.CLIVersion, cliVersion(a.Preset))
	case age > maxAge:
		return fmt.Sprintf("the conversation state is %s old, older than the %s kept", age.Round(time.Minute), maxAge)
	case age < -time.Minute:
		return "the conversation state is dated in the future"
	}
	if err := man.Conversation.Validate(a); err != nil {
		return "the conversation state's manifest: " + err.Error()
	}
	return ""
}

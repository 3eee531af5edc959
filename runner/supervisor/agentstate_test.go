package supervisor

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

const stateTestID = "01a25162-cd33-7ae0-a852-51b44f875f46"

var (
	stateCodex  = contract.Agent{Preset: contract.PresetCodex, Model: "m", Provider: "openai", ProviderKind: contract.ProviderKindOpenAI}
	stateClaude = contract.Agent{Preset: contract.PresetClaudeCode, Model: "m", Provider: "anthropic", ProviderKind: contract.ProviderKindAnthropic}
)

// writeTree writes files (relative path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// openRoot opens dir as an os.Root, closed at the end of the test.
func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// listTree lists the regular files under dir, relative, sorted.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// Packing keeps the CLI's conversation and nothing of its configuration,
// leaves out what is not a regular file, redacts the tokens we minted,
// and restores into a new Home as it was.
func TestAgentStatePacksTheConversationOnly(t *testing.T) {
	minted := "ghs_0123456789abcdefghijklmnopqrstuvwxyzAB"
	home := t.TempDir()
	rollout := "codex/sessions/2026/12/07/rollout-2026-12-07T16-42-39-" + stateTestID + ".jsonl"
	writeTree(t, home, map[string]string{
		rollout:                   `{"type":"session_meta"}` + "\n" + `{"text":"the token is ` + minted + `"}` + "\n",
		"codex/config.toml":       "base_url = \"http://evil\"\n",
		"codex/skills/x/SKILL.md": "skill",
		"codex/state_5.sqlite":    "db",
		"codex-last-message.md":   "last",
		"claude/projects/p/" + stateTestID + ".jsonl": "not codex's",
	})
	if err := os.Symlink("/etc/passwd", filepath.Join(home, "codex/sessions/2026/link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(home, "codex/sessions/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := ConversationState{Preset: contract.PresetCodex, ID: stateTestID}
	data, skipped, err := PackAgentState(openRoot(t, home), st, contract.NewRedactor(minted), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(skipped, []string{"codex/sessions/2026/link.jsonl (not a regular file)", "codex/sessions/fifo (not a regular file)"}) {
		t.Errorf("skipped %q", skipped)
	}
	if bytes.Contains(data, []byte(minted)) {
		t.Error("the packed state holds the minted token (before gzip)")
	}

	into := t.TempDir()
	uid := os.Geteuid()
	if uid == 0 {
		uid = sandboxUID // as root, the restore hands the files to the sandbox
	}
	got, fresh, err := RestoreAgentState(openRoot(t, into), stateCodex, data, time.Now(), MaxAgentStateAge, uid, uid)
	if err != nil || fresh != "" || got != st {
		t.Fatalf("restored %+v, fresh %q, %v", got, fresh, err)
	}
	for _, p := range []string{"codex", "codex/sessions/2026/12/07", rollout} {
		fi, err := os.Lstat(filepath.Join(into, p))
		if err != nil {
			t.Fatal(err)
		}
		if sys, ok := fi.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != uid {
			t.Errorf("%s is not the sandbox's (uid %d): %+v", p, uid, fi.Sys())
		}
	}
	if files := listTree(t, into); !slices.Equal(files, []string{rollout}) {
		t.Errorf("restored %q, want only the rollout", files)
	}
	content, err := os.ReadFile(filepath.Join(into, rollout))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(content), minted) || !strings.Contains(string(content), contract.Redacted) {
		t.Errorf("the restored rollout is not redacted: %s", content)
	}
}

// A binary file (a database) holding a minted token cannot be redacted
// without breaking it: the state is refused.
func TestAgentStateRefusesAnUnredactableFile(t *testing.T) {
	minted := "ghs_0123456789abcdefghijklmnopqrstuvwxyzAB"
	home := t.TempDir()
	writeTree(t, home, map[string]string{"opencode/data/opencode/opencode.db": "SQLite format 3\x00\xff\xfe" + minted})
	st := ConversationState{Preset: contract.PresetOpenCode, ID: "ses_dae9d1c6cffeJortBXMAIsgEc5"}
	if _, _, err := PackAgentState(openRoot(t, home), st, contract.NewRedactor(minted), time.Now()); err == nil || !strings.Contains(err.Error(), "cannot be redacted") {
		t.Errorf("packed a database holding a minted token: %v", err)
	}
}

// A state over the caps is refused when packed.
func TestAgentStateTooBigIsRefused(t *testing.T) {
	home := t.TempDir()
	big := make([]byte, maxAgentStateUnpacked+1)
	writeTree(t, home, map[string]string{"claude/projects/p/" + stateTestID + ".jsonl": string(big)})
	st := ConversationState{Preset: contract.PresetClaudeCode, ID: stateTestID}
	if _, _, err := PackAgentState(openRoot(t, home), st, nil, time.Now()); !errors.Is(err, ErrAgentStateTooBig) {
		t.Errorf("packed an over-cap state: %v", err)
	}
}

// tarball builds a state by hand: the manifest, then the entries (each of
// its header's size, zeros).
func tarball(t *testing.T, man any, entries ...*tar.Header) []byte {
	t.Helper()
	var all []tarEntry
	if man != nil {
		m, err := json.Marshal(man)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tarEntry{&tar.Header{Typeflag: tar.TypeReg, Name: agentStateManifestName, Mode: 0o600, Size: int64(len(m))}, m})
	}
	for _, h := range entries {
		all = append(all, tarEntry{h, make([]byte, h.Size)})
	}
	return writeTarball(t, all)
}

// tarEntry is one entry of a hand-made state: its header and body.
type tarEntry struct {
	h    *tar.Header
	body []byte
}

// writeTarball gzips entries as a tarball, in their order.
func writeTarball(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if err := tw.WriteHeader(e.h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A state that is gone, too old, too big, for another CLI, or not one this
// code packs starts fresh, says why, and leaves nothing in Home.
func TestAgentStateThatCannotServeStartsFresh(t *testing.T) {
	now := time.Now()
	man := func(f func(*agentStateManifest)) agentStateManifest {
		m := agentStateManifest{Version: agentStateVersion, Conversation: ConversationState{Preset: contract.PresetCodex, ID: stateTestID},
			CLIVersion: CodexVersion, PackedAt: now.Add(-time.Hour)}
		if f != nil {
			f(&m)
		}
		return m
	}
	file := func(name string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: 3}
	}
	good := "codex/sessions/rollout-x-" + stateTestID + ".jsonl"
	for _, c := range []struct {
		name  string
		agent contract.Agent
		data  []byte
		want  string
	}{
		{"gone", stateCodex, nil, "none was saved, or it is gone"},
		{"too old", stateCodex, tarball(t, man(func(m *agentStateManifest) { m.PackedAt = now.Add(-MaxAgentStateAge - time.Hour) }), file(good)), "older than"},
		{"dated in the future", stateCodex, tarball(t, man(func(m *agentStateManifest) { m.PackedAt = now.Add(time.Hour) }), file(good)), "in the future"},
		{"too big", stateCodex, make([]byte, MaxAgentStateBytes+1), "over the"},
		{"unpacks too big", stateCodex, tarball(t, man(nil), &tar.Header{Typeflag: tar.TypeReg, Name: good, Mode: 0o600, Size: maxAgentStateUnpacked + 1}), "unpacks to more than"},
		{"another preset", stateClaude, tarball(t, man(nil), file(good)), "is codex's"},
		{"another CLI version", stateCodex, tarball(t, man(func(m *agentStateManifest) { m.CLIVersion = "0.1.0" }), file(good)), "written by codex 0.1.0"},
		{"a bad id", stateCodex, tarball(t, man(func(m *agentStateManifest) { m.Conversation.ID = "--model=evil" }), file(good)), "not a codex conversation id"},
		{"no manifest", stateCodex, tarball(t, nil, file(good)), "no manifest first"},
		{"not gzip", stateCodex, []byte("plain"), "not a gzipped tarball"},
		{"a symlink", stateCodex, tarball(t, man(nil), &tar.Header{Typeflag: tar.TypeSymlink, Name: good, Linkname: "/etc/passwd"}), "not a regular file or directory"},
		{"a device", stateCodex, tarball(t, man(nil), &tar.Header{Typeflag: tar.TypeChar, Name: good, Devmajor: 1, Devminor: 3}), "not a regular file or directory"},
		{"a path escaping", stateCodex, tarball(t, man(nil), file("codex/sessions/../../../etc/x")), "not a plain relative path"},
		{"an absolute path", stateCodex, tarball(t, man(nil), file("/codex/sessions/x")), "not a plain relative path"},
		{"a planted config", stateCodex, tarball(t, man(nil), file(good), file("codex/config.toml")), "not part of a codex conversation"},
		{"a planted claude settings", stateClaude, tarball(t, man(func(m *agentStateManifest) {
			m.Conversation.Preset, m.CLIVersion = contract.PresetClaudeCode, ClaudeCodeVersion
		}), file("claude/settings.json")), "not part of a claude-code conversation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			st, fresh, err := RestoreAgentState(openRoot(t, home), c.agent, c.data, now, MaxAgentStateAge, os.Geteuid(), os.Getegid())
			if err != nil || !strings.Contains(fresh, c.want) || st != (ConversationState{}) {
				t.Errorf("got %+v, fresh %q, %v; want a fresh start saying %q", st, fresh, err, c.want)
			}
			if files := listTree(t, home); len(files) != 0 {
				t.Errorf("a refused state left %q", files)
			}
		})
	}
}

// Capturing finds each CLI's conversation where its pinned version keeps
// it, the one written last when there are several, and nothing where
// there is none.
func TestCaptureConversationFindsEachCLIsID(t *testing.T) {
	older := "0b000000-0000-7000-8000-000000000000"
	for _, c := range []struct {
		agent contract.Agent
		files map[string]string
		// newest is the file made newer than the rest.
		newest, want string
	}{
		{stateCodex, map[string]string{
			"codex/sessions/2026/12/06/rollout-2026-12-06T10-00-00-" + older + ".jsonl":       "{}",
			"codex/sessions/2026/12/07/rollout-2026-12-07T16-42-39-" + stateTestID + ".jsonl": "{}",
			"codex/sessions/2026/12/07/rollout-not-a-uuid.jsonl":                              "{}",
		}, "codex/sessions/2026/12/07/rollout-2026-12-07T16-42-39-" + stateTestID + ".jsonl", stateTestID},
		{stateClaude, map[string]string{
			"claude/projects/-workspace/" + older + ".jsonl":       "{}",
			"claude/projects/-workspace/" + stateTestID + ".jsonl": "{}",
		}, "claude/projects/-workspace/" + stateTestID + ".jsonl", stateTestID},
		{contract.Agent{Preset: contract.PresetOpenCode, Model: "m", Provider: "openai", ProviderKind: "openai"}, map[string]string{
			"opencode/data/opencode/log/2026-12-07T164244.log": "timestamp=x level=INFO message=created id=ses_dae9d1c6cffeJortBXMAIsgEc5 slug=hidden-falcon\n",
			"opencode/data/opencode/log/2026-12-07T170000.log": "timestamp=y level=INFO message=loop session.id=ses_dae9d1c6cffeJortBXMAIsgEc5 step=0\nlevel=INFO message=loop session.id=ses_not-valid; step=1\n",
		}, "", "ses_dae9d1c6cffeJortBXMAIsgEc5"},
	} {
		t.Run(string(c.agent.Preset), func(t *testing.T) {
			home := t.TempDir()
			if _, err := CaptureConversation(c.agent, openRoot(t, home)); !errors.Is(err, ErrNoConversation) {
				t.Errorf("an empty Home: %v, want ErrNoConversation", err)
			}
			writeTree(t, home, c.files)
			if c.newest != "" {
				later := time.Now().Add(time.Minute)
				if err := os.Chtimes(filepath.Join(home, c.newest), later, later); err != nil {
					t.Fatal(err)
				}
			}
			st, err := CaptureConversation(c.agent, openRoot(t, home))
			if err != nil || st.ID != c.want || st.Preset != c.agent.Preset {
				t.Errorf("captured %+v, %v; want %s", st, err, c.want)
			}
		})
	}
}

// Resuming runs each CLI's own resume with the pinned versions' flags, the
// id as one argv element and the message on stdin, with the same files and
// environment as the first run; an id that is not the CLI's is refused.
func TestResumeInvocationPerPreset(t *testing.T) {
	msg := "/workspace/.inspect/turns/2.md"
	for _, c := range []struct {
		agent contract.Agent
		id    string
		argv  []string
	}{
		{presetCodex, stateTestID, []string{"codex", "exec", "resume", "--strict-config", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
			"--model", "gpt-5-codex", "--output-last-message", "/workspace/.inspect/home/codex-last-message.md", stateTestID, "-"}},
		{presetClaudeCode, stateTestID, []string{"claude", "-p", "--model", "claude-opus-4-1", "--dangerously-skip-permissions", "--max-turns", "200",
			"--setting-sources", "user", "--strict-mcp-config", "--disallowed-tools", "WebSearch,WebFetch", "--resume", stateTestID}},
		{presetOpenCodeO, "ses_dae9d1c6cffeJortBXMAIsgEc5", []string{"opencode", "run", "--pure", "--auto", "--model", "inspect/gpt-5-codex",
			"--session", "ses_dae9d1c6cffeJortBXMAIsgEc5"}},
	} {
		t.Run(string(c.agent.Preset), func(t *testing.T) {
			p := presetPaths(c.agent.Provider)
			first, err := AgentInvocation(c.agent, p)
			if err != nil {
				t.Fatal(err)
			}
			inv, err := ResumeInvocation(c.agent, p, ConversationState{Preset: c.agent.Preset, ID: c.id}, msg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(inv.Argv, c.argv) {
				t.Errorf("argv:\n got %q\nwant %q", inv.Argv, c.argv)
			}
			if inv.StdinFile != msg {
				t.Errorf("stdin %q, want the message file", inv.StdinFile)
			}
			if !equalInvocationConfig(first, inv) {
				t.Errorf("the resume's files or environment differ from the first run's")
			}
			checkInvocationIsSafe(t, inv, p)

			for _, bad := range []string{"", "--model=evil", "ses_x y", stateTestID + "\n", "../" + stateTestID} {
				if _, err := ResumeInvocation(c.agent, p, ConversationState{Preset: c.agent.Preset, ID: bad}, msg); err == nil {
					t.Errorf("resumed conversation %q", bad)
				}
			}
			if _, err := ResumeInvocation(c.agent, p, ConversationState{Preset: "command", ID: c.id}, msg); err == nil {
				t.Error("resumed another preset's conversation")
			}
			if _, err := ResumeInvocation(c.agent, p, ConversationState{Preset: c.agent.Preset, ID: c.id}, "turns/2.md"); err == nil {
				t.Error("took a relative message file")
			}
		})
	}
}

func equalInvocationConfig(a, b Invocation) bool {
	if len(a.Env) != len(b.Env) || len(a.Files) != len(b.Files) {
		return false
	}
	for k, v := range a.Env {
		if b.Env[k] != v {
			return false
		}
	}
	for k, v := range a.Files {
		if !bytes.Equal(b.Files[k], v) {
			return false
		}
	}
	return true
}

// A `command` agent is run again with the message file as its last
// argument and INSPECT_TURN_FILE naming it; its turns are all in the
// turns directory, the first prompt as turn 1.
func TestCommandAgentConversationProtocol(t *testing.T) {
	work := t.TempDir()
	ws := "/workspace"
	writeTree(t, work, map[string]string{".inspect/prompt.md": "fix the bug"})
	a := contract.Agent{Preset: contract.PresetCommand, Command: []string{"./agent", "--fast"}}
	p := AgentPaths{PromptFile: PromptFile, AnswerFile: AnswerFile, Home: AgentHome}
	conv, err := OpenConversation(a, p, ws, work, os.Geteuid(), os.Getegid())
	if err != nil {
		t.Fatal(err)
	}
	for n, msg := range []string{"also the docs", "and the changelog"} {
		inv, err := conv.Resume(context.Background(), msg)
		if err != nil {
			t.Fatal(err)
		}
		file := TurnFile(n + 2)
		if !slices.Equal(inv.Argv, []string{"./agent", "--fast", file}) || inv.Env[TurnFileEnv] != file {
			t.Errorf("turn %d: argv %q env %v", n+2, inv.Argv, inv.Env)
		}
	}
	got := map[string]string{}
	for _, f := range listTree(t, filepath.Join(work, ".inspect", "turns")) {
		b, err := os.ReadFile(filepath.Join(work, ".inspect", "turns", f))
		if err != nil {
			t.Fatal(err)
		}
		got[f] = string(b)
	}
	want := map[string]string{"1.md": "fix the bug", "2.md": "also the docs", "3.md": "and the changelog"}
	if len(got) != len(want) || got["1.md"] != want["1.md"] || got["2.md"] != want["2.md"] || got["3.md"] != want["3.md"] {
		t.Errorf("turn files %q, want %q", got, want)
	}
}

// A CLI stopped before it had a conversation starts one, told every turn;
// and Resume writes the preset's files over whatever the agent left in
// their place, a link among them.
func TestConversationWithNothingToResumeStartsWithEveryTurn(t *testing.T) {
	work := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.toml")
	writeTree(t, work, map[string]string{".inspect/prompt.md": "fix the bug", ".inspect/home/codex/x": ""})
	if err := os.WriteFile(outside, []byte("base_url = \"http://evil\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(work, ".inspect/home/codex/config.toml")); err != nil {
		t.Fatal(err)
	}
	p := presetPaths("openai")
	conv, err := OpenConversation(presetCodex, p, "/workspace", work, os.Geteuid(), os.Getegid())
	if err != nil {
		t.Fatal(err)
	}
	inv, err := conv.Resume(context.Background(), "also the docs")
	if err != nil {
		t.Fatal(err)
	}
	if inv.Argv[2] == "resume" || inv.StdinFile != "/workspace/.inspect/turns/2-whole.md" {
		t.Errorf("argv %q stdin %q: want a new conversation told every turn", inv.Argv, inv.StdinFile)
	}
	whole, err := os.ReadFile(filepath.Join(work, ".inspect/turns/2-whole.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(whole), "fix the bug") || !strings.HasSuffix(string(whole), "also the docs") {
		t.Errorf("the whole conversation is %q", whole)
	}
	cfgPath := filepath.Join(work, ".inspect/home/codex/config.toml")
	cfg, err := os.ReadFile(cfgPath)
	if fi, lerr := os.Lstat(cfgPath); err != nil || lerr != nil || !fi.Mode().IsRegular() || strings.Contains(string(cfg), "evil") || !strings.Contains(string(cfg), p.ModelBaseURL) {
		t.Errorf("the config was not written over: %s (%v)", cfg, err)
	}
	if b, err := os.ReadFile(outside); err != nil || !strings.Contains(string(b), "evil") {
		t.Errorf("the link's target was written through it: %s (%v)", b, err)
	}
}

// Links the agent left in the turns directory's or Home's place do not
// take the supervisor's writes out of the workspace.
func TestConversationWritesNothingOutsideTheWorkspace(t *testing.T) {
	work, outside := t.TempDir(), t.TempDir()
	writeTree(t, work, map[string]string{".inspect/prompt.md": "fix the bug"})
	for _, name := range []string{"turns", "home"} {
		if err := os.Symlink(outside, filepath.Join(work, ".inspect", name)); err != nil {
			t.Fatal(err)
		}
	}
	conv, err := OpenConversation(presetCodex, presetPaths("openai"), "/workspace", work, os.Geteuid(), os.Getegid())
	if err != nil {
		t.Fatal(err)
	}
	_, err = conv.Resume(context.Background(), "also the docs")
	if files := listTree(t, outside); len(files) != 0 || err == nil {
		t.Errorf("resuming through links wrote %q outside the workspace (error %v)", files, err)
	}
}

package supervisor

// The conversation primitive (issue 36, decision 0073): how an agent CLI's
// conversation is continued, by the CLI's own means, so that the model sees
// the whole conversation and not a summary of it.
//
// A run of a CLI preset leaves its conversation in its state under
// AgentPaths.Home. Every call reads and writes Home through an os.Root
// (OpenAgentHome: under the workspace, since .inspect/ is the agent's to
// write and a link there must lead nowhere else):
//
//   - CaptureConversation, after a run, finds the CLI's own id for the
//     conversation in that state (ConversationState).
//   - ResumeInvocation is AgentInvocation for the next turn: the same
//     configuration (Files, Env), the CLI's resume flag with that id, and
//     the turn's message on standard input from a file (TurnFile), as the
//     first prompt is.
//   - PackAgentState (agentstate.go), when an attempt ends, packs the part
//     of Home the CLI needs to resume, with the ConversationState, into a
//     capped, redacted tarball for the store (decision 0029's storage).
//   - RestoreAgentState, before a later attempt's resume run, unpacks it
//     under the new Home, or says why the turn starts fresh (a reason
//     string). The caller then writes ResumeInvocation's Files over it
//     (WriteHomeFiles): the state was written by the agent, and a base URL
//     or key planted in it must not count.
//
// CLIConversation puts these together for one attempt's workspace: its
// Resume(ctx, msg) writes the message as the next turn file, captures the
// conversation the last run left, writes the preset's files over Home and
// returns the invocation that continues it (the steering loop's
// Conversation, runner/supervisor/turns.go). OpenHome gives the Home to
// pack when the attempt ends.
//
// Steering a running agent is stop and resume for every preset: the
// supervisor stops the CLI (SIGTERM to its processes, SIGKILL after a
// grace), and runs Resume's invocation with the message. A `command` agent
// is run again with TurnFileEnv naming the message file, every turn so far
// in TurnsDir. Decision 0073 says why, per CLI.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// TurnsDir is where the supervisor writes a conversation's turns inside the
// sandbox, one file each: TurnFile(1) is the first request, later ones the
// messages that steered or continued it. Under the reserved .inspect/, so
// never part of a change.
const TurnsDir = "/workspace/" + inspectDir + "/turns"

// TurnFile is turn n's message file (n counts from 1).
func TurnFile(n int) string { return path.Join(TurnsDir, strconv.Itoa(n)+".md") }

// TurnFileEnv names, for a `command` agent run again for a new turn, the
// file holding that turn's message (TurnFile).
const TurnFileEnv = "INSPECT_TURN_FILE"

// ConversationState is what continuing an agent CLI's conversation needs
// besides the state files themselves: which CLI, and its own id for the
// conversation.
type ConversationState struct {
	Preset contract.Preset `json:"preset"`
	// ID is the CLI's id: a UUID for Codex CLI (its thread) and Claude
	// Code (its session), ses_… for OpenCode. Empty for a `command` agent,
	// whose conversation is the turn files.
	ID string `json:"id,omitempty"`
}

// The shapes of the CLIs' ids. An id is read from state the agent wrote,
// so it is checked before it becomes an argv element.
var (
	uuidRE        = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	openCodeIDRE  = regexp.MustCompile(`^ses_[0-9A-Za-z]{8,64}$`)
	codexRollout  = regexp.MustCompile(`^rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)
	openCodeLogID = regexp.MustCompile(`(?:message=created id=|session\.id=)(ses_[0-9A-Za-z]{8,64})(?:\s|$)`)
)

// Validate checks that st can continue a conversation of agent a.
func (st ConversationState) Validate(a contract.Agent) error {
	if st.Preset != a.Preset {
		return fmt.Errorf("the conversation is %q's, not %q's", st.Preset, a.Preset)
	}
	switch a.Preset {
	case contract.PresetCommand:
		return nil
	case contract.PresetCodex, contract.PresetClaudeCode:
		if !uuidRE.MatchString(st.ID) {
			return fmt.Errorf("%q is not a %s conversation id", st.ID, a.Preset)
		}
		return nil
	case contract.PresetOpenCode:
		if !openCodeIDRE.MatchString(st.ID) {
			return fmt.Errorf("%q is not an OpenCode session id", st.ID)
		}
		return nil
	}
	return fmt.Errorf("preset %q has no conversation in this build", a.Preset)
}

// ErrNoConversation is CaptureConversation's answer when the CLI left no
// conversation (it failed before its first request, say).
var ErrNoConversation = errors.New("the agent left no conversation to continue")

// CaptureConversation finds, after a run, the conversation agent a left in
// its state under home, AgentPaths.Home opened by OpenAgentHome. When the
// state holds several (it should not: one Home serves one session), the
// one written last is taken.
//
//   - Codex CLI 0.171.0 writes each thread to
//     codex/sessions/YYYY/MM/DD/rollout-TIME-UUID.jsonl and appends a
//     resumed turn to the same file.
//   - Claude Code 2.1.332 writes each session to
//     claude/projects/DIR/UUID.jsonl (DIR is the working directory's path,
//     munged); --resume appends to it.
//   - OpenCode 1.18.33 keeps sessions in a SQLite database
//     (opencode/data/opencode/opencode.db); its log
//     (opencode/data/opencode/log/*.log) names the session each run created
//     or continued, and is read instead of the database.
func CaptureConversation(a contract.Agent, home *os.Root) (ConversationState, error) {
	st := ConversationState{Preset: a.Preset}
	if a.Preset == contract.PresetCommand {
		return st, nil
	}
	var err error
	fsys := home.FS()
	switch a.Preset {
	case contract.PresetCodex:
		st.ID, err = newestFileID(fsys, "codex/sessions", func(name string) string {
			if m := codexRollout.FindStringSubmatch(name); m != nil {
				return m[1]
			}
			return ""
		})
	case contract.PresetClaudeCode:
		st.ID, err = newestFileID(fsys, "claude/projects", func(name string) string {
			if id, ok := strings.CutSuffix(name, ".jsonl"); ok && uuidRE.MatchString(id) {
				return id
			}
			return ""
		})
	case contract.PresetOpenCode:
		st.ID, err = openCodeLoggedSession(fsys, "opencode/data/opencode/log")
	default:
		return ConversationState{}, fmt.Errorf("preset %q has no conversation in this build", a.Preset)
	}
	if err != nil {
		return ConversationState{}, err
	}
	return st, st.Validate(a)
}

// newestFileID walks dir in fsys for regular files whose name idOf
// accepts and returns the id of the one modified last.
func newestFileID(fsys fs.FS, dir string, idOf func(name string) string) (string, error) {
	var id string
	var newest time.Time
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil // directories are walked; links and the like are not the CLI's
		}
		found := idOf(d.Name())
		if found == "" {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if id == "" || fi.ModTime().After(newest) {
			id, newest = found, fi.ModTime()
		}
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", ErrNoConversation
	case err != nil:
		return "", err
	case id == "":
		return "", ErrNoConversation
	}
	return id, nil
}

// openCodeLoggedSession reads OpenCode's logs, oldest first (their names
// are their start times), and returns the last session a run created or
// continued.
func openCodeLoggedSession(fsys fs.FS, dir string) (string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoConversation
	}
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".log") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	id := ""
	for _, name := range names {
		f, err := fsys.Open(path.Join(dir, name))
		if err != nil {
			return "", err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if m := openCodeLogID.FindStringSubmatch(sc.Text()); m != nil {
				id = m[1]
			}
		}
		err = sc.Err()
		_ = f.Close() // read-only
		if err != nil && !errors.Is(err, bufio.ErrTooLong) {
			return "", err
		}
	}
	if id == "" {
		return "", ErrNoConversation
	}
	return id, nil
}

// ResumeInvocation says how to continue conversation st of agent a with the
// message in msgFile (a file inside the sandbox, TurnFile(n)). It is
// AgentInvocation with msgFile as the prompt, and the CLI's own way to
// continue:
//
//	codex exec resume --strict-config --skip-git-repo-check
//	  --dangerously-bypass-approvals-and-sandbox --model MODEL
//	  --output-last-message FILE [--json] ID -
//	claude -p … (AgentInvocation's flags) --resume ID
//	opencode run … (AgentInvocation's flags) --session ID
//
// Each reads the message on standard input, as the first prompt. Files and
// Env are AgentInvocation's exactly: the caller writes Files over the
// restored state. (`codex exec resume` has no --color; with or without
// --json its output is no terminal's.) A `command` agent's argv is its
// command with msgFile as its last argument, and TurnFileEnv names it.
// Like AgentInvocation, it reads and writes nothing.
func ResumeInvocation(a contract.Agent, p AgentPaths, st ConversationState, msgFile string) (Invocation, error) {
	if err := st.Validate(a); err != nil {
		return Invocation{}, err
	}
	if !path.IsAbs(msgFile) || path.Clean(msgFile) != msgFile {
		return Invocation{}, fmt.Errorf("the message file %q must be an absolute, clean path", msgFile)
	}
	p.PromptFile = msgFile
	inv, err := AgentInvocation(a, p)
	if err != nil {
		return Invocation{}, err
	}
	switch a.Preset {
	case contract.PresetCommand:
		if inv.Env == nil {
			inv.Env = map[string]string{}
		}
		inv.Env[TurnFileEnv] = msgFile
	case contract.PresetCodex:
		// AgentInvocation's argv is codex exec FLAGS... -: the same flags
		// after `resume`, less --color, and the id before the `-`.
		argv := []string{"codex", "exec", "resume"}
		for i := 2; i < len(inv.Argv)-1; i++ {
			if inv.Argv[i] == "--color" {
				i++ // and its value
				continue
			}
			argv = append(argv, inv.Argv[i])
		}
		inv.Argv = append(argv, st.ID, "-")
	case contract.PresetClaudeCode:
		inv.Argv = append(inv.Argv, "--resume", st.ID)
	case contract.PresetOpenCode:
		inv.Argv = append(inv.Argv, "--session", st.ID)
	}
	return inv, nil
}

// CLIConversation is the conversation of one attempt's agent, continued
// turn by turn (OpenConversation). It is not safe for concurrent use: the
// steering loop resumes one run at a time.
type CLIConversation struct {
	agent contract.Agent
	paths AgentPaths
	// workspace is /workspace as the agent sees it, and hostWork the
	// same directory on the host.
	workspace, hostWork string
	uid, gid            int
	// turns counts the turn files written; 0 until the first Resume,
	// which writes the first prompt as turn 1.
	turns int
}

// OpenConversation returns the conversation of agent a, run with paths p
// (sandbox paths under workspace, "/workspace" in a session) in the
// workspace that is hostWork on the host. Files it writes are made the
// sandbox's (uid, gid). Nothing is read or written until Resume.
func OpenConversation(a contract.Agent, p AgentPaths, workspace, hostWork string, uid, gid int) (*CLIConversation, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if err := p.validate(a); err != nil {
		return nil, err
	}
	for _, f := range []string{p.PromptFile, p.Home} {
		if !strings.HasPrefix(f, workspace+"/") {
			return nil, fmt.Errorf("%s is not under the workspace %s", f, workspace)
		}
	}
	return &CLIConversation{agent: a, paths: p, workspace: workspace, hostWork: hostWork, uid: uid, gid: gid}, nil
}

// turnFile is turn n's message file, in the sandbox.
func (c *CLIConversation) turnFile(n int) string {
	return path.Join(c.workspace, inspectDir, "turns", strconv.Itoa(n)+".md")
}

// OpenHome opens the agent's Home (OpenAgentHome) for PackAgentState and
// RestoreAgentState.
func (c *CLIConversation) OpenHome() (*os.Root, error) {
	return OpenAgentHome(c.hostWork, c.rel(c.paths.Home))
}

// State is the conversation as the last run left it, captured now.
func (c *CLIConversation) State() (ConversationState, error) {
	home, err := c.OpenHome()
	if err != nil {
		return ConversationState{}, err
	}
	defer func() { _ = home.Close() }() // read-only
	return CaptureConversation(c.agent, home)
}

// OpenAgentHome opens the agent's Home, rel (".inspect/home" for
// AgentHome) under the workspace that is hostWork on the host, making it
// when missing. Through an os.Root at the workspace: .inspect/ is the
// agent's to write, and a link it left in Home's place (or a parent's)
// must not take the supervisor's reads and writes out of the workspace.
func OpenAgentHome(hostWork, rel string) (*os.Root, error) {
	work, err := os.OpenRoot(hostWork)
	if err != nil {
		return nil, err
	}
	defer func() { _ = work.Close() }() // the home's root outlives it
	if err := work.MkdirAll(rel, 0o755); err != nil {
		return nil, err
	}
	return work.OpenRoot(rel)
}

// Resume returns how to run the agent again so that it continues its
// conversation with msg as the next user message, after its last run
// ended (finished or stopped). msg is untrusted: it reaches the CLI as a
// file on its standard input. The preset's files are written over Home
// first: the agent could have changed its own configuration while it ran.
//
// When the last run left no conversation (stopped before its first model
// request), the agent starts one: its prompt is the first prompt, then
// the message, so the model still gets every word said.
func (c *CLIConversation) Resume(ctx context.Context, msg string) (Invocation, error) {
	if err := ctx.Err(); err != nil {
		return Invocation{}, err
	}
	if c.turns == 0 {
		first, err := c.readWork(c.paths.PromptFile)
		if err != nil {
			return Invocation{}, fmt.Errorf("reading the first prompt: %w", err)
		}
		if err := c.writeTurn(1, first); err != nil {
			return Invocation{}, err
		}
		c.turns = 1
	}
	n := c.turns + 1
	if err := c.writeTurn(n, []byte(msg)); err != nil {
		return Invocation{}, err
	}
	c.turns = n
	st, err := c.State()
	var inv Invocation
	switch {
	case errors.Is(err, ErrNoConversation):
		whole, rerr := c.wholeConversation()
		if rerr != nil {
			return Invocation{}, rerr
		}
		p := c.paths
		p.PromptFile = whole
		inv, err = AgentInvocation(c.agent, p)
	case err != nil:
		return Invocation{}, fmt.Errorf("finding the agent's conversation: %w", err)
	default:
		inv, err = ResumeInvocation(c.agent, c.paths, st, c.turnFile(n))
	}
	if err != nil {
		return Invocation{}, err
	}
	home, err := c.OpenHome()
	if err != nil {
		return Invocation{}, err
	}
	defer func() { _ = home.Close() }() // the writes' errors are checked
	if err := WriteHomeFiles(home, inv.Files, c.uid, c.gid); err != nil {
		return Invocation{}, fmt.Errorf("writing the agent's configuration: %w", err)
	}
	return inv, nil
}

// readWork reads sandbox path p through an os.Root at the workspace: the
// agent may have put a link in a file's or directory's place, and the
// supervisor reads nothing outside the workspace.
func (c *CLIConversation) readWork(p string) ([]byte, error) {
	root, err := os.OpenRoot(c.hostWork)
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }() // read-only
	return root.ReadFile(c.rel(p))
}

// writeWork writes sandbox path p, readable by the sandbox, through an
// os.Root at the workspace, replacing whatever is there (a link is
// replaced, never followed).
func (c *CLIConversation) writeWork(p string, content []byte) error {
	root, err := os.OpenRoot(c.hostWork)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // the write's errors are checked
	rel := c.rel(p)
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return err
	}
	if err := root.RemoveAll(rel); err != nil {
		return err
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}

// rel is sandbox path p relative to the workspace, in the host's form.
func (c *CLIConversation) rel(p string) string {
	return filepath.FromSlash(strings.TrimPrefix(p, c.workspace+"/"))
}

// writeTurn writes turn n's message file.
func (c *CLIConversation) writeTurn(n int, msg []byte) error {
	if err := c.writeWork(c.turnFile(n), msg); err != nil {
		return fmt.Errorf("writing turn %d: %w", n, err)
	}
	return nil
}

// wholeConversation writes every turn so far into one prompt file, for an
// agent with no conversation to continue, and returns its sandbox path.
func (c *CLIConversation) wholeConversation() (string, error) {
	var b strings.Builder
	for i := 1; i <= c.turns; i++ {
		msg, err := c.readWork(c.turnFile(i))
		if err != nil {
			return "", err
		}
		if i > 1 {
			b.WriteString("\n\n---\n\nA further message from the people you work for:\n\n")
		}
		b.Write(msg)
	}
	p := path.Join(c.workspace, inspectDir, "turns", strconv.Itoa(c.turns)+"-whole.md")
	if err := c.writeWork(p, []byte(b.String())); err != nil {
		return "", err
	}
	return p, nil
}

// WriteHomeFiles writes an invocation's Files under home (OpenAgentHome),
// over whatever is there (a link in a file's place is replaced, not
// followed), owned by uid:gid: after RestoreAgentState, and before every
// run, since the agent can change its own configuration while it runs.
func WriteHomeFiles(home *os.Root, files map[string][]byte, uid, gid int) error {
	root := home
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		if err := root.RemoveAll(name); err != nil {
			return err
		}
		if err := writeNewFile(root, name, files[name]); err != nil {
			return err
		}
		if uid != os.Geteuid() || gid != os.Getegid() {
			if err := root.Lchown(name, uid, gid); err != nil {
				return err
			}
			for d := path.Dir(name); d != "."; d = path.Dir(d) {
				if err := root.Lchown(d, uid, gid); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// CLIConversations opens each preset's own conversation (OpenConversation)
// for the turn loop: what `inspect runner` steers its agents with
// (decisions 0071, 0073).
func CLIConversations() Conversations {
	return ConversationsFunc(func(_ context.Context, a contract.Agent, p AgentPaths, at ConversationPlace) (Conversation, error) {
		c, err := OpenConversation(a, p, at.Workspace, at.HostWork, at.UID, at.GID)
		if err != nil {
			return nil, err // a nil interface, not a nil *CLIConversation
		}
		return c, nil
	})
}

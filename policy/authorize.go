package policy

import "time"

// Role is the role_name from GitHub's collaborator-permission API
// (GET /repos/{owner}/{repo}/collaborators/{username}/permission).
type Role string

// The built-in repository roles. Any other non-empty value is a custom
// repository role.
const (
	RoleAdmin    Role = "admin"
	RoleMaintain Role = "maintain"
	RoleWrite    Role = "write"
	RoleTriage   Role = "triage"
	RoleRead     Role = "read"
	RoleNone     Role = "none"
)

// CanWrite reports whether the role may start, retry and cancel sessions.
// Only the built-in write, maintain and admin roles can, matched exactly.
// The app also uses it to keep only writers' comments in a session's
// context.
// A custom repository role inherits from a base role, but role_name gives
// only the custom name, and a custom role based on "read" can look
// harmless or important by name alone; so custom roles are refused, and
// their holders are told to ask for a built-in role.
func CanWrite(r Role) bool {
	switch r {
	case RoleWrite, RoleMaintain, RoleAdmin:
		return true
	}
	return false
}

// Facts is everything Authorize decides on.
type Facts struct {
	SenderLogin string
	SenderType  string   // "User", "Bot", "Organization" from the webhook payload
	SenderRole  Role     // role_name from the permission API; "" if unknown
	AllowedBots []string // server-side exact logins, such as "renovate[bot]"
	Target      Target
	// ServerPaused and RepoPaused are the two pause switches (server config,
	// and the repo config's `enabled: false`).
	ServerPaused, RepoPaused bool
	RepoArchived             bool
	ForkOptIn                bool // the server lets this repo accept fork PRs
	Subcommand               Subcommand
}

// Target is the issue or pull request the command was written on, or the
// branch a dashboard run names.
type Target struct {
	IsPR bool
	// IsBranch: a branch named on the dashboard, with no issue or pull
	// request behind it. A branch has no state, lock or fork, so only the
	// switches, the bot rule and the permission apply to it; the rest of
	// Target is unused.
	IsBranch bool
	State    string // "open" or "closed"; anything but "open" counts as closed
	Merged   bool
	Locked   bool
	// A pull request is from a fork when the two differ (ignoring ASCII
	// case). An empty HeadRepoFullName means the fork was deleted, which
	// counts as a fork.
	HeadRepoFullName, BaseRepoFullName string
}

// Reason is a stable machine code for a refusal.
type Reason string

const (
	ReasonServerPaused           Reason = "server_paused"
	ReasonRepoPaused             Reason = "repo_paused"
	ReasonRepoArchived           Reason = "repo_archived"
	ReasonInsufficientPermission Reason = "insufficient_permission"
	ReasonBotNotAllowed          Reason = "bot_not_allowed"
	ReasonForkPR                 Reason = "fork_pr"
	ReasonClosed                 Reason = "closed"
	ReasonMerged                 Reason = "merged"
	ReasonLocked                 Reason = "locked"
)

// Decision is Authorize's (and DailyBudget's) answer. When Allowed is
// false, Reason says why, and the other fields are the facts the refusal's
// words are made of (app/render.Refusal writes them, decision 0047); an
// allowed decision carries none. The facts are as they came: Sender and
// ForkRepo are untrusted text, for the renderer to reduce.
type Decision struct {
	Allowed bool
	Reason  Reason
	// Sender is the login of the person or bot refused.
	Sender string
	// Subcommand is what was refused (Run for an unknown one).
	Subcommand Subcommand
	// Role is the sender's role (insufficient_permission).
	Role Role
	// PullRequest: the target is a pull request, not an issue (closed,
	// locked).
	PullRequest bool
	// ForkRepo is the fork's full name, "" when the fork was deleted
	// (fork_pr).
	ForkRepo string
	// Started is how many sessions the repository started in the last 24
	// hours, DailyCap its daily cap, and NextSlot when the oldest of them
	// turns 24 hours old, zero when that is unknown or already past
	// (daily_budget).
	Started, DailyCap int
	NextSlot          time.Time
	// MoneyScope is the scope whose money budget was reached, Spent that
	// scope's spend in US dollars over the last 24 hours and MoneyCap its
	// budget (money_budget); NextSlot then is when the spend falls below
	// the budget as the sessions counted age out, zero when that is
	// unknown.
	MoneyScope      Scope
	Spent, MoneyCap float64
}

// Authorize decides whether the sender may have Inspect act on the command.
//
// Which checks apply depends on the subcommand:
//
//	check                     run, retry   cancel, stop   status, help
//	paused (server, repo)     yes          no             no
//	archived                  yes          no             no
//	bot allowlist             yes          yes            yes
//	write permission          yes          yes            no
//	merged, closed, locked    yes          no             no
//	fork                      yes          no             no
//
// A message that steers a running session (decision 0071) is a run: it
// asks the agent for work, and is admitted as a comment that starts a
// session is.
//
// Pausing and archiving stop new work; cancelling only stops work, so it is
// always safe, and help and status change nothing. Status shows nothing the
// sender cannot already read in the repository. Any other subcommand value,
// including "", gets the strictest rules, those of run.
//
// The checks run in this order, and the first that fails gives the reason:
//  1. paused, server then repo: a global switch that says nothing about the
//     sender, so a paused server answers everyone the same way and reveals
//     nothing about permissions;
//  2. archived: a property of the repository, again the same for everyone;
//  3. bots: a bot that is not allowlisted gets no further, whatever its role;
//  4. permission: before the target, so that someone without write access
//     learns nothing from Inspect about forks or states;
//  5. the target's state: merged, then closed, then locked (a branch has
//     none, nor a fork);
//  6. fork, last, because its remedy (a maintainer pushing the branch)
//     only helps when everything else is fine.
//
// An allowlisted bot is trusted without a role check: GitHub Apps are often
// not collaborators, so the permission API gives them no role, and the
// server's administrators allowlisted the exact login on purpose.
func Authorize(f Facts) Decision {
	sub := f.Subcommand
	switch sub {
	case Run, Retry, Cancel, Stop, Status, Help:
	default:
		sub = Run
	}
	deny := func(r Reason) Decision {
		return Decision{Reason: r, Sender: f.SenderLogin, Subcommand: sub}
	}
	newWork := sub == Run || sub == Retry

	if newWork {
		switch {
		case f.ServerPaused:
			return deny(ReasonServerPaused)
		case f.RepoPaused:
			return deny(ReasonRepoPaused)
		case f.RepoArchived:
			return deny(ReasonRepoArchived)
		}
	}

	trustedBot := false
	if IsBotSender(f.SenderLogin, f.SenderType) {
		if !botAllowed(f.SenderLogin, f.AllowedBots) {
			return deny(ReasonBotNotAllowed)
		}
		trustedBot = true
	}
	if sub == Help || sub == Status {
		return Decision{Allowed: true}
	}

	if !trustedBot && !CanWrite(f.SenderRole) {
		d := deny(ReasonInsufficientPermission)
		d.Role = f.SenderRole
		return d
	}
	if sub == Cancel || sub == Stop { // both end what runs; neither starts work
		return Decision{Allowed: true}
	}

	t := f.Target
	if t.IsBranch {
		return Decision{Allowed: true}
	}
	var d Decision
	switch {
	case t.Merged:
		d = deny(ReasonMerged)
	case !asciiEqualFold(t.State, "open"):
		d = deny(ReasonClosed)
	case t.Locked:
		d = deny(ReasonLocked)
	case t.IsPR && IsFork(t.HeadRepoFullName, t.BaseRepoFullName) && !f.ForkOptIn:
		d = deny(ReasonForkPR)
		d.ForkRepo = t.HeadRepoFullName
	default:
		return Decision{Allowed: true}
	}
	d.PullRequest = t.IsPR
	return d
}

// IsOwnApp reports whether the sender is this GitHub App's own bot user:
// type "Bot" and login exactly "<appSlug>[bot]", ignoring ASCII case (GitHub
// logins are case-insensitive).
func IsOwnApp(senderLogin, senderType, appSlug string) bool {
	return appSlug != "" && asciiEqualFold(senderType, "Bot") && asciiEqualFold(senderLogin, appSlug+"[bot]")
}

// IsBotSender reports whether a sender is a bot for these rules: the
// payload says Bot, or the login ends in "[bot]" (ASCII case ignored). A
// login merely ending in "[bot]" is never trusted as a person.
func IsBotSender(login, typ string) bool {
	return asciiEqualFold(typ, "Bot") || hasSuffixFold(login, "[bot]")
}

// botAllowed compares the whole login with each allowlist entry, ignoring
// ASCII case only. There is no prefix or suffix matching of any kind.
func botAllowed(login string, allowed []string) bool {
	if login == "" {
		return false
	}
	for _, a := range allowed {
		if asciiEqualFold(login, a) {
			return true
		}
	}
	return false
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && asciiEqualFold(s[len(s)-len(suffix):], suffix)
}

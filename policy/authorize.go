package policy

import (
	"fmt"
	"strings"
)

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

// Decision is Authorize's answer. When Allowed is false, Reply is one
// polite Markdown message for the sender saying why and what to do; it is
// built from the facts only and never holds errors or secrets.
type Decision struct {
	Allowed bool
	Reason  Reason
	Reply   string
}

// Authorize decides whether the sender may have Inspect act on the command.
//
// Which checks apply depends on the subcommand:
//
//	check                     run, retry   cancel   status, help
//	paused (server, repo)     yes          no       no
//	archived                  yes          no       no
//	bot allowlist             yes          yes      yes
//	write permission          yes          yes      no
//	merged, closed, locked    yes          no       no
//	fork                      yes          no       no
//
// Pausing and archiving stop new work; cancelling only stops work, so it is
// always safe, and help and status change nothing. Status shows nothing the
// sender cannot already read in the repository. Any other subcommand value,
// including "", gets the strictest rules, those of run.
//
// The checks run in this order, and the first that fails gives the reply:
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
	case Run, Retry, Cancel, Status, Help:
	default:
		sub = Run
	}
	who := mention(f.SenderLogin)
	newWork := sub == Run || sub == Retry

	if newWork {
		switch {
		case f.ServerPaused:
			return deny(ReasonServerPaused, who,
				"Inspect is paused on this server, so it isn't starting sessions right now. Please try again later.")
		case f.RepoPaused:
			return deny(ReasonRepoPaused, who,
				"Inspect is turned off for this repository (`enabled: false` in its Inspect configuration), so it isn't starting sessions here. A maintainer can turn it back on.")
		case f.RepoArchived:
			return deny(ReasonRepoArchived, who,
				"this repository is archived, so Inspect can't push changes to it. A repository admin can unarchive it first.")
		}
	}

	trustedBot := false
	if IsBotSender(f.SenderLogin, f.SenderType) {
		if !botAllowed(f.SenderLogin, f.AllowedBots) {
			return deny(ReasonBotNotAllowed, who,
				"Inspect doesn't take commands from bots unless the Inspect server's administrators allowlist the bot's exact login. A person with write access can run the command instead.")
		}
		trustedBot = true
	}
	if sub == Help || sub == Status {
		return Decision{Allowed: true}
	}

	if !trustedBot && !CanWrite(f.SenderRole) {
		return deny(ReasonInsufficientPermission, who, permissionText(sub, f.SenderRole))
	}
	if sub == Cancel {
		return Decision{Allowed: true}
	}

	t := f.Target
	if t.IsBranch {
		return Decision{Allowed: true}
	}
	thing := "issue"
	if t.IsPR {
		thing = "pull request"
	}
	switch {
	case t.Merged:
		return deny(ReasonMerged, who,
			"this pull request is already merged, so Inspect won't start a session on it. Open a new issue or pull request and run the command there.")
	case !asciiEqualFold(t.State, "open"):
		return deny(ReasonClosed, who, fmt.Sprintf(
			"this %s is closed, so Inspect won't start a session on it. Reopen it first, or run the command on an open one.", thing))
	case t.Locked:
		return deny(ReasonLocked, who, fmt.Sprintf(
			"this %s's conversation is locked, so Inspect won't start a session on it. A maintainer can unlock it first.", thing))
	}
	if t.IsPR && IsFork(t.HeadRepoFullName, t.BaseRepoFullName) && !f.ForkOptIn {
		from := "a fork that has since been deleted"
		if name := sanitizeRepoName(t.HeadRepoFullName); name != "" {
			from = fmt.Sprintf("a fork (`%s`)", name)
		}
		return deny(ReasonForkPR, who, fmt.Sprintf(
			"this pull request comes from %s, and Inspect doesn't run on fork pull requests in this repository. "+
				"A maintainer can push the branch to this repository and run the command on a pull request from there, "+
				"or the Inspect server's administrators can allow fork pull requests for this repository.", from))
	}
	return Decision{Allowed: true}
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

func permissionText(sub Subcommand, role Role) string {
	action := "Starting an Inspect session"
	switch sub {
	case Retry:
		action = "Retrying an Inspect session"
	case Cancel:
		action = "Cancelling an Inspect session"
	}
	var has string
	switch role {
	case "":
		has = "Inspect couldn't find a role for you on this repository"
	case RoleNone:
		has = "you have no role on this repository"
	case RoleRead, RoleTriage:
		has = fmt.Sprintf("your role here is **%s**", role)
	default:
		name := sanitizeRole(role)
		if name == "" {
			has = "your role here is a custom role"
		} else {
			has = fmt.Sprintf("your role here is the custom role `%s`", name)
		}
		has += ", and Inspect only accepts the built-in roles"
	}
	return fmt.Sprintf("%s needs the write, maintain or admin role on this repository, and %s. "+
		"A maintainer can run the command for you, or give you write access.",
		action, has)
}

func deny(r Reason, who, text string) Decision {
	return Decision{Allowed: false, Reason: r, Reply: greet(who, text)}
}

// greet puts "@login, " before text, or capitalises text when there is no
// usable login.
func greet(who, text string) string {
	if who == "" {
		return upperFirst(text)
	}
	return who + ", " + lowerFirst(text)
}

// mention returns "@login" with the login reduced to what GitHub allows
// ([A-Za-z0-9-], at most 39 characters, plus a "[bot]" suffix), or "" if
// nothing is left.
func mention(login string) string {
	base, bot := login, false
	if hasSuffixFold(login, "[bot]") {
		base, bot = login[:len(login)-len("[bot]")], true
	}
	var b strings.Builder
	for i := 0; i < len(base) && b.Len() < 39; i++ {
		if c := base[i]; isASCIILetter(c) || isASCIIDigit(c) || c == '-' {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	if bot {
		b.WriteString("[bot]")
	}
	return "@" + b.String()
}

// sanitizeRepoName keeps owner/name characters only, for a code span.
func sanitizeRepoName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 140; i++ {
		if c := s[i]; isASCIILetter(c) || isASCIIDigit(c) || c == '-' || c == '_' || c == '.' || c == '/' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// sanitizeRole keeps a custom role name readable and inert in a code span.
func sanitizeRole(r Role) string {
	var b strings.Builder
	for i := 0; i < len(r) && b.Len() < 40; i++ {
		if c := r[i]; isASCIILetter(c) || isASCIIDigit(c) || c == '-' || c == '_' || c == ' ' {
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && asciiEqualFold(s[len(s)-len(suffix):], suffix)
}

func upperFirst(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

func lowerFirst(s string) string {
	// Only the first word of a sentence is lowered, and never "Inspect".
	if strings.HasPrefix(s, "Inspect") || s == "" || s[0] < 'A' || s[0] > 'Z' {
		return s
	}
	return string(s[0]-'A'+'a') + s[1:]
}

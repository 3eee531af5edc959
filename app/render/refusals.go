package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/inspecthq/inspect/policy"
)

// The replies refusing a command or a session: the words for the
// decisions of policy.Authorize and policy.DailyBudget (decision 0047).

// Refusal is the reply to a refused command or session: one polite line of
// Markdown for the sender saying why and what to do, opening with
// "@login, " (or capitalised when no usable login is left). It is built
// from the decision's facts only, never from errors or secrets; the
// sender's login, a custom role's name and a fork's name are reduced to
// characters that cannot carry Markdown. An allowed decision has no
// refusal: the result is "".
func Refusal(d policy.Decision) string {
	if d.Allowed {
		return ""
	}
	return greet(mentionOf(d.Sender), refusalText(d))
}

func refusalText(d policy.Decision) string {
	thing := "issue"
	if d.PullRequest {
		thing = "pull request"
	}
	switch d.Reason {
	case policy.ReasonServerPaused:
		return "Inspect is paused on this server, so it isn't starting sessions right now. Please try again later."
	case policy.ReasonRepoPaused:
		return "Inspect is turned off for this repository (`enabled: false` in its Inspect configuration), so it isn't starting sessions here. A maintainer can turn it back on."
	case policy.ReasonRepoArchived:
		return "this repository is archived, so Inspect can't push changes to it. A repository admin can unarchive it first."
	case policy.ReasonBotNotAllowed:
		return "Inspect doesn't take commands from bots unless the Inspect server's administrators allowlist the bot's exact login. A person with write access can run the command instead."
	case policy.ReasonInsufficientPermission:
		return permissionText(d.Subcommand, d.Role)
	case policy.ReasonMerged:
		return "this pull request is already merged, so Inspect won't start a session on it. Open a new issue or pull request and run the command there."
	case policy.ReasonClosed:
		return fmt.Sprintf("this %s is closed, so Inspect won't start a session on it. Reopen it first, or run the command on an open one.", thing)
	case policy.ReasonLocked:
		return fmt.Sprintf("this %s's conversation is locked, so Inspect won't start a session on it. A maintainer can unlock it first.", thing)
	case policy.ReasonForkPR:
		from := "a fork that has since been deleted"
		if name := sanitizeRepoName(d.ForkRepo); name != "" {
			from = fmt.Sprintf("a fork (`%s`)", name)
		}
		return fmt.Sprintf("this pull request comes from %s, and Inspect doesn't run on fork pull requests in this repository. "+
			"A maintainer can push the branch to this repository and run the command on a pull request from there, "+
			"or the Inspect server's administrators can allow fork pull requests for this repository.", from)
	case policy.ReasonDailyBudget:
		return dailyBudgetText(d)
	case policy.ReasonMoneyBudget:
		text := moneyBudgetText(d) + ", so Inspect won't start another session yet."
		if d.NextSlot.IsZero() {
			return text + " Please run the command again later."
		}
		return text + fmt.Sprintf(" The spend falls below the budget at %s, as the sessions counted turn 24 hours old; please run the command again then.", ceilMinuteUTC(d.NextSlot))
	}
	// A reason with no words of its own yet: still one polite line.
	return "Inspect won't start a session for this request."
}

func permissionText(sub policy.Subcommand, role policy.Role) string {
	action := "Starting an Inspect session"
	switch sub {
	case policy.Retry:
		action = "Retrying an Inspect session"
	case policy.Cancel:
		action = "Cancelling an Inspect session"
	case policy.Stop:
		action = "Stopping an Inspect session's agent"
	case steerSubcommand:
		action = "Sending a message to a running Inspect session"
	}
	var has string
	switch role {
	case "":
		has = "Inspect couldn't find a role for you on this repository"
	case policy.RoleNone:
		has = "you have no role on this repository"
	case policy.RoleRead, policy.RoleTriage:
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

// dailyBudgetText says when the next slot frees up: d.NextSlot rounded up
// to the minute, so the time given is never too early, in UTC. With no
// next slot (policy could not tell), it just asks to try again later.
func dailyBudgetText(d policy.Decision) string {
	text := fmt.Sprintf("this repository has had %d Inspect %s in the last 24 hours, which is its daily limit, so Inspect won't start another one yet.",
		d.Started, oneOrMany(d.Started, "session", "sessions"))
	switch {
	case d.NextSlot.IsZero():
		text += " A slot should free up soon; please run the command again later."
	case d.Started == d.DailyCap:
		text += fmt.Sprintf(" The next slot frees up at %s; please run the command again then.", ceilMinuteUTC(d.NextSlot))
	default:
		// The cap was lowered below what already ran: one slot freeing up
		// is not enough.
		text += fmt.Sprintf(" Slots free up as those sessions turn 24 hours old, the first at %s; please run the command again later.", ceilMinuteUTC(d.NextSlot))
	}
	return text
}

// moneyBudgetText names the money budget reached, the day's spend and the
// keys that set the budget, without a full stop: "the Inspect sessions
// started in this repository in the last 24 hours have cost $10.23 at this
// server's model prices, reaching its daily money budget of $10.00
// (...)". The refusal and the stopped session's reply both say it.
func moneyBudgetText(d policy.Decision) string {
	where, keys := "in this repository", "`limits.daily_money_per_repo`, or the repository's own `limits.daily_money`"
	if d.MoneyScope == policy.ScopeInstallation {
		where, keys = "in all the repositories of this GitHub App installation", "`limits.daily_money_per_installation`"
	}
	return fmt.Sprintf("the Inspect sessions started %s in the last 24 hours have cost %s at this server's model prices, reaching the daily money budget of %s (%s)",
		where, Money(d.Spent), Money(d.MoneyCap), keys)
}

// MoneyBudgetReply says a running session was stopped because its
// repository's or installation's day's spend reached a money budget
// (d, policy.MoneyBudget's refusal).
func MoneyBudgetReply(login string, d policy.Decision) string {
	next := ""
	if !d.NextSlot.IsZero() {
		next = fmt.Sprintf(" New sessions can start once the spend falls below the budget, at %s.", ceilMinuteUTC(d.NextSlot))
	}
	return fmt.Sprintf("⚠️ @%s, %s, so Inspect stopped this session at its next model request. Nothing was pushed.%s", login, moneyBudgetText(d), next)
}

func ceilMinuteUTC(t time.Time) string {
	t = t.UTC()
	if r := t.Truncate(time.Minute); r.Before(t) {
		t = r.Add(time.Minute)
	}
	return t.Format("2006-01-02 15:04 UTC")
}

func oneOrMany(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// greet puts "@login, " before text, or capitalises text when there is no
// usable login.
func greet(who, text string) string {
	if who == "" {
		return upperFirst(text)
	}
	return who + ", " + lowerFirst(text)
}

// mentionOf returns "@login" with the login reduced to what GitHub allows
// ([A-Za-z0-9-], at most 39 characters, plus a "[bot]" suffix), or "" if
// nothing is left.
func mentionOf(login string) string {
	base, bot := login, false
	if hasSuffixFoldASCII(login, "[bot]") {
		base, bot = login[:len(login)-len("[bot]")], true
	}
	var b strings.Builder
	for i := 0; i < len(base) && b.Len() < 39; i++ {
		if c := base[i]; isASCIIAlnum(c) || c == '-' {
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
		if c := s[i]; isASCIIAlnum(c) || c == '-' || c == '_' || c == '.' || c == '/' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// sanitizeRole keeps a custom role name readable and inert in a code span.
func sanitizeRole(r policy.Role) string {
	var b strings.Builder
	for i := 0; i < len(r) && b.Len() < 40; i++ {
		if c := r[i]; isASCIIAlnum(c) || c == '-' || c == '_' || c == ' ' {
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

func isASCIIAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// hasSuffixFoldASCII is strings.HasSuffix ignoring ASCII case only, as
// GitHub compares logins (the Kelvin sign is not a k).
func hasSuffixFoldASCII(s, suffix string) bool {
	if len(s) < len(suffix) {
		return false
	}
	tail := s[len(s)-len(suffix):]
	for i := range len(suffix) {
		if lowerASCII(tail[i]) != lowerASCII(suffix[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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

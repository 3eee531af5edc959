package render

import (
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/policy"
)

// The words of policy's refusals, through policy.Authorize and
// policy.DailyBudget as the app asks them (decision 0047).

// writerOnOpenPR is a fact set that Authorize allows: a writer on an open
// same-repo PR.
func writerOnOpenPR() policy.Facts {
	return policy.Facts{
		SenderLogin: "alice",
		SenderType:  "User",
		SenderRole:  policy.RoleWrite,
		AllowedBots: []string{"renovate[bot]", "Good-App[bot]"},
		Target: policy.Target{
			IsPR: true, State: "open",
			HeadRepoFullName: "acme/widgets", BaseRepoFullName: "acme/widgets",
		},
		Subcommand: policy.Run,
	}
}

// checkRefusalSafe: refusals are Markdown for people; they never start a
// line with a command word, nor carry control characters.
func checkRefusalSafe(t *testing.T, reply string) {
	t.Helper()
	if policy.Parse(reply, "/inspect").Kind != policy.Ignore {
		t.Errorf("reply parses as a command: %q", reply)
	}
	if strings.IndexFunc(reply, policy.IsHidden) >= 0 || strings.Contains(reply, "\n") {
		t.Errorf("reply has hidden or control characters or several lines: %q", reply)
	}
}

func TestRefusalWords(t *testing.T) {
	role := func(r policy.Role) func(*policy.Facts) { return func(f *policy.Facts) { f.SenderRole = r } }
	bot := func(login string) func(*policy.Facts) {
		return func(f *policy.Facts) { f.SenderLogin, f.SenderType, f.SenderRole = login, "Bot", "" }
	}
	tgt := func(edit func(*policy.Target)) func(*policy.Facts) {
		return func(f *policy.Facts) { edit(&f.Target) }
	}
	cases := []struct {
		name   string
		edit   func(*policy.Facts)
		reason policy.Reason
		reply  []string
	}{
		// Roles.
		{"triage", role(policy.RoleTriage), policy.ReasonInsufficientPermission,
			[]string{"@alice", "**triage**", "write, maintain or admin", "maintainer can run the command", "write access"}},
		{"read", role(policy.RoleRead), policy.ReasonInsufficientPermission, []string{"@alice", "**read**"}},
		{"none", role(policy.RoleNone), policy.ReasonInsufficientPermission, []string{"@alice", "no role"}},
		{"unknown", role(""), policy.ReasonInsufficientPermission, []string{"@alice", "couldn't find a role"}},
		{"custom role", role("security-reviewer"), policy.ReasonInsufficientPermission,
			[]string{"custom role `security-reviewer`", "built-in roles"}},
		{"custom role named like a built-in", role("Write"), policy.ReasonInsufficientPermission, []string{"custom role `Write`"}},
		{"custom role sanitised", role("x`y\n@all <b>"), policy.ReasonInsufficientPermission, []string{"custom role `xyall b`"}},
		{"custom role with nothing printable", role("```"), policy.ReasonInsufficientPermission, []string{"a custom role"}},
		// Bots.
		{"other bot", bot("evil[bot]"), policy.ReasonBotNotAllowed,
			[]string{"@evil[bot]", "exact login", "person with write access"}},
		{"user named like a bot", func(f *policy.Facts) { f.SenderLogin, f.SenderType = "something[bot]", "User" },
			policy.ReasonBotNotAllowed, []string{"@something[bot]"}},
		// The target.
		{"merged", tgt(func(t *policy.Target) { t.State, t.Merged = "closed", true }), policy.ReasonMerged,
			[]string{"already merged", "new issue or pull request"}},
		{"closed PR", tgt(func(t *policy.Target) { t.State = "closed" }), policy.ReasonClosed,
			[]string{"this pull request is closed", "Reopen"}},
		{"closed issue", tgt(func(t *policy.Target) { *t = policy.Target{State: "closed"} }), policy.ReasonClosed,
			[]string{"this issue is closed"}},
		{"locked PR", tgt(func(t *policy.Target) { t.Locked = true }), policy.ReasonLocked,
			[]string{"pull request's conversation is locked", "unlock"}},
		{"locked issue", tgt(func(t *policy.Target) { *t = policy.Target{State: "open", Locked: true} }), policy.ReasonLocked,
			[]string{"issue's conversation is locked"}},
		{"fork PR", tgt(func(t *policy.Target) { t.HeadRepoFullName = "mallory/widgets" }), policy.ReasonForkPR,
			[]string{"a fork (`mallory/widgets`)", "push the branch", "allow fork pull requests"}},
		{"fork PR name sanitised", tgt(func(t *policy.Target) { t.HeadRepoFullName = "mal`lory/<b>wid gets" }), policy.ReasonForkPR,
			[]string{"a fork (`mallory/bwidgets`)"}},
		{"deleted fork", tgt(func(t *policy.Target) { t.HeadRepoFullName = "" }), policy.ReasonForkPR,
			[]string{"a fork that has since been deleted"}},
		// The switches.
		{"server paused", func(f *policy.Facts) { f.ServerPaused = true }, policy.ReasonServerPaused,
			[]string{"@alice", "paused on this server", "try again later"}},
		{"repo paused", func(f *policy.Facts) { f.RepoPaused = true }, policy.ReasonRepoPaused,
			[]string{"turned off for this repository", "`enabled: false`"}},
		{"archived", func(f *policy.Facts) { f.RepoArchived = true }, policy.ReasonRepoArchived,
			[]string{"@alice, this repository is archived"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := writerOnOpenPR()
			c.edit(&f)
			d := policy.Authorize(f)
			if d.Allowed || d.Reason != c.reason {
				t.Fatalf("Authorize = {Allowed:%v Reason:%q}, want reason %q", d.Allowed, d.Reason, c.reason)
			}
			got := Refusal(d)
			for _, want := range c.reply {
				if !strings.Contains(got, want) {
					t.Errorf("reply %q lacks %q", got, want)
				}
			}
			checkRefusalSafe(t, got)
		})
	}
}

func TestRefusalOfAnAllowedDecisionIsEmpty(t *testing.T) {
	if d := policy.Authorize(writerOnOpenPR()); !d.Allowed || Refusal(d) != "" {
		t.Errorf("Authorize = %+v, refusal %q; want allowed and no words", d, Refusal(d))
	}
	if got := Refusal(policy.Decision{Allowed: true, Reason: policy.ReasonClosed, Sender: "alice"}); got != "" {
		t.Errorf("an allowed decision is refused with %q", got)
	}
}

// Every refusal of every subcommand is one safe line, the worst facts
// included.
func TestRefusalsAreSafeForEverySubcommand(t *testing.T) {
	worst := func(f *policy.Facts) {
		f.ServerPaused, f.RepoPaused, f.RepoArchived = true, true, true
		f.Target = policy.Target{IsPR: true, State: "closed", Merged: true, Locked: true}
	}
	edits := []func(*policy.Facts){
		func(f *policy.Facts) { f.SenderRole = policy.RoleRead },
		func(f *policy.Facts) { f.SenderRole = policy.RoleNone },
		func(f *policy.Facts) { f.SenderLogin, f.SenderType = "evil[bot]", "Bot" },
		func(f *policy.Facts) { worst(f); f.SenderLogin, f.SenderType = "evil[bot]", "Bot" },
		func(f *policy.Facts) { f.Target.State = "closed" },
		func(f *policy.Facts) { f.Target.State, f.Target.Merged = "closed", true },
		func(f *policy.Facts) { f.Target.Locked = true },
		func(f *policy.Facts) { f.Target.HeadRepoFullName = "m/w" },
		func(f *policy.Facts) { f.ServerPaused = true },
		func(f *policy.Facts) { f.RepoPaused = true },
		func(f *policy.Facts) { f.RepoArchived = true },
		func(f *policy.Facts) { worst(f); f.SenderRole = policy.RoleRead },
		worst,
	}
	refused := 0
	for i, edit := range edits {
		for _, sub := range []policy.Subcommand{policy.Run, policy.Retry, policy.Cancel, policy.Status, policy.Help} {
			f := writerOnOpenPR()
			edit(&f)
			f.Subcommand = sub
			if d := policy.Authorize(f); !d.Allowed {
				refused++
				got := Refusal(d)
				if got == "" {
					t.Errorf("edit %d, %s: refused (%s) without words", i, sub, d.Reason)
				}
				checkRefusalSafe(t, got)
			}
		}
	}
	if refused < len(edits)*2 {
		t.Errorf("only %d refusals: the matrix no longer refuses what it should", refused)
	}
}

func TestRefusalPermissionWording(t *testing.T) {
	cases := []struct {
		sub  policy.Subcommand
		want string
	}{
		{policy.Run, "starting an Inspect session needs"},
		{policy.Retry, "retrying an Inspect session needs"},
		{policy.Cancel, "cancelling an Inspect session needs"},
	}
	for _, c := range cases {
		f := writerOnOpenPR()
		f.SenderRole, f.Subcommand = policy.RoleRead, c.sub
		if got := Refusal(policy.Authorize(f)); !strings.Contains(got, c.want) {
			t.Errorf("%s: reply %q lacks %q", c.sub, got, c.want)
		}
	}
}

func TestRefusalLoginSanitised(t *testing.T) {
	cases := []struct {
		login, prefix string
	}{
		{"alice", "@alice, "},
		{"Alice-42", "@Alice-42, "},
		{"al`ice", "@alice, "},
		{"al ice\n@everyone", "@aliceeveryone, "},
		{"<script>x", "@scriptx, "},
		{"ali\u200bce", "@alice, "},
		{"ALICE[Bot]", "@ALICE[bot], "},
		{"a[b]ot[bot]", "@abot[bot], "},
		{strings.Repeat("a", 60), "@" + strings.Repeat("a", 39) + ", "},
		{"", "Starting"},
		{"```", "Starting"},
		{"[bot]", "Inspect doesn't take commands from bots"},
	}
	for _, c := range cases {
		f := writerOnOpenPR()
		f.SenderLogin, f.SenderRole = c.login, policy.RoleRead
		got := Refusal(policy.Authorize(f))
		if !strings.HasPrefix(got, c.prefix) {
			t.Errorf("login %q: reply %q does not start with %q", c.login, got, c.prefix)
		}
		checkRefusalSafe(t, got)
	}
}

func TestRefusalDailyBudget(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	l := policy.Limits{DailyPerRepo: 3}
	cases := []struct {
		name    string
		limits  policy.Limits
		started int
		oldest  time.Time
		sender  string
		reply   []string
		absent  []string
	}{
		{name: "cap reached", limits: l, started: 3, oldest: now.Add(-20 * time.Hour), sender: "alice",
			reply: []string{"@alice, this repository has had 3 Inspect sessions in the last 24 hours", "daily limit", "The next slot frees up at 2026-03-04 16:00 UTC"}},
		{name: "the time is rounded up to the minute", limits: l, started: 3, oldest: now.Add(-20*time.Hour + 30*time.Second), sender: "alice",
			reply: []string{"2026-03-04 16:01 UTC"}},
		{name: "the time is given in UTC", limits: l, started: 3,
			oldest: time.Date(2026, 3, 4, 1, 2, 0, 0, time.FixedZone("X", -5*3600)), sender: "alice",
			reply: []string{"2026-03-05 06:02 UTC"}},
		{name: "a cap of one", limits: policy.Limits{DailyPerRepo: 1}, started: 1, oldest: now.Add(-time.Hour), sender: "bob",
			reply: []string{"@bob, this repository has had 1 Inspect session in", "2026-03-05 11:00 UTC"}},
		{name: "over a lowered cap", limits: l, started: 5, oldest: now.Add(-23 * time.Hour), sender: "alice",
			reply: []string{"5 Inspect sessions", "the first at 2026-03-04 13:00 UTC"}, absent: []string{"next slot"}},
		{name: "unknown oldest", limits: l, started: 3, sender: "alice",
			reply: []string{"run the command again later"}, absent: []string{"UTC"}},
		{name: "oldest already past 24 hours", limits: l, started: 3, oldest: now.Add(-25 * time.Hour), sender: "alice",
			reply: []string{"run the command again later"}, absent: []string{"UTC"}},
		{name: "no usable sender", limits: l, started: 3, oldest: now.Add(-time.Hour), sender: "`@`",
			reply: []string{"This repository has had 3"}, absent: []string{"@"}},
		{name: "bot sender", limits: l, started: 3, oldest: now.Add(-time.Hour), sender: "renovate[bot]",
			reply: []string{"@renovate[bot], this repository"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := policy.DailyBudget(c.limits, c.started, c.oldest, now, c.sender)
			if d.Allowed || d.Reason != policy.ReasonDailyBudget {
				t.Fatalf("DailyBudget = {Allowed:%v Reason:%q}, want %q", d.Allowed, d.Reason, policy.ReasonDailyBudget)
			}
			got := Refusal(d)
			for _, w := range c.reply {
				if !strings.Contains(got, w) {
					t.Errorf("reply %q lacks %q", got, w)
				}
			}
			for _, w := range c.absent {
				if strings.Contains(got, w) {
					t.Errorf("reply %q has %q", got, w)
				}
			}
			checkRefusalSafe(t, got)
		})
	}
}

// The money budget's refusal and a stopped session's reply name the
// scope, the spend, the budget and its keys, and when the spend falls
// below it.
func TestRefusalMoneyBudget(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	l := policy.Limits{DailyMoneyPerRepo: 10, DailyMoneyPerInstallation: 50}
	repo := policy.MoneyBudget(l, 1, []policy.Spend{{RepoID: 1, StartedAt: now.Add(-20 * time.Hour), USD: 6.5}, {RepoID: 1, StartedAt: now.Add(-time.Hour), USD: 3.73}}, now, "alice")
	inst := policy.MoneyBudget(l, 1, []policy.Spend{{RepoID: 2, StartedAt: now.Add(-2*time.Hour + 30*time.Second), USD: 60}}, now, "alice")
	for _, c := range []struct {
		name  string
		got   string
		reply []string
	}{
		{"repo refusal", Refusal(repo), []string{"@alice, the Inspect sessions started in this repository in the last 24 hours have cost $10.23",
			"daily money budget of $10.00", "`limits.daily_money_per_repo`", "`limits.daily_money`", "won't start another session yet",
			"falls below the budget at 2026-03-04 16:00 UTC"}},
		{"installation refusal", Refusal(inst), []string{"in all the repositories of this GitHub App installation", "$60.00", "$50.00",
			"`limits.daily_money_per_installation`", "at 2026-03-05 10:01 UTC"}},
		{"stopped", MoneyBudgetReply("alice", repo), []string{"⚠️ @alice, the Inspect sessions started in this repository", "$10.23",
			"so Inspect stopped this session at its next model request. Nothing was pushed.", "at 2026-03-04 16:00 UTC"}},
	} {
		for _, w := range c.reply {
			if !strings.Contains(c.got, w) {
				t.Errorf("%s: %q lacks %q", c.name, c.got, w)
			}
		}
	}
	checkRefusalSafe(t, Refusal(repo))
}

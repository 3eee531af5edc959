package policy

import (
	"testing"
)

// base is a fact set that Authorize allows: a writer on an open same-repo PR.
func base() Facts {
	return Facts{
		SenderLogin: "alice",
		SenderType:  "User",
		SenderRole:  RoleWrite,
		AllowedBots: []string{"renovate[bot]", "Good-App[bot]"},
		Target: Target{
			IsPR: true, State: "open",
			HeadRepoFullName: "acme/widgets", BaseRepoFullName: "acme/widgets",
		},
		Subcommand: Run,
	}
}

type authCase struct {
	name   string
	edit   func(*Facts)
	reason Reason // "" = allowed
}

// checkAuthorize checks each case's reason, and that a refusal carries the
// sender and the subcommand it refuses (the words are app/render's, and
// its tests check them through Authorize) while an allowance carries
// nothing.
func checkAuthorize(t *testing.T, cases []authCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := base()
			if c.edit != nil {
				c.edit(&f)
			}
			d := Authorize(f)
			if d.Allowed != (c.reason == "") || d.Reason != c.reason {
				t.Fatalf("Authorize = %+v, want reason %q", d, c.reason)
			}
			if d.Allowed {
				if d != (Decision{Allowed: true}) {
					t.Errorf("allowed with facts: %+v", d)
				}
				return
			}
			if d.Sender != f.SenderLogin || d.Subcommand != f.Subcommand {
				t.Errorf("refusal of %q's %q carries sender %q and subcommand %q", f.SenderLogin, f.Subcommand, d.Sender, d.Subcommand)
			}
		})
	}
}

func TestAuthorizeRoles(t *testing.T) {
	role := func(r Role) func(*Facts) { return func(f *Facts) { f.SenderRole = r } }
	checkAuthorize(t, []authCase{
		{name: "write", edit: role(RoleWrite)},
		{name: "maintain", edit: role(RoleMaintain)},
		{name: "admin", edit: role(RoleAdmin)},
		{name: "triage", edit: role(RoleTriage), reason: ReasonInsufficientPermission},
		{name: "read", edit: role(RoleRead), reason: ReasonInsufficientPermission},
		{name: "none", edit: role(RoleNone), reason: ReasonInsufficientPermission},
		{name: "unknown", edit: role(""), reason: ReasonInsufficientPermission},
		{name: "custom role", edit: role("security-reviewer"), reason: ReasonInsufficientPermission},
		{name: "custom role named like a built-in", edit: role("Write"), reason: ReasonInsufficientPermission},
		{name: "custom role sanitised", edit: role("x`y\n@all <b>"), reason: ReasonInsufficientPermission},
		{name: "custom role with nothing printable", edit: role("```"), reason: ReasonInsufficientPermission},
		{name: "padded built-in is custom", edit: role(" write"), reason: ReasonInsufficientPermission},
		{name: "author association is not a role", edit: role("OWNER"), reason: ReasonInsufficientPermission},
	})
}

func TestAuthorizeBots(t *testing.T) {
	bot := func(login, typ string) func(*Facts) {
		return func(f *Facts) { f.SenderLogin, f.SenderType, f.SenderRole = login, typ, "" }
	}
	checkAuthorize(t, []authCase{
		{name: "allowlisted bot without role", edit: bot("renovate[bot]", "Bot")},
		{name: "allowlisted bot, other case", edit: bot("Renovate[BOT]", "Bot")},
		{name: "allowlisted entry in mixed case", edit: bot("good-app[bot]", "Bot")},
		{name: "other bot", edit: bot("evil[bot]", "Bot"), reason: ReasonBotNotAllowed},
		{name: "bot with write role still needs the allowlist", edit: func(f *Facts) {
			bot("evil[bot]", "Bot")(f)
			f.SenderRole = RoleAdmin
		}, reason: ReasonBotNotAllowed},
		{name: "suffix of an allowed login", edit: bot("ate[bot]", "Bot"), reason: ReasonBotNotAllowed},
		{name: "allowed login as prefix", edit: bot("renovate[bot]-x", "Bot"), reason: ReasonBotNotAllowed},
		{name: "allowed login with a prefix", edit: bot("xrenovate[bot]", "Bot"), reason: ReasonBotNotAllowed},
		{name: "allowed login without [bot]", edit: bot("renovate", "Bot"), reason: ReasonBotNotAllowed},
		{name: "kelvin sign does not fold", edit: func(f *Facts) {
			bot("\u212a[bot]", "Bot")(f)
			f.AllowedBots = []string{"k[bot]"}
		}, reason: ReasonBotNotAllowed},
		{name: "empty login", edit: bot("", "Bot"), reason: ReasonBotNotAllowed},
		{name: "empty allowlist entry", edit: func(f *Facts) {
			bot("", "Bot")(f)
			f.AllowedBots = []string{""}
		}, reason: ReasonBotNotAllowed},
		{name: "user named like a bot", edit: func(f *Facts) {
			f.SenderLogin, f.SenderType = "something[bot]", "User"
		}, reason: ReasonBotNotAllowed},
		{name: "user named like an allowlisted bot", edit: func(f *Facts) {
			f.SenderLogin, f.SenderType, f.SenderRole = "renovate[bot]", "User", ""
		}},
		{name: "bot type wins over a plain login", edit: bot("helper", "Bot"), reason: ReasonBotNotAllowed},
		{name: "bot type in lower case", edit: bot("helper", "bot"), reason: ReasonBotNotAllowed},
		{name: "organization needs a role", edit: func(f *Facts) {
			f.SenderLogin, f.SenderType, f.SenderRole = "acme", "Organization", ""
		}, reason: ReasonInsufficientPermission},
		{name: "allowlisted bot on a fork PR", edit: func(f *Facts) {
			bot("renovate[bot]", "Bot")(f)
			f.Target.HeadRepoFullName = "mallory/widgets"
		}, reason: ReasonForkPR},
		{name: "allowlisted bot on a closed PR", edit: func(f *Facts) {
			bot("renovate[bot]", "Bot")(f)
			f.Target.State = "closed"
		}, reason: ReasonClosed},
	})
}

func TestAuthorizeTarget(t *testing.T) {
	tgt := func(edit func(*Target)) func(*Facts) { return func(f *Facts) { edit(&f.Target) } }
	checkAuthorize(t, []authCase{
		{name: "open issue", edit: tgt(func(t *Target) { *t = Target{State: "open"} })},
		{name: "open PR, case-insensitive repo names", edit: tgt(func(t *Target) { t.HeadRepoFullName = "ACME/Widgets" })},
		{name: "state in upper case", edit: tgt(func(t *Target) { t.State = "OPEN" })},
		{name: "merged", edit: tgt(func(t *Target) { t.State, t.Merged = "closed", true }), reason: ReasonMerged},
		{name: "closed PR", edit: tgt(func(t *Target) { t.State = "closed" }), reason: ReasonClosed},
		{name: "closed issue", edit: tgt(func(t *Target) { *t = Target{State: "closed"} }), reason: ReasonClosed},
		{name: "unknown state counts as closed", edit: tgt(func(t *Target) { t.State = "" }), reason: ReasonClosed},
		{name: "locked PR", edit: tgt(func(t *Target) { t.Locked = true }), reason: ReasonLocked},
		{name: "locked issue", edit: tgt(func(t *Target) { *t = Target{State: "open", Locked: true} }), reason: ReasonLocked},
		{name: "fork PR", edit: tgt(func(t *Target) { t.HeadRepoFullName = "mallory/widgets" }), reason: ReasonForkPR},
		{name: "fork PR name sanitised", edit: tgt(func(t *Target) { t.HeadRepoFullName = "mal`lory/<b>wid gets" }), reason: ReasonForkPR},
		{name: "deleted fork", edit: tgt(func(t *Target) { t.HeadRepoFullName = "" }), reason: ReasonForkPR},
		{name: "fork PR with opt-in", edit: func(f *Facts) {
			f.Target.HeadRepoFullName = "mallory/widgets"
			f.ForkOptIn = true
		}},
		{name: "deleted fork with opt-in", edit: func(f *Facts) {
			f.Target.HeadRepoFullName = ""
			f.ForkOptIn = true
		}},
		{name: "issues have no forks", edit: tgt(func(t *Target) { *t = Target{State: "open", HeadRepoFullName: "x/y"} })},
		// A branch from the dashboard: no state, lock or fork to refuse on.
		{name: "branch", edit: tgt(func(t *Target) { *t = Target{IsBranch: true} })},
		{name: "branch, reader", edit: func(f *Facts) {
			f.Target, f.SenderRole = Target{IsBranch: true}, RoleRead
		}, reason: ReasonInsufficientPermission},
		{name: "branch, paused repo", edit: func(f *Facts) {
			f.Target, f.RepoPaused = Target{IsBranch: true}, true
		}, reason: ReasonRepoPaused},
	})
}

func TestAuthorizeSwitches(t *testing.T) {
	checkAuthorize(t, []authCase{
		{name: "server paused", edit: func(f *Facts) { f.ServerPaused = true }, reason: ReasonServerPaused},
		{name: "repo paused", edit: func(f *Facts) { f.RepoPaused = true }, reason: ReasonRepoPaused},
		{name: "archived", edit: func(f *Facts) { f.RepoArchived = true }, reason: ReasonRepoArchived},
	})
}

// The first failing check in the documented order gives the reason.
func TestAuthorizeOrder(t *testing.T) {
	all := func(f *Facts) {
		f.ServerPaused, f.RepoPaused, f.RepoArchived = true, true, true
		f.SenderLogin, f.SenderType, f.SenderRole = "evil[bot]", "Bot", RoleRead
		f.Target = Target{IsPR: true, State: "closed", Merged: true, Locked: true, HeadRepoFullName: "m/w", BaseRepoFullName: "a/w"}
	}
	steps := []struct {
		reason Reason
		fix    func(*Facts)
	}{
		{ReasonServerPaused, func(f *Facts) { f.ServerPaused = false }},
		{ReasonRepoPaused, func(f *Facts) { f.RepoPaused = false }},
		{ReasonRepoArchived, func(f *Facts) { f.RepoArchived = false }},
		{ReasonBotNotAllowed, func(f *Facts) { f.SenderLogin, f.SenderType = "bob", "User" }},
		{ReasonInsufficientPermission, func(f *Facts) { f.SenderRole = RoleMaintain }},
		{ReasonMerged, func(f *Facts) { f.Target.Merged = false }},
		{ReasonClosed, func(f *Facts) { f.Target.State = "open" }},
		{ReasonLocked, func(f *Facts) { f.Target.Locked = false }},
		{ReasonForkPR, func(f *Facts) { f.ForkOptIn = true }},
		{"", nil},
	}
	for _, sub := range []Subcommand{Run, Retry, "", "bogus"} {
		f := base()
		f.Subcommand = sub
		all(&f)
		for _, st := range steps {
			d := Authorize(f)
			if d.Reason != st.reason || d.Allowed != (st.reason == "") {
				t.Fatalf("%q: got {%v %q}, want reason %q", sub, d.Allowed, d.Reason, st.reason)
			}
			if st.fix != nil {
				st.fix(&f)
			}
		}
	}
}

func TestAuthorizeSubcommands(t *testing.T) {
	type want map[Subcommand]Reason // missing = allowed
	worst := func(f *Facts) {
		f.ServerPaused, f.RepoPaused, f.RepoArchived = true, true, true
		f.Target = Target{IsPR: true, State: "closed", Merged: true, Locked: true}
	}
	cases := []struct {
		name string
		edit func(*Facts)
		want want
	}{
		{"writer, everything fine", nil, want{}},
		{"reader", func(f *Facts) { f.SenderRole = RoleRead },
			want{Run: ReasonInsufficientPermission, Retry: ReasonInsufficientPermission, Cancel: ReasonInsufficientPermission}},
		{"no role at all", func(f *Facts) { f.SenderRole = RoleNone },
			want{Run: ReasonInsufficientPermission, Retry: ReasonInsufficientPermission, Cancel: ReasonInsufficientPermission}},
		{"bot not allowlisted", func(f *Facts) { f.SenderLogin, f.SenderType = "evil[bot]", "Bot" },
			want{Run: ReasonBotNotAllowed, Retry: ReasonBotNotAllowed, Cancel: ReasonBotNotAllowed, Status: ReasonBotNotAllowed, Help: ReasonBotNotAllowed}},
		{"bot not allowlisted, everything paused", func(f *Facts) {
			worst(f)
			f.SenderLogin, f.SenderType = "evil[bot]", "Bot"
		}, want{Run: ReasonServerPaused, Retry: ReasonServerPaused, Cancel: ReasonBotNotAllowed, Status: ReasonBotNotAllowed, Help: ReasonBotNotAllowed}},
		{"allowlisted bot", func(f *Facts) { f.SenderLogin, f.SenderType, f.SenderRole = "renovate[bot]", "Bot", "" }, want{}},
		{"writer, closed PR", func(f *Facts) { f.Target.State = "closed" },
			want{Run: ReasonClosed, Retry: ReasonClosed}},
		{"writer, merged PR", func(f *Facts) { f.Target.State, f.Target.Merged = "closed", true },
			want{Run: ReasonMerged, Retry: ReasonMerged}},
		{"writer, locked", func(f *Facts) { f.Target.Locked = true },
			want{Run: ReasonLocked, Retry: ReasonLocked}},
		{"writer, fork", func(f *Facts) { f.Target.HeadRepoFullName = "m/w" },
			want{Run: ReasonForkPR, Retry: ReasonForkPR}},
		{"writer, server paused", func(f *Facts) { f.ServerPaused = true },
			want{Run: ReasonServerPaused, Retry: ReasonServerPaused}},
		{"writer, repo paused", func(f *Facts) { f.RepoPaused = true },
			want{Run: ReasonRepoPaused, Retry: ReasonRepoPaused}},
		{"writer, archived", func(f *Facts) { f.RepoArchived = true },
			want{Run: ReasonRepoArchived, Retry: ReasonRepoArchived}},
		{"reader, everything wrong", func(f *Facts) {
			worst(f)
			f.SenderRole = RoleRead
		}, want{Run: ReasonServerPaused, Retry: ReasonServerPaused, Cancel: ReasonInsufficientPermission}},
		{"writer, everything wrong", worst, want{Run: ReasonServerPaused, Retry: ReasonServerPaused}},
	}
	for _, c := range cases {
		for _, sub := range []Subcommand{Run, Retry, Cancel, Status, Help} {
			f := base()
			if c.edit != nil {
				c.edit(&f)
			}
			f.Subcommand = sub
			d := Authorize(f)
			if d.Reason != c.want[sub] || d.Allowed != (c.want[sub] == "") {
				t.Errorf("%s, %s: got {%v %q}, want reason %q", c.name, sub, d.Allowed, d.Reason, c.want[sub])
			}
		}
	}
}

// A refusal carries the facts its words need, as they came: the renderer
// reduces the untrusted ones.
func TestAuthorizeRefusalFacts(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Facts)
		want Decision
	}{
		{"reader retrying", func(f *Facts) { f.SenderRole, f.Subcommand = RoleRead, Retry },
			Decision{Reason: ReasonInsufficientPermission, Sender: "alice", Subcommand: Retry, Role: RoleRead}},
		{"custom role, raw", func(f *Facts) { f.SenderRole = "x`y\n@all <b>" },
			Decision{Reason: ReasonInsufficientPermission, Sender: "alice", Subcommand: Run, Role: "x`y\n@all <b>"}},
		{"unknown subcommand refused as run", func(f *Facts) { f.SenderRole, f.Subcommand = RoleNone, "bogus" },
			Decision{Reason: ReasonInsufficientPermission, Sender: "alice", Subcommand: Run, Role: RoleNone}},
		{"login, raw", func(f *Facts) { f.SenderLogin, f.ServerPaused = "al ice\n@everyone", true },
			Decision{Reason: ReasonServerPaused, Sender: "al ice\n@everyone", Subcommand: Run}},
		{"closed PR", func(f *Facts) { f.Target.State = "closed" },
			Decision{Reason: ReasonClosed, Sender: "alice", Subcommand: Run, PullRequest: true}},
		{"locked issue", func(f *Facts) { f.Target = Target{State: "open", Locked: true} },
			Decision{Reason: ReasonLocked, Sender: "alice", Subcommand: Run}},
		{"fork, raw name", func(f *Facts) { f.Target.HeadRepoFullName = "mal`lory/<b>wid gets" },
			Decision{Reason: ReasonForkPR, Sender: "alice", Subcommand: Run, PullRequest: true, ForkRepo: "mal`lory/<b>wid gets"}},
		{"deleted fork", func(f *Facts) { f.Target.HeadRepoFullName = "" },
			Decision{Reason: ReasonForkPR, Sender: "alice", Subcommand: Run, PullRequest: true}},
	}
	for _, c := range cases {
		f := base()
		c.edit(&f)
		if got := Authorize(f); got != c.want {
			t.Errorf("%s: Authorize = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestAuthorizePure(t *testing.T) {
	f := base()
	f.SenderRole = RoleRead
	bots := []string{"renovate[bot]"}
	f.AllowedBots = bots
	a, b := Authorize(f), Authorize(f)
	if a != b {
		t.Fatalf("not deterministic: %+v vs %+v", a, b)
	}
	if bots[0] != "renovate[bot]" {
		t.Fatalf("allowlist was modified")
	}
}

func TestIsOwnApp(t *testing.T) {
	cases := []struct {
		login, typ, slug string
		want             bool
	}{
		{"inspect-app[bot]", "Bot", "inspect-app", true},
		{"Inspect-App[BOT]", "Bot", "inspect-app", true},
		{"inspect-app[bot]", "bot", "inspect-app", true},
		{"inspect-app[bot]", "User", "inspect-app", false},
		{"inspect-app", "Bot", "inspect-app", false},
		{"inspect-app[bot]-x", "Bot", "inspect-app", false},
		{"x-inspect-app[bot]", "Bot", "inspect-app", false},
		{"inspect[bot]", "Bot", "inspect-app", false},
		{"inspect-app[bot]", "Bot", "inspect", false},
		{"[bot]", "Bot", "", false},
		{"", "Bot", "", false},
		{"inspect-app[bot]", "Bot", "", false},
		{"\u212a[bot]", "Bot", "k", false},
	}
	for _, c := range cases {
		if got := IsOwnApp(c.login, c.typ, c.slug); got != c.want {
			t.Errorf("IsOwnApp(%q, %q, %q) = %v, want %v", c.login, c.typ, c.slug, got, c.want)
		}
	}
}

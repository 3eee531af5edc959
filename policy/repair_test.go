package policy

import (
	"testing"
	"time"
)

var repairNow = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

// repairBase is a fact set that DecideRepair starts repair 1 of 2 on.
func repairBase() RepairFacts {
	return RepairFacts{
		Enabled: true, Matched: true, PROpen: true,
		AuthorRole: RoleWrite,
		Budget:     2,
		Cooldown:   10 * time.Minute,
		Now:        repairNow,
	}
}

func TestDecideRepair(t *testing.T) {
	start := func(n int, last bool) RepairDecision {
		return RepairDecision{Verdict: RepairStart, Number: n, Last: last}
	}
	skip := func(r Reason) RepairDecision { return RepairDecision{Verdict: RepairSkip, Reason: r} }
	cases := []struct {
		name string
		edit func(*RepairFacts)
		want RepairDecision
	}{
		{"first repair", nil, start(1, false)},
		{"second and last repair", func(f *RepairFacts) { f.Repairs = 1 }, start(2, true)},
		{"a budget of one", func(f *RepairFacts) { f.Budget = 1 }, start(1, true)},
		{"repair of Inspect's own commit", func(f *RepairFacts) { f.Repairs, f.OnOwnCommit = 1, true }, start(2, true)},
		{"maintain", func(f *RepairFacts) { f.AuthorRole = RoleMaintain }, start(1, false)},
		{"admin", func(f *RepairFacts) { f.AuthorRole = RoleAdmin }, start(1, false)},

		{"disabled", func(f *RepairFacts) { f.Enabled = false }, skip(ReasonRepairDisabled)},
		{"no matching check", func(f *RepairFacts) { f.Matched = false }, skip(ReasonNoMatchingCheck)},
		{"closed", func(f *RepairFacts) { f.PROpen = false }, skip(ReasonPRClosed)},
		{"fork", func(f *RepairFacts) { f.Fork = true }, skip(ReasonForkPR)},
		{"bot author", func(f *RepairFacts) { f.AuthorIsBot = true }, skip(ReasonBotAuthor)},
		{"bot author with a write role", func(f *RepairFacts) { f.AuthorIsBot, f.AuthorRole = true, RoleAdmin }, skip(ReasonBotAuthor)},
		{"triage author", func(f *RepairFacts) { f.AuthorRole = RoleTriage }, skip(ReasonInsufficientPermission)},
		{"read author", func(f *RepairFacts) { f.AuthorRole = RoleRead }, skip(ReasonInsufficientPermission)},
		{"author without a role", func(f *RepairFacts) { f.AuthorRole = RoleNone }, skip(ReasonInsufficientPermission)},
		{"unknown role", func(f *RepairFacts) { f.AuthorRole = "" }, skip(ReasonInsufficientPermission)},
		{"custom role", func(f *RepairFacts) { f.AuthorRole = "security-reviewer" }, skip(ReasonInsufficientPermission)},
		{"custom role named like a built-in", func(f *RepairFacts) { f.AuthorRole = "Write" }, skip(ReasonInsufficientPermission)},
		{"head moved", func(f *RepairFacts) { f.HeadMoved = true }, skip(ReasonHeadMoved)},
		{"budget spent", func(f *RepairFacts) { f.Repairs = 2 }, skip(ReasonBudgetSpent)},
		{"over budget (lowered)", func(f *RepairFacts) { f.Repairs = 5 }, skip(ReasonBudgetSpent)},
		{"no budget", func(f *RepairFacts) { f.Budget = 0 }, skip(ReasonBudgetSpent)},
		{"negative budget", func(f *RepairFacts) { f.Budget = -1 }, skip(ReasonBudgetSpent)},
		{"budget spent on Inspect's own commit", func(f *RepairFacts) { f.Repairs, f.OnOwnCommit = 2, true }, skip(ReasonOwnCommitBudgetSpent)},
		{"no budget on Inspect's own commit", func(f *RepairFacts) { f.Budget, f.OnOwnCommit = 0, true }, skip(ReasonOwnCommitBudgetSpent)},

		{"active session", func(f *RepairFacts) { f.ActiveSession = true },
			RepairDecision{Verdict: RepairWait, Reason: ReasonSessionActive}},
		{"cooldown", func(f *RepairFacts) { f.LastRepairEnd = repairNow.Add(-4 * time.Minute) },
			RepairDecision{Verdict: RepairWait, Reason: ReasonCooldown, Until: repairNow.Add(6 * time.Minute)}},
		{"cooldown just started", func(f *RepairFacts) { f.LastRepairEnd = repairNow },
			RepairDecision{Verdict: RepairWait, Reason: ReasonCooldown, Until: repairNow.Add(10 * time.Minute)}},
		{"cooldown over exactly", func(f *RepairFacts) { f.LastRepairEnd = repairNow.Add(-10 * time.Minute) }, start(1, false)},
		{"cooldown long over", func(f *RepairFacts) { f.Repairs, f.LastRepairEnd = 1, repairNow.Add(-time.Hour) }, start(2, true)},
		{"no cooldown", func(f *RepairFacts) { f.Cooldown, f.LastRepairEnd = 0, repairNow }, start(1, false)},
		{"negative cooldown", func(f *RepairFacts) { f.Cooldown, f.LastRepairEnd = -time.Minute, repairNow }, start(1, false)},
		{"a last end in the future still cools down", func(f *RepairFacts) { f.LastRepairEnd = repairNow.Add(time.Minute) },
			RepairDecision{Verdict: RepairWait, Reason: ReasonCooldown, Until: repairNow.Add(11 * time.Minute)}},
		{"negative repairs count as none", func(f *RepairFacts) { f.Repairs = -3 }, start(1, false)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := repairBase()
			if c.edit != nil {
				c.edit(&f)
			}
			if got := DecideRepair(f); got != c.want {
				t.Errorf("DecideRepair = %+v, want %+v", got, c.want)
			}
		})
	}
}

// Each guard, applied alone to a fact set that passes, gives its own
// reason; and with every later guard failing too, the earlier one still
// decides: the order is the documented one.
func TestDecideRepairOrder(t *testing.T) {
	steps := []struct {
		reason Reason
		fail   func(*RepairFacts)
	}{
		{ReasonRepairDisabled, func(f *RepairFacts) { f.Enabled = false }},
		{ReasonNoMatchingCheck, func(f *RepairFacts) { f.Matched = false }},
		{ReasonPRClosed, func(f *RepairFacts) { f.PROpen = false }},
		{ReasonForkPR, func(f *RepairFacts) { f.Fork = true }},
		{ReasonBotAuthor, func(f *RepairFacts) { f.AuthorIsBot = true }},
		{ReasonInsufficientPermission, func(f *RepairFacts) { f.AuthorRole = RoleRead }},
		{ReasonHeadMoved, func(f *RepairFacts) { f.HeadMoved = true }},
		{ReasonBudgetSpent, func(f *RepairFacts) { f.Repairs = f.Budget }},
		{ReasonSessionActive, func(f *RepairFacts) { f.ActiveSession = true }},
		{ReasonCooldown, func(f *RepairFacts) { f.LastRepairEnd = f.Now }},
	}
	for i, st := range steps {
		f := repairBase()
		for _, later := range steps[i:] {
			later.fail(&f)
		}
		d := DecideRepair(f)
		if d.Reason != st.reason {
			t.Errorf("with guards %d.. failing: reason %q, want %q", i, d.Reason, st.reason)
		}
		wantVerdict := RepairSkip
		if st.reason == ReasonSessionActive || st.reason == ReasonCooldown {
			wantVerdict = RepairWait
		}
		if d.Verdict != wantVerdict || d.Number != 0 || d.Last {
			t.Errorf("%s: %+v", st.reason, d)
		}
		if (d.Verdict == RepairSkip || d.Reason == ReasonSessionActive) && !d.Until.IsZero() {
			t.Errorf("%s: Until = %v, want zero", st.reason, d.Until)
		}
	}
}

// Every combination of the boolean facts, with a role, budget and cooldown
// from small sets: DecideRepair starts a repair exactly when every guard
// passes, and then numbers it Repairs+1.
func TestDecideRepairExhaustive(t *testing.T) {
	roles := []Role{RoleWrite, RoleRead, "custom"}
	for bits := 0; bits < 1<<8; bits++ {
		for _, role := range roles {
			for repairs := 0; repairs <= 3; repairs++ {
				for budget := 0; budget <= 2; budget++ {
					for _, end := range []time.Time{{}, repairNow.Add(-time.Minute), repairNow.Add(-time.Hour)} {
						f := RepairFacts{
							Enabled: bits&1 != 0, Matched: bits&2 != 0, PROpen: bits&4 != 0, Fork: bits&8 != 0,
							AuthorIsBot: bits&16 != 0, HeadMoved: bits&32 != 0, OnOwnCommit: bits&64 != 0, ActiveSession: bits&128 != 0,
							AuthorRole: role, Repairs: repairs, Budget: budget,
							LastRepairEnd: end, Cooldown: 10 * time.Minute, Now: repairNow,
						}
						d := DecideRepair(f)
						cooling := !end.IsZero() && repairNow.Before(end.Add(f.Cooldown))
						ok := f.Enabled && f.Matched && f.PROpen && !f.Fork && !f.AuthorIsBot && role == RoleWrite &&
							!f.HeadMoved && repairs < budget && !f.ActiveSession && !cooling
						if (d.Verdict == RepairStart) != ok {
							t.Fatalf("%+v: %+v, want start=%v", f, d, ok)
						}
						switch d.Verdict {
						case RepairStart:
							if d.Reason != "" || d.Number != repairs+1 || d.Last != (repairs+1 == budget) || !d.Until.IsZero() {
								t.Fatalf("%+v: %+v", f, d)
							}
						case RepairWait:
							if d.Reason != ReasonSessionActive && d.Reason != ReasonCooldown {
								t.Fatalf("%+v: wait with reason %q", f, d.Reason)
							}
							if d.Reason == ReasonCooldown && !d.Until.Equal(end.Add(f.Cooldown)) {
								t.Fatalf("%+v: until %v", f, d.Until)
							}
						case RepairSkip:
							if d.Reason == "" {
								t.Fatalf("%+v: skip without a reason", f)
							}
						}
					}
				}
			}
		}
	}
}

func TestRepairVerdictString(t *testing.T) {
	for v, want := range map[RepairVerdict]string{RepairSkip: "skip", RepairStart: "start", RepairWait: "wait", 9: "RepairVerdict(9)"} {
		if v.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(v), v.String(), want)
		}
	}
	var zero RepairDecision
	if zero.Verdict != RepairSkip {
		t.Error("the zero decision is not a skip")
	}
}

package policy

import (
	"testing"
	"time"
)

func serverLimits() Limits {
	return Limits{
		ActivePerRepo: 5, ActivePerUser: 3, ActivePerInstallation: 20,
		DailyPerRepo: 100, DailyMoneyPerRepo: 25, DailyMoneyPerInstallation: 100,
		SessionTimeout: 30 * time.Minute, MaxChangedFiles: 100, RepairsPerPR: 2,
	}
}

func TestNarrow(t *testing.T) {
	cases := []struct {
		name   string
		server func(*Limits)
		repo   RepoLimits
		want   func(*Limits)
	}{
		{name: "nothing asked keeps the server's"},
		{name: "tighter values count",
			repo: RepoLimits{MaxActive: 1, DailySessions: 20, SessionTimeout: 10 * time.Minute, MaxChangedFiles: 10, RepairsPerPR: 1},
			want: func(l *Limits) {
				l.ActivePerRepo, l.DailyPerRepo, l.SessionTimeout, l.MaxChangedFiles, l.RepairsPerPR = 1, 20, 10*time.Minute, 10, 1
			}},
		{name: "looser values are ignored",
			repo: RepoLimits{MaxActive: 50, DailySessions: 1000, SessionTimeout: 2 * time.Hour, MaxChangedFiles: 5000, RepairsPerPR: 10}},
		{name: "equal values change nothing",
			repo: RepoLimits{MaxActive: 5, DailySessions: 100, SessionTimeout: 30 * time.Minute, MaxChangedFiles: 100, RepairsPerPR: 2}},
		{name: "negative values are ignored",
			repo: RepoLimits{MaxActive: -1, DailySessions: -1, SessionTimeout: -time.Minute, MaxChangedFiles: -1, RepairsPerPR: -1}},
		{name: "any positive value narrows no cap",
			server: func(l *Limits) { l.ActivePerRepo, l.DailyPerRepo, l.SessionTimeout, l.MaxChangedFiles = 0, 0, 0, 0 },
			repo:   RepoLimits{MaxActive: 50, DailySessions: 1000, SessionTimeout: 2 * time.Hour, MaxChangedFiles: 5000},
			want: func(l *Limits) {
				l.ActivePerRepo, l.DailyPerRepo, l.SessionTimeout, l.MaxChangedFiles = 50, 1000, 2*time.Hour, 5000
			}},
		{name: "no repairs on the server cannot be turned on",
			server: func(l *Limits) { l.RepairsPerPR = 0 },
			repo:   RepoLimits{RepairsPerPR: 1},
			want:   func(l *Limits) { l.RepairsPerPR = 0 }},
		{name: "a money budget narrows, never widens, and the installation's is the server's alone",
			repo: RepoLimits{DailyMoney: 7.5},
			want: func(l *Limits) { l.DailyMoneyPerRepo = 7.5 }},
		{name: "a looser money budget is ignored", repo: RepoLimits{DailyMoney: 30}},
		{name: "a money budget narrows none",
			server: func(l *Limits) { l.DailyMoneyPerRepo = 0 },
			repo:   RepoLimits{DailyMoney: 500},
			want:   func(l *Limits) { l.DailyMoneyPerRepo = 500 }},
		{name: "user and installation caps are the server's alone",
			server: func(l *Limits) { l.ActivePerUser, l.ActivePerInstallation = 0, 0 },
			repo:   RepoLimits{MaxActive: 1},
			want:   func(l *Limits) { l.ActivePerRepo, l.ActivePerUser, l.ActivePerInstallation = 1, 0, 0 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			server := serverLimits()
			if c.server != nil {
				c.server(&server)
			}
			want := server
			if c.want != nil {
				c.want(&want)
			}
			if got := Narrow(server, c.repo); got != want {
				t.Errorf("Narrow(%+v, %+v)\n = %+v\nwant %+v", server, c.repo, got, want)
			}
		})
	}
}

// Narrowing never widens: every result is the server's value or a
// positive one within it, for every combination of small values.
func TestNarrowNeverWidens(t *testing.T) {
	for s := -1; s <= 3; s++ {
		for r := -1; r <= 4; r++ {
			server := Limits{ActivePerRepo: s, DailyPerRepo: s, SessionTimeout: time.Duration(s), MaxChangedFiles: s, RepairsPerPR: s}
			got := Narrow(server, RepoLimits{MaxActive: r, DailySessions: r, SessionTimeout: time.Duration(r), MaxChangedFiles: r, RepairsPerPR: r})
			for name, v := range map[string]int{
				"ActivePerRepo": got.ActivePerRepo, "DailyPerRepo": got.DailyPerRepo,
				"SessionTimeout": int(got.SessionTimeout), "MaxChangedFiles": got.MaxChangedFiles,
			} {
				// 0 or less is no cap, which any positive value narrows.
				if v != s && !(v > 0 && (s <= 0 || v < s)) {
					t.Errorf("server %d, repo %d: %s = %d", s, r, name, v)
				}
			}
			// 0 or less is no repairs, which nothing widens.
			if v := got.RepairsPerPR; v != s && !(v > 0 && v < s) {
				t.Errorf("server %d, repo %d: RepairsPerPR = %d", s, r, v)
			}
		}
	}
}

func TestAdmit(t *testing.T) {
	l := Limits{ActivePerRepo: 1, ActivePerUser: 3, ActivePerInstallation: 20}
	cases := []struct {
		name   string
		limits *Limits
		load   Load
		want   Admission
	}{
		{name: "idle", want: Admission{Admit: true}},
		{name: "room everywhere", load: Load{ActiveUser: 2, ActiveInstallation: 19}, want: Admission{Admit: true}},
		{name: "repo full", load: Load{ActiveRepo: 1},
			want: Admission{Scope: ScopeRepo, Cap: 1, Position: 1}},
		{name: "repo free but someone waits ahead", load: Load{AheadRepo: 1},
			want: Admission{Scope: ScopeRepo, Cap: 1, Position: 2}},
		{name: "user full", load: Load{ActiveUser: 3},
			want: Admission{Scope: ScopeUser, Cap: 3, Position: 1}},
		{name: "user queue", load: Load{ActiveUser: 2, AheadUser: 1},
			want: Admission{Scope: ScopeUser, Cap: 3, Position: 2}},
		{name: "installation full", load: Load{ActiveInstallation: 20, AheadInstallation: 4},
			want: Admission{Scope: ScopeInstallation, Cap: 20, Position: 5}},
		{name: "installation over its cap (lowered)", load: Load{ActiveInstallation: 25},
			want: Admission{Scope: ScopeInstallation, Cap: 20, Position: 1}},
		{name: "the longest wait is named", load: Load{ActiveRepo: 1, ActiveUser: 3, AheadUser: 4},
			want: Admission{Scope: ScopeUser, Cap: 3, Position: 5}},
		{name: "a tie names the narrower scope", load: Load{ActiveRepo: 1, ActiveUser: 3, ActiveInstallation: 20},
			want: Admission{Scope: ScopeRepo, Cap: 1, Position: 1}},
		{name: "tie between user and installation", load: Load{ActiveUser: 3, AheadUser: 1, ActiveInstallation: 20, AheadInstallation: 1},
			want: Admission{Scope: ScopeUser, Cap: 3, Position: 2}},
		{name: "no caps admit everything", limits: &Limits{},
			load: Load{ActiveRepo: 100, ActiveUser: 100, ActiveInstallation: 100, AheadRepo: 9, AheadUser: 9, AheadInstallation: 9},
			want: Admission{Admit: true}},
		{name: "negative caps are no caps", limits: &Limits{ActivePerRepo: -1}, load: Load{ActiveRepo: 3}, want: Admission{Admit: true}},
		{name: "negative counts count as zero", load: Load{ActiveRepo: -5, AheadRepo: -1}, want: Admission{Admit: true}},
		{name: "negative ahead is position 1", load: Load{ActiveRepo: 1, AheadRepo: -3},
			want: Admission{Scope: ScopeRepo, Cap: 1, Position: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := l
			if c.limits != nil {
				lim = *c.limits
			}
			if got := Admit(lim, c.load); got != c.want {
				t.Errorf("Admit(%+v, %+v) = %+v, want %+v", lim, c.load, got, c.want)
			}
		})
	}
}

// First come, first served: with sessions waiting ahead in a scope, a new
// one is admitted only when the active and waiting ones fit under the cap.
func TestAdmitNeverOvertakes(t *testing.T) {
	for limit := 1; limit <= 4; limit++ {
		for active := 0; active <= 5; active++ {
			for ahead := 0; ahead <= 5; ahead++ {
				a := Admit(Limits{ActivePerRepo: limit}, Load{ActiveRepo: active, AheadRepo: ahead})
				if a.Admit != (active+ahead < limit) {
					t.Errorf("cap %d, active %d, ahead %d: admit = %v", limit, active, ahead, a.Admit)
				}
				if !a.Admit && (a.Position != ahead+1 || a.Scope != ScopeRepo || a.Cap != limit) {
					t.Errorf("cap %d, active %d, ahead %d: %+v", limit, active, ahead, a)
				}
			}
		}
	}
}

func TestDailyBudget(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	l := Limits{DailyPerRepo: 3}
	cases := []struct {
		name    string
		limits  Limits
		started int
		oldest  time.Time
		sender  string
		reason  Reason
		next    time.Time // the refusal's NextSlot
	}{
		{name: "under the cap", limits: l, started: 2, oldest: now.Add(-time.Hour)},
		{name: "none started", limits: l},
		{name: "no cap", limits: Limits{}, started: 1000, oldest: now.Add(-time.Hour)},
		{name: "negative cap is no cap", limits: Limits{DailyPerRepo: -1}, started: 1000, oldest: now.Add(-time.Hour)},
		{name: "cap reached", limits: l, started: 3, oldest: now.Add(-20 * time.Hour), sender: "alice",
			reason: ReasonDailyBudget, next: now.Add(4 * time.Hour)},
		{name: "the time is kept to the second", limits: l, started: 3, oldest: now.Add(-20*time.Hour + 30*time.Second), sender: "alice",
			reason: ReasonDailyBudget, next: now.Add(4*time.Hour + 30*time.Second)},
		{name: "a cap of one", limits: Limits{DailyPerRepo: 1}, started: 1, oldest: now.Add(-time.Hour), sender: "bob",
			reason: ReasonDailyBudget, next: now.Add(23 * time.Hour)},
		{name: "over a lowered cap", limits: l, started: 5, oldest: now.Add(-23 * time.Hour), sender: "alice",
			reason: ReasonDailyBudget, next: now.Add(time.Hour)},
		{name: "unknown oldest", limits: l, started: 3, sender: "alice", reason: ReasonDailyBudget},
		{name: "oldest already past 24 hours", limits: l, started: 3, oldest: now.Add(-25 * time.Hour), sender: "alice",
			reason: ReasonDailyBudget},
		{name: "oldest exactly 24 hours ago", limits: l, started: 3, oldest: now.Add(-24 * time.Hour), sender: "alice",
			reason: ReasonDailyBudget},
		{name: "sender as given", limits: l, started: 3, oldest: now.Add(-time.Hour), sender: "`@`",
			reason: ReasonDailyBudget, next: now.Add(23 * time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := DailyBudget(c.limits, c.started, c.oldest, now, c.sender)
			if d.Allowed != (c.reason == "") || d.Reason != c.reason {
				t.Fatalf("DailyBudget = %+v, want reason %q", d, c.reason)
			}
			if d.Allowed {
				if d != (Decision{Allowed: true}) {
					t.Errorf("allowed with facts: %+v", d)
				}
				return
			}
			want := Decision{Reason: ReasonDailyBudget, Sender: c.sender, Started: c.started, DailyCap: c.limits.DailyPerRepo, NextSlot: c.next}
			if !d.NextSlot.Equal(c.next) || d.NextSlot.IsZero() != c.next.IsZero() {
				t.Errorf("NextSlot = %v, want %v", d.NextSlot, c.next)
			}
			d.NextSlot = c.next
			if d != want {
				t.Errorf("DailyBudget = %+v, want %+v", d, want)
			}
		})
	}
}

func TestMoneyBudget(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	l := Limits{DailyMoneyPerRepo: 10, DailyMoneyPerInstallation: 15}
	cases := []struct {
		name   string
		l      Limits
		spends []Spend
		// want: allowed when scope is "", else refused naming scope, spent
		// and next.
		scope Scope
		spent float64
		next  time.Time
	}{
		{name: "nothing spent", l: l},
		{name: "under both", l: l, spends: []Spend{{42, ago(time.Hour), 9.99}, {7, ago(time.Hour), 5}}},
		{name: "the repo's reached exactly", l: l,
			spends: []Spend{{42, ago(3 * time.Hour), 4}, {42, ago(time.Hour), 6}},
			scope:  ScopeRepo, spent: 10, next: ago(3 * time.Hour).Add(24 * time.Hour)},
		{name: "frees up when enough has aged out, not the first", l: l,
			spends: []Spend{{42, ago(5 * time.Hour), 1}, {42, ago(4 * time.Hour), 8}, {42, ago(time.Hour), 3}},
			scope:  ScopeRepo, spent: 12, next: ago(4 * time.Hour).Add(24 * time.Hour)},
		{name: "the installation's, by other repos", l: l,
			spends: []Spend{{42, ago(2 * time.Hour), 2}, {7, ago(6 * time.Hour), 9}, {8, ago(time.Hour), 4}},
			scope:  ScopeInstallation, spent: 15, next: ago(6 * time.Hour).Add(24 * time.Hour)},
		{name: "both reached names the repo's", l: l,
			spends: []Spend{{42, ago(time.Hour), 20}}, scope: ScopeRepo, spent: 20, next: ago(time.Hour).Add(24 * time.Hour)},
		{name: "24 hours old counts for nothing", l: l,
			spends: []Spend{{42, ago(24 * time.Hour), 100}, {42, ago(25 * time.Hour), 100}, {42, ago(time.Hour), 1}}},
		{name: "no budgets", spends: []Spend{{42, ago(time.Hour), 1e6}}},
		{name: "a repo budget alone", l: Limits{DailyMoneyPerRepo: 1},
			spends: []Spend{{7, ago(time.Hour), 1e6}, {42, ago(time.Hour), 1}}, scope: ScopeRepo, spent: 1, next: ago(time.Hour).Add(24 * time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := MoneyBudget(c.l, 42, c.spends, now, "alice")
			if c.scope == "" {
				if !d.Allowed {
					t.Fatalf("refused: %+v", d)
				}
				return
			}
			want := Decision{Reason: ReasonMoneyBudget, Sender: "alice", MoneyScope: c.scope, Spent: c.spent, MoneyCap: map[Scope]float64{ScopeRepo: c.l.DailyMoneyPerRepo, ScopeInstallation: c.l.DailyMoneyPerInstallation}[c.scope], NextSlot: c.next}
			if d != want {
				t.Errorf("got  %+v\nwant %+v", d, want)
			}
		})
	}
}

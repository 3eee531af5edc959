package policy

import (
	"slices"
	"time"
)

// ReasonDailyBudget: the repository started as many sessions in the last
// 24 hours as its daily cap allows.
const ReasonDailyBudget Reason = "daily_budget"

// ReasonMoneyBudget: the model cost of the sessions started in the last 24
// hours in the repository, or in its installation, reached that scope's
// money budget.
const ReasonMoneyBudget Reason = "money_budget"

// Limits are the session limits in force for one repository. The server
// sets them; a repository's config may only narrow them (Narrow).
type Limits struct {
	// ActivePerRepo, ActivePerUser and ActivePerInstallation cap the
	// sessions active at once in one repository, for one requester, and in
	// one GitHub App installation. 0 means no cap.
	ActivePerRepo, ActivePerUser, ActivePerInstallation int
	// DailyPerRepo caps the sessions started in one repository per rolling
	// 24 hours. 0 means no cap.
	DailyPerRepo int
	// DailyMoneyPerRepo and DailyMoneyPerInstallation cap, in US dollars,
	// the model cost of the sessions started in one repository and in one
	// installation per rolling 24 hours (MoneyBudget). 0 means no cap.
	DailyMoneyPerRepo, DailyMoneyPerInstallation float64
	// SessionTimeout is the longest a session may run.
	SessionTimeout time.Duration
	// MaxChangedFiles is the most files one change may touch.
	MaxChangedFiles int
	// RepairsPerPR is how many automatic repair sessions one pull request
	// may have. Unlike the caps above, 0 means none at all.
	RepairsPerPR int
}

// RepoLimits is what a repository's config asks for; 0 means "the server's".
type RepoLimits struct {
	MaxActive, DailySessions      int
	SessionTimeout                time.Duration
	MaxChangedFiles, RepairsPerPR int
	// DailyMoney narrows DailyMoneyPerRepo.
	DailyMoney float64
}

// Narrow applies a repo's limits to the server's. A repo value counts only
// when it is positive and tighter than the server's, so a repository can
// never widen a limit; a zero or negative repo value leaves the server's.
// For a cap where the server's 0 means no cap (ActivePerRepo, DailyPerRepo,
// DailyMoneyPerRepo, SessionTimeout and MaxChangedFiles), any positive repo
// value is tighter.
// RepairsPerPR is different: the server's 0 means no repairs at all, and
// no repository can turn them on.
//
// ActivePerUser, ActivePerInstallation and DailyMoneyPerInstallation span
// repositories, so no single repository's config may change them.
func Narrow(server Limits, repo RepoLimits) Limits {
	out := server
	out.ActivePerRepo = narrowCap(server.ActivePerRepo, repo.MaxActive)
	out.DailyPerRepo = narrowCap(server.DailyPerRepo, repo.DailySessions)
	out.DailyMoneyPerRepo = narrowCap(server.DailyMoneyPerRepo, repo.DailyMoney)
	out.SessionTimeout = time.Duration(narrowCap(int64(server.SessionTimeout), int64(repo.SessionTimeout)))
	out.MaxChangedFiles = narrowCap(server.MaxChangedFiles, repo.MaxChangedFiles)
	if repo.RepairsPerPR > 0 && repo.RepairsPerPR < server.RepairsPerPR {
		out.RepairsPerPR = repo.RepairsPerPR
	}
	return out
}

// narrowCap narrows a cap where 0 (or less) means no cap.
func narrowCap[T int | int64 | float64](server, repo T) T {
	if repo > 0 && (server <= 0 || repo < server) {
		return repo
	}
	return server
}

// Load is how many sessions are active (admitted and not done) in each
// scope, and how many wait ahead of this one (queued for capacity earlier)
// in each scope. The session being admitted is in none of the counts.
type Load struct {
	ActiveRepo, ActiveUser, ActiveInstallation int
	AheadRepo, AheadUser, AheadInstallation    int
	// StartedRepo counts the repo's sessions that started in the last 24
	// hours or hold a place in its queue (they will start), for
	// DailyBudget; OldestStart is the earliest of those starts.
	StartedRepo int
	OldestStart time.Time
}

// Scope is one of the scopes a session cap applies to.
type Scope string

const (
	ScopeRepo         Scope = "repo"
	ScopeUser         Scope = "user"
	ScopeInstallation Scope = "installation"
)

// Admission is Admit's answer.
type Admission struct {
	Admit bool
	// When not admitted: the tightest scope holding it back, its cap, and
	// this session's 1-based position in that scope's queue (ahead + 1).
	Scope    Scope
	Cap      int
	Position int
}

// Admit admits a session when, in every capped scope, active + ahead < cap.
// Counting the sessions ahead, and not only the active ones, is what makes
// the queue first come, first served: a session never overtakes one that
// waits ahead of it, even when a slot is free in its own scopes.
//
// When several scopes hold it back, the tightest is the one where the most
// sessions must finish before this one can start there (active + ahead -
// cap + 1); on a tie, the narrower scope (repo, then user, then
// installation) is named. A cap of 0 or less is no cap; negative counts
// count as 0.
func Admit(l Limits, load Load) Admission {
	scopes := [...]struct {
		scope              Scope
		cap, active, ahead int
	}{
		{ScopeRepo, l.ActivePerRepo, load.ActiveRepo, load.AheadRepo},
		{ScopeUser, l.ActivePerUser, load.ActiveUser, load.AheadUser},
		{ScopeInstallation, l.ActivePerInstallation, load.ActiveInstallation, load.AheadInstallation},
	}
	out, worst := Admission{Admit: true}, 0
	for _, s := range scopes {
		if s.cap <= 0 {
			continue
		}
		active, ahead := max(s.active, 0), max(s.ahead, 0)
		if active+ahead < s.cap {
			continue
		}
		if wait := active + ahead - s.cap + 1; wait > worst {
			worst = wait
			out = Admission{Scope: s.scope, Cap: s.cap, Position: ahead + 1}
		}
	}
	return out
}

// DailyBudget refuses a new session when `started` sessions began in the
// 24 h before now and the repository's daily cap (l.DailyPerRepo; 0 is no
// cap) is reached. oldest is the earliest of those starts, so the refusal
// can say when the next slot frees up: the decision's NextSlot is oldest +
// 24h, or zero when oldest is zero or that time is already past (the
// caller's counts disagree). Its Sender is sender, as Authorize's are.
func DailyBudget(l Limits, started int, oldest, now time.Time, sender string) Decision {
	if l.DailyPerRepo <= 0 || started < l.DailyPerRepo {
		return Decision{Allowed: true}
	}
	d := Decision{Reason: ReasonDailyBudget, Sender: sender, Started: started, DailyCap: l.DailyPerRepo}
	if next := oldest.Add(24 * time.Hour); !oldest.IsZero() && next.After(now) {
		d.NextSlot = next
	}
	return d
}

// Spend is one session's model cost, in US dollars at the server's prices,
// counted at its start (when it was admitted), as DailyBudget counts the
// session.
type Spend struct {
	RepoID    int64
	StartedAt time.Time
	USD       float64
}

// MoneyBudget refuses a session of repository repoID when the spend of
// the sessions started in the 24 h before now reached a money budget: the
// repository's (l.DailyMoneyPerRepo, counting spends of repoID) or the
// installation's (l.DailyMoneyPerInstallation, counting all of spends,
// which must be the installation's); 0 is no budget. The repository's is
// named when both are reached. Spends started 24 h or more before now
// count for nothing, so a caller may pass a wider window. The decision's
// NextSlot is when, as the sessions counted turn 24 hours old, the spend
// first falls below the budget. Its Sender is sender, as Authorize's are.
func MoneyBudget(l Limits, repoID int64, spends []Spend, now time.Time, sender string) Decision {
	since := now.Add(-24 * time.Hour)
	var repo, all []Spend
	for _, s := range spends {
		if !s.StartedAt.After(since) || s.USD <= 0 {
			continue
		}
		all = append(all, s)
		if s.RepoID == repoID {
			repo = append(repo, s)
		}
	}
	for _, b := range []struct {
		scope  Scope
		cap    float64
		counts []Spend
	}{{ScopeRepo, l.DailyMoneyPerRepo, repo}, {ScopeInstallation, l.DailyMoneyPerInstallation, all}} {
		if b.cap <= 0 {
			continue
		}
		spent := 0.0
		for _, s := range b.counts {
			spent += s.USD
		}
		if spent < b.cap {
			continue
		}
		d := Decision{Reason: ReasonMoneyBudget, Sender: sender, MoneyScope: b.scope, Spent: spent, MoneyCap: b.cap}
		slices.SortFunc(b.counts, func(x, y Spend) int { return x.StartedAt.Compare(y.StartedAt) })
		left := spent
		for _, s := range b.counts {
			if left -= s.USD; left < b.cap {
				d.NextSlot = s.StartedAt.Add(24 * time.Hour)
				break
			}
		}
		return d
	}
	return Decision{Allowed: true}
}

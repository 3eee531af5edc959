package app

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/policy"
)

// Session trigger kinds, as stored in sessions.trigger_kind.
const (
	triggerComment       = "comment"
	triggerReviewComment = "review_comment"
	triggerLabel         = "label"
	triggerRepair        = "repair"
	triggerRetry         = "retry"
)

// triggerInfo is what a session's way in adds (sessions.trigger_info).
type triggerInfo struct {
	// Label is the label that started a label session.
	Label string `json:"label,omitempty"`
	// Review is the review comment a review-comment session answers.
	Review *reviewInfo `json:"review,omitempty"`
	// Checks are the failing checks a repair session repairs.
	Checks []string `json:"checks,omitempty"`
	// Repair is this repair's number and the budget it counts against.
	RepairNumber int  `json:"repair_number,omitempty"`
	RepairBudget int  `json:"repair_budget,omitempty"`
	RepairLast   bool `json:"repair_last,omitempty"`
	// Queue is the progress comment's line while the session waited for
	// capacity, and QueuedFor its scope, so it can say so when it starts.
	QueuedFor string `json:"queued_for,omitempty"`
}

type reviewInfo struct {
	CommentID int64  `json:"comment_id"`
	ThreadID  int64  `json:"thread_id"` // the thread's first comment, which replies attach to
	Path      string `json:"path"`
	Line      int    `json:"line"`
	StartLine int    `json:"start_line,omitempty"`
	Side      string `json:"side,omitempty"`
	DiffHunk  string `json:"diff_hunk,omitempty"`
	CommitID  string `json:"commit_id,omitempty"`
}

func infoOf(sess store.Session) triggerInfo {
	var ti triggerInfo
	if sess.TriggerInfo != "" {
		// Only our own JSON is stored here; a row that does not decode
		// (written by a newer replica) reads as no extra information.
		_ = json.Unmarshal([]byte(sess.TriggerInfo), &ti)
	}
	return ti
}

// originOf is what the session's way in adds to its progress comment.
func originOf(sess store.Session) render.Origin {
	ti := infoOf(sess)
	o := render.Origin{Repair: sess.TriggerKind == triggerRepair, Label: ti.Label, Checks: ti.Checks,
		RepairNumber: ti.RepairNumber, RepairBudget: ti.RepairBudget, RepairLast: ti.RepairLast, QueuedFor: ti.QueuedFor}
	if r := ti.Review; r != nil {
		o.Review = &render.ReviewSpot{Path: r.Path, Line: r.Line, StartLine: r.StartLine}
	}
	return o
}

func (ti triggerInfo) encode() string {
	if ti.Label == "" && ti.Review == nil && len(ti.Checks) == 0 && ti.RepairNumber == 0 && ti.QueuedFor == "" {
		return ""
	}
	return mustJSON(ti)
}

// cachedRepoConfig is the repo's config as the cache knows it, for
// decisions in the request: known is false on a miss (a row older than
// repo_config_max_age, or one that no longer parses, counts as one), and
// then the caller errs on the side of accepting. The result is shared with
// the memo: read it, never change it.
func (s *Service) cachedRepoConfig(ctx context.Context, repoID int64) (cfg config.Repo, known bool, err error) {
	now := s.clock.Now()
	entry, found, err := s.store.CachedRepoConfig(ctx, repoID, now)
	if err != nil || !found {
		return config.Repo{}, false, err
	}
	if now.Sub(entry.FetchedAt) >= s.cfg.RepoConfigMaxAge {
		// Too old to refuse on: the push that changed the file may have
		// been lost. Accepting lets the worker read it again, which
		// refreshes the entry for the events after.
		return config.Repo{}, false, nil
	}
	switch entry.Status {
	case store.ConfigDefaults:
		return config.Repo{}, true, nil
	case store.ConfigFile:
		cfg, ok := s.parsed.get(entry)
		return cfg, ok, nil
	}
	return config.Repo{}, false, nil
}

// parsedConfigs memoises config.ParseRepo over cached entries, keyed by
// repo and checked by content: every app's check events reach the webhook
// path, and parsing a repo's YAML for each was most of an ignored event's
// cost (BENCHMARKS.md). A changed file misses and is parsed once.
type parsedConfigs struct {
	mu sync.Mutex
	m  map[int64]parsedConfig
}

type parsedConfig struct {
	content string
	cfg     config.Repo
	ok      bool
}

// maxParsedConfigs bounds the memo; past it, it starts again empty.
const maxParsedConfigs = 10000

func (p *parsedConfigs) get(e store.RepoConfigEntry) (config.Repo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if got, hit := p.m[e.RepoID]; hit && got.content == e.Content {
		return got.cfg, got.ok
	}
	cfg, err := config.ParseRepo([]byte(e.Content))
	if p.m == nil || len(p.m) >= maxParsedConfigs {
		p.m = map[int64]parsedConfig{}
	}
	p.m[e.RepoID] = parsedConfig{content: e.Content, cfg: cfg, ok: err == nil}
	return cfg, err == nil
}

// isTriggerLabel says whether label starts (or, removed, cancels)
// sessions in the repo, as far as the cache knows. A true cache miss errs
// on the side of accepting: the worker reads the config, drops the
// session silently if the label is not the trigger (reasonNotATrigger),
// and the cache then filters the repo's next label events here.
func (s *Service) isTriggerLabel(ctx context.Context, repoID int64, label string) (bool, error) {
	cfg, known, err := s.cachedRepoConfig(ctx, repoID)
	if err != nil || !known {
		return !known, err
	}
	return strings.EqualFold(label, cfg.TriggerLabel()), nil
}

// AcceptCheckFailure implements handlers.Sink: a failing check that the
// cached config asks to repair is queued for the worker, which decides
// after repair.debounce so that checks failing on one commit meet in one
// session. Everything else stores nothing.
func (s *Service) AcceptCheckFailure(ctx context.Context, f handlers.CheckFailure) error {
	log := zerolog.Ctx(ctx)
	cfg, known, err := s.cachedRepoConfig(ctx, f.Repo.ID)
	if err != nil {
		return &StoreError{Err: err}
	}
	if known && (!cfg.RepairEnabled() || (f.Name != "" && !cfg.RepairsCheck(f.Name))) {
		log.Debug().Str("check", f.Name).Msg("check failure ignored: the repo does not repair it")
		return nil
	}
	if policy.AllForks(f.PullRequests, func(p handlers.PullRef) (int64, int64) { return p.HeadRepoID, p.BaseRepoID }) {
		log.Debug().Str("check", f.Name).Msg("check failure ignored: fork pull requests are never repaired")
		return nil
	}
	now := s.clock.Now()
	res, err := s.store.Accept(ctx, store.Acceptance{
		DeliveryID: f.DeliveryID, Event: f.Event, At: now,
		Work: []store.NewWork{{Kind: store.ConsiderRepair, Payload: mustJSON(f), RunAfter: now.Add(s.cfg.Repair.Debounce)}},
	})
	if err != nil {
		return &StoreError{Err: err}
	}
	log.Info().Str("result", res.String()).Str("check", f.Name).Str("sha", f.HeadSHA).Msg("check failure queued for repair")
	s.wakeWorkers()
	return nil
}

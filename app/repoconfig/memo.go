package repoconfig

import (
	"sync"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
)

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

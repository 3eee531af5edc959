package web

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/internal/storetest"
)

// benchHistory is a year of 100,000 sessions over 20 repositories: each
// repository runs its config's preset and model (changed once, mid-year),
// 40 requesters work in three repositories each, and triggers are mostly
// comments. 60% open a PR, whose fate is drawn: merged, closed, withdrawn
// or open, some reverted, with review rounds, comments and time to merge.
func benchHistory(n int) (fates []outcomes.Fate, noPR []outcomes.Dims) {
	r := rand.New(rand.NewPCG(38, 38))
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	presets := []string{"codex", "claude-code", "opencode"}
	models := []string{"gpt-5", "claude-sonnet", "gpt-5-mini", "claude-opus"}
	triggers := []string{"comment", "comment", "comment", "label", "review_comment", "repair", "dashboard", "retry"}
	for i := range n {
		requester := r.IntN(40)
		repo := (requester*3 + r.IntN(3)) % 20
		at := t0.Add(time.Duration(r.Int64N(int64(364 * 24 * time.Hour))))
		half := 0
		if at.After(t0.Add(182 * 24 * time.Hour)) {
			half = 1
		}
		d := outcomes.Dims{RepoID: int64(1 + repo), Repo: fmt.Sprintf("acme/repo%d", repo), Week: outcomes.Week(at),
			Trigger: triggers[r.IntN(len(triggers))], Preset: presets[repo%3], Model: models[(repo+half)%4],
			Requester: fmt.Sprintf("user%d", requester)}
		if r.IntN(10) >= 6 {
			noPR = append(noPR, d)
			continue
		}
		f := outcomes.Fate{Dims: d, Number: i + 1, InstallationID: 1, SessionID: fmt.Sprintf("s%d", i), OpenedAt: at, State: outcomes.Open,
			Tokens: outcomes.Tokens{Input: 40000, Output: 8000, Total: 48000}}
		switch x := r.IntN(10); {
		case x < 6:
			f.State, f.MergedAt = outcomes.Merged, at.Add(time.Duration(10+r.IntN(5000))*time.Minute)
			f.ReviewRounds, f.ReviewComments, f.ThreadComments = r.IntN(4), r.IntN(12), r.IntN(5)
			if r.IntN(30) == 0 {
				f.RevertedAt = f.MergedAt.Add(48 * time.Hour)
			}
		case x < 8:
			f.State = outcomes.Closed
		case x < 9:
			f.State, f.Withdrawn = outcomes.Closed, true
		}
		fates = append(fates, f)
	}
	return fates, noPR
}

// BenchmarkOutcomesPage renders /outcomes over 100,000 sessions (the
// rollup kept on write, decision 0075), on SQLite and PostgreSQL: the whole
// handler, from the request to the written HTML with its charts, for a
// viewer who reads 15 of the 20 repositories (cached, as for
// web.permission_cache after the first page), by each grouping and with a
// filter. It reports the p50 and p99 of the server time.
func BenchmarkOutcomesPage(b *testing.B) {
	fates, noPR := benchHistory(100000)
	for _, driver := range storetest.Drivers {
		b.Run(driver, func(b *testing.B) {
			st := storetest.Open(b, driver)
			ctx := context.Background()
			if err := st.OutcomesFixture(ctx, fates, noPR, time.Now()); err != nil {
				b.Fatal(err)
			}
			key, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
			s, err := New(Options{Store: st, PublicURL: "https://inspect.example", WebURL: "https://github.com", APIURL: "https://api.github.com",
				Key: key, PermissionCache: time.Hour, SessionLifetime: time.Hour, Log: zerolog.Nop()})
			if err != nil {
				b.Fatal(err)
			}
			readable := map[int64]repoRef{}
			for id := int64(1); id <= 15; id++ {
				readable[id] = repoRef{ID: id, Owner: "acme", Name: fmt.Sprintf("repo%d", id-1), InstallationID: 1}
			}
			v := &viewer{UserID: 5, Login: "alice", CSRF: "c", readable: readable}
			for _, page := range []struct{ name, url string }{
				{"by-repo", "/outcomes"},
				{"by-model", "/outcomes?by=model"},
				{"by-requester", "/outcomes?by=requester"},
				{"by-week", "/outcomes?by=week"},
				{"by-preset-filtered", "/outcomes?by=preset&trigger=comment&since=2026-07-06"},
			} {
				b.Run(page.name, func(b *testing.B) {
					times := make([]time.Duration, 0, b.N)
					for b.Loop() {
						req := httptest.NewRequest(http.MethodGet, page.url, nil).WithContext(context.WithValue(ctx, viewerKey{}, v))
						rec := httptest.NewRecorder()
						start := time.Now()
						s.outcomesPage(rec, req)
						times = append(times, time.Since(start))
						if rec.Code != http.StatusOK {
							b.Fatalf("%d: %s", rec.Code, rec.Body)
						}
					}
					slices.Sort(times)
					b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
}

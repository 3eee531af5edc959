package web

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/storetest"
	"github.com/inspecthq/inspect/session"
)

// BenchmarkSessionsList renders the first page of the sessions list, and
// a filtered one, with 10,000 sessions in the store (over 20 repositories,
// 15 of them readable by the viewer), on SQLite and PostgreSQL: the whole
// handler, from the request to the written HTML, with the viewer's
// repositories already cached (as they are for web.permission_cache after
// the first page). It reports the p50 and p99 of the server time.
func BenchmarkSessionsList(b *testing.B) {
	for _, driver := range storetest.Drivers {
		b.Run(driver, func(b *testing.B) {
			st := storetest.Open(b, driver)
			ctx := context.Background()
			t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			for i := range 10000 {
				sess := &store.Session{ID: fmt.Sprintf("s%05d", i), RepoID: int64(1 + i%20), RepoOwner: "acme", RepoName: fmt.Sprintf("repo%d", i%20),
					InstallationID: 1, Number: i % 300, TriggerKind: session.KindComment, CommentID: int64(i + 1), DeliveryID: fmt.Sprint("d", i),
					RequesterLogin: []string{"alice", "bob", "carol"}[i%3], RequesterID: 5, RequesterType: "User", Instructions: "fix the flaky test"}
				if _, err := st.Accept(ctx, store.Acceptance{DeliveryID: sess.DeliveryID, Event: "issue_comment", At: t0.Add(time.Duration(i) * time.Second), CommentID: sess.CommentID, Session: sess}); err != nil {
					b.Fatal(err)
				}
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
				{"first-page", "/sessions"},
				{"filtered", "/sessions?repo=acme/repo3&requester=bob"},
			} {
				b.Run(page.name, func(b *testing.B) {
					times := make([]time.Duration, 0, b.N)
					for b.Loop() {
						req := httptest.NewRequest(http.MethodGet, page.url, nil).WithContext(context.WithValue(ctx, viewerKey{}, v))
						rec := httptest.NewRecorder()
						start := time.Now()
						s.sessionsPage(rec, req)
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

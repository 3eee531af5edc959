package store_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// snapshotAudit is a build's egress audit: a module fetched, and a
// request refused whose path and reason are the sandbox's own text.
func snapshotAudit(path string) *contract.EgressAudit {
	var a contract.EgressAudit
	a.Add(contract.EgressRecord{Kind: contract.EgressRegistry, Phase: contract.PhaseSetup, Upstream: "goproxy", Method: "GET", Path: path, Status: 200, Bytes: 4096, Millis: 30})
	a.Add(contract.EgressRecord{Kind: contract.EgressRefused, Phase: contract.PhaseSetup, Upstream: "elsewhere", Method: "GET", Path: "<script>x</script>/@v/list", Status: 403,
		Why: `the server opens no registry named "elsewhere" to this attempt`})
	return &a
}

// A snapshot build's egress audit is kept with the build's record, as its
// log is: the last build's, whatever its outcome (a failure's replaces a
// success's, a build that sent nothing clears it), in process and over the
// channel, and the page's list reads it back whole.
func TestSnapshotBuildRecordsItsEgressAudit(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.WantSnapshots(ctx, 7, "acme/widgets", 1, t0); err != nil {
			t.Fatal(err)
		}
		digest, sha := "sha256:"+strings.Repeat("a", 64), strings.Repeat("b", 40)
		built := snapshotAudit("fake.test/alpha/@v/v1.0.0.zip")
		failed := snapshotAudit("fake.test/alpha/@v/v1.0.1.zip")
		viaChannel := snapshotAudit("fake.test/alpha/@v/v1.0.2.zip")
		for _, step := range []struct {
			name    string
			attempt string // "" in process
			o       store.SnapshotOutcome
			want    *contract.EgressAudit
		}{
			{"a snapshot", "", store.SnapshotOutcome{Digest: digest, SHA: sha, Branch: "main", Size: 1, Layers: 1, Egress: built}, built},
			{"a failure", "", store.SnapshotOutcome{Error: "setup failed", Egress: failed}, failed},
			{"setup skipped", "", store.SnapshotOutcome{Digest: digest, SHA: sha, Branch: "main", Size: 1, Layers: 1}, nil},
			{"over the channel", "build-1", store.SnapshotOutcome{Digest: digest, SHA: sha, Branch: "main", Size: 1, Layers: 1, Egress: viaChannel}, viaChannel},
			{"an empty audit", "", store.SnapshotOutcome{Error: "no", Egress: &contract.EgressAudit{}}, nil},
		} {
			now := t0.Add(time.Hour)
			if step.attempt == "" {
				if err := s.FinishSnapshotBuild(ctx, 7, step.o, now); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
			} else {
				a := store.Attempt{ID: step.attempt, Kind: "snapshot", RepoID: 7, Deadline: t0.Add(3 * time.Hour), Spec: "{}"}
				if err := s.CreateAttempt(ctx, a, "claim-"+step.attempt+"-0123456789", t0); err != nil {
					t.Fatal(err)
				}
				if _, err := s.ClaimAttempt(ctx, step.attempt, "claim-"+step.attempt+"-0123456789", "token-"+step.attempt+"-0123456789", t0); err != nil {
					t.Fatal(err)
				}
				if err := s.SetSnapshotAttempt(ctx, 7, step.attempt, t0); err != nil {
					t.Fatal(err)
				}
				if first, err := s.RecordSnapshotResult(ctx, step.attempt, "{}", step.o, now); err != nil || !first {
					t.Fatalf("%s: first %v, %v", step.name, first, err)
				}
			}
			r, err := s.GetSnapshotRepo(ctx, 7)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.LastEgress, step.want) {
				t.Errorf("after %s: the record's egress audit is %+v, want %+v", step.name, r.LastEgress, step.want)
			}
			list, err := s.SnapshotRepos(ctx, []int64{7})
			if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0].LastEgress, step.want) {
				t.Errorf("after %s: the page's list = %+v (%v)", step.name, list, err)
			}
		}
	})
}

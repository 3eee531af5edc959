package faults_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Two replicas, 100 distinct commands on 100 pull requests, each delivered
// three times with one GUID (GitHub's redeliveries keep it): twice at once,
// to different replicas, then once more. Exactly one session, one check
// run and one progress comment per command, and no pull request.
func TestDuplicatesAcrossReplicasHaveOneEffect(t *testing.T) {
	const commands = 100
	f := newFleet(t, fleetOptions{})
	f.start()
	f.start()
	for i := range commands {
		f.pull(100 + i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range commands {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			payload := f.comment(100+i, fmt.Sprintf("/inspect look at topic %d", i))
			first := f.gh.DeliverTo(ctx, i%2, "issue_comment", payload)
			if first.StatusCode != 200 {
				t.Errorf("first delivery of command %d: %d %s", i, first.StatusCode, first.Status)
			}
			// The same GUID, at once, to both replicas.
			var again sync.WaitGroup
			for target := range 2 {
				again.Add(1)
				go func() {
					defer again.Done()
					d := f.gh.Redeliver(ctx, first.ID, target)
					if d.GUID != first.GUID || d.StatusCode != 200 {
						t.Errorf("redelivery of command %d to replica %d: guid %s (want %s), %d %s", i, target, d.GUID, first.GUID, d.StatusCode, d.Status)
					}
				}()
			}
			again.Wait()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	all := f.waitDone(commands, 3*time.Minute)
	if len(all) != commands {
		t.Errorf("sessions = %d, want %d", len(all), commands)
	}
	perPR := map[int]int{}
	for _, s := range all {
		perPR[s.Number]++
		if s.Outcome != "no_change" {
			t.Errorf("session %s on #%d ended %s/%s, want no_change", s.ID, s.Number, s.Outcome, s.Reason)
		}
	}
	for i := range commands {
		if n := perPR[100+i]; n != 1 {
			t.Errorf("#%d has %d sessions, want 1", 100+i, n)
		}
	}
	runs := f.gh.CheckRuns(owner, repoName)
	if len(runs) != commands {
		t.Errorf("check runs = %d, want %d", len(runs), commands)
	}
	for _, r := range runs {
		if r.Status != "completed" {
			t.Errorf("check run %d is %s, want completed", r.ID, r.Status)
		}
	}
	progress := 0
	for i := range commands {
		progress += len(botComments(f.gh, 100+i))
	}
	if progress != commands {
		t.Errorf("progress comments = %d, want %d", progress, commands)
	}
	if n := f.created(repoPath("/pulls")); n != 0 {
		t.Errorf("pull requests created = %d, want 0 (the agent changes nothing)", n)
	}
	// Both replicas did part of the work: the test is about a fleet.
	for _, r := range f.replicas {
		if !strings.Contains(r.Logs(), `"trigger accepted"`) {
			t.Errorf("%s accepted nothing", r.Name())
		}
	}
}

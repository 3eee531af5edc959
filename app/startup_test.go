package app

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/appsetup"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/internal/fakegithub"
)

var quickBackoff = StartBackoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}

func TestWaitForGitHubRetriesUntilGitHubAnswers(t *testing.T) {
	gh := fakegithub.New()
	defer gh.Close()
	clients, err := ghclient.NewGitHubClients(gh.APIURL(), gh.AppID(), gh.AppPrivateKeyPEM(), "inspect-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		gh.FailNext("GET", "/app", 502)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slug, err := WaitForGitHub(ctx, clients, quickBackoff, zerolog.Nop())
	if err != nil || slug != gh.AppSlug() {
		t.Fatalf("slug %q, %v", slug, err)
	}
	var asked int
	for _, r := range gh.RequestsMatching("GET", "/app") {
		if r.Path == "/app" {
			asked++
		}
	}
	if asked != 4 {
		t.Errorf("GET /app asked %d times, want 3 failures and 1 answer", asked)
	}
}

func TestWaitForGitHubGivesUpAtOnceOnBadCredentials(t *testing.T) {
	gh := fakegithub.New()
	defer gh.Close()
	other := fakegithub.New() // another App's key: GitHub answers 401
	defer other.Close()
	clients, err := ghclient.NewGitHubClients(gh.APIURL(), gh.AppID(), other.AppPrivateKeyPEM(), "inspect-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := WaitForGitHub(ctx, clients, StartBackoff{Initial: time.Hour, Max: time.Hour}, zerolog.Nop()); err == nil ||
		!strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "github.app_id") {
		t.Errorf("err = %v", err)
	}
}

func TestWaitForGitHubStopsWhenTheServerIsStopped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every attempt fails to connect
	gh := fakegithub.New()
	defer gh.Close()
	clients, err := ghclient.NewGitHubClients("http://"+addr+"/api/v3/", gh.AppID(), gh.AppPrivateKeyPEM(), "inspect-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := WaitForGitHub(ctx, clients, quickBackoff, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "waiting for GitHub at start") {
		t.Errorf("err = %v", err)
	}
}

// An App registered before Inspect handled an event (a manifest change
// does not reach it) gets a warning at start naming what to tick; one
// subscribed to every event gets none.
func TestWaitForGitHubWarnsOfEventsTheAppLacks(t *testing.T) {
	gh := fakegithub.New()
	defer gh.Close()
	clients, err := ghclient.NewGitHubClients(gh.APIURL(), gh.AppID(), gh.AppPrivateKeyPEM(), "inspect-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		events []string
		warns  string
	}{
		{[]string{"issue_comment", "issues", "pull_request_review_comment", "check_run", "check_suite", "status", "push"}, `"missing_events":["pull_request","pull_request_review"]`},
		{appsetup.Events, ""},
	} {
		gh.SetAppEvents(c.events...)
		var logs bytes.Buffer
		if _, err := WaitForGitHub(context.Background(), clients, quickBackoff, zerolog.New(&logs)); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), "missing_events"); got != (c.warns != "") || !strings.Contains(logs.String(), c.warns) {
			t.Errorf("events %v: logs %s", c.events, logs.String())
		}
	}
}

package app

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

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

package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

func TestServicesParseIntoTheSpecAndTheSnapshotSetup(t *testing.T) {
	r, err := ParseRepo([]byte(`
snapshot:
  setup: [{name: deps, run: [go, mod, download]}]
  caches: [{path: /cache/pg, lockfiles: [go.sum]}]
services:
  - name: postgres
    run: [postgres, -D, /cache/pg/data]
    ready: {tcp: 5432}
    setup: [initdb, -D, /cache/pg/data]
  - name: worker
    run: [./worker]
    ready: {run: [./worker, --ping]}
    ready_timeout: 5s
    for_agent: true
`))
	if err != nil {
		t.Fatal(err)
	}
	got := r.ServiceSpecs(2*time.Minute, time.Hour)
	want := []contract.Service{
		{Name: "postgres", Argv: []string{"postgres", "-D", "/cache/pg/data"}, Ready: contract.ServiceReady{TCP: 5432},
			ReadyTimeout: contract.Duration(DefaultReadyTimeout), Setup: []string{"initdb", "-D", "/cache/pg/data"}, SetupTimeout: contract.Duration(2 * time.Minute)},
		{Name: "worker", Argv: []string{"./worker"}, Ready: contract.ServiceReady{Argv: []string{"./worker", "--ping"}},
			ReadyTimeout: contract.Duration(5 * time.Second), ForAgent: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ServiceSpecs:\n got %+v\nwant %+v", got, want)
	}
	// The ready timeout never outlasts the session.
	if s := r.ServiceSpecs(time.Minute, 3*time.Second); s[0].ReadyTimeout.Std() != 3*time.Second || s[0].SetupTimeout.Std() != 3*time.Second {
		t.Errorf("capped at 3s: %+v", s[0])
	}
	// A snapshot build runs the service's setup after the repo's own.
	setup := r.SnapshotSetupCommands(time.Minute, time.Hour)
	if len(setup) != 2 || setup[0].Name != "snapshot deps" || setup[1].Name != "service postgres setup" || !reflect.DeepEqual(setup[1].Argv, want[0].Setup) {
		t.Errorf("SnapshotSetupCommands: %+v", setup)
	}
}

func TestServicesAreRefused(t *testing.T) {
	for yaml, want := range map[string]string{
		`services: [{name: Postgres, run: [pg], ready: {tcp: 1}}]`:                                  "services[0].name",
		`services: [{name: pg, run: [pg], ready: {tcp: 1}}, {name: pg, run: [x], ready: {tcp: 2}}]`: `services[1].name: "pg" names an earlier service`,
		`services: [{name: pg, ready: {tcp: 1}}]`:                                                   "services[0].run",
		`services: [{name: pg, run: [pg]}]`:                                                         "services[0].ready: is required",
		`services: [{name: pg, run: [pg], ready: {tcp: 1, run: [x]}}]`:                              "either run or tcp",
		`services: [{name: pg, run: [pg], ready: {tcp: 70000}}]`:                                    "services[0].ready.tcp",
		`services: [{name: pg, run: [pg], ready: {tcp: 1}, ready_timeout: 11m}]`:                    "services[0].ready_timeout",
		`services: [{name: pg, run: [pg], ready: {tcp: 1}, setup: [""]}]`:                           "services[0].setup[0]",
		`services: [{name: pg, run: [pg], ready: {tcp: 1}, preset: postgres}]`:                      "unknown key `preset`",
	} {
		_, err := ParseRepo([]byte(yaml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRepo(%s) = %v, want an error containing %q", yaml, err, want)
		}
	}
}

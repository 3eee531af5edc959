package contract

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSpecServicesValidate(t *testing.T) {
	pg := Service{Name: "postgres", Argv: []string{"postgres"}, Ready: ServiceReady{TCP: 5432}, ReadyTimeout: Duration(time.Minute),
		Setup: []string{"initdb"}, SetupTimeout: Duration(time.Minute)}
	s := validSpec()
	s.Services = []Service{pg, {Name: "worker", Argv: []string{"w"}, Ready: ServiceReady{Argv: []string{"w", "ping"}}, ReadyTimeout: Duration(time.Second), ForAgent: true}}
	if err := s.Validate(); err != nil {
		t.Fatalf("a sound spec with services: %v", err)
	}
	for want, mutate := range map[string]func(*Service){
		"services[0].name":          func(v *Service) { v.Name = "Bad Name" },
		"services[0].argv":          func(v *Service) { v.Argv = nil },
		"services[0].ready.tcp":     func(v *Service) { v.Ready.TCP = 0 },
		"services[0].ready":         func(v *Service) { v.Ready.Argv = []string{"x"} },
		"services[0].ready_timeout": func(v *Service) { v.ReadyTimeout = Duration(time.Hour) },
		"services[0].setup_timeout": func(v *Service) { v.SetupTimeout = 0 },
	} {
		s := validSpec()
		v := pg
		mutate(&v)
		s.Services = []Service{v}
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Validate = %v", want, err)
		}
	}
	s = validSpec()
	s.Services = []Service{pg, pg}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "services[1].name") {
		t.Errorf("a repeated name: %v", err)
	}
}

// A for_agent service runs twice, for the agent and fresh for verify
// (decision 0057), so the evidence holds up to twice MaxServices runs.
func TestEvidenceHoldsEachServiceForTheAgentAndForVerify(t *testing.T) {
	runs := func(n int) []ServiceResult {
		var rs []ServiceResult
		for i := range n {
			phase := PhaseAgent
			if i >= n/2 {
				phase = PhaseVerify
			}
			rs = append(rs, ServiceResult{Name: fmt.Sprintf("svc%d", i%MaxServices), Phase: phase, Argv: []string{"sleep", "600"}, Ready: true, ExitCode: -1, Signal: "SIGKILL"})
		}
		return rs
	}
	for _, tc := range []struct {
		runs int
		ok   bool
	}{{MaxServices, true}, {2 * MaxServices, true}, {2*MaxServices + 1, false}} {
		e := validEvidence()
		e.Services = runs(tc.runs)
		if err := e.Validate(); (err == nil) != tc.ok {
			t.Errorf("%d service runs: %v, want valid %v", tc.runs, err, tc.ok)
		}
	}
}

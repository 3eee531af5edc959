package config

import (
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/policy"
)

func TestLimitsAndRepairDefaults(t *testing.T) {
	cfg, err := Load(writeFile(t, minimalYAML), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Limits{
		ActivePerRepo: 5, ActivePerUser: 3, ActivePerInstallation: 20,
		DailyPerRepo:   100,
		SessionTimeout: 30 * time.Minute, MaxChangedFiles: 100, RepairsPerPR: 2,
	}
	if got := cfg.PolicyLimits(); got != want {
		t.Errorf("PolicyLimits() = %+v, want %+v", got, want)
	}
	if cfg.Repair.Cooldown != 10*time.Minute || cfg.Repair.Debounce != 30*time.Second {
		t.Errorf("repair = %+v", cfg.Repair)
	}
}

func TestLimitsAndRepairFromYAMLAndEnv(t *testing.T) {
	cfg, err := Load(writeFile(t, minimalYAML+`
sessions: {timeout: 45m, max_changed_files: 40}
limits:
  active_per_repo: 0
  active_per_user: 1
  active_per_installation: 0
  daily_per_repo: 7
repair:
  max_sessions_per_pr: 0
  cooldown: 0s
  debounce: 10m
`), envOf(map[string]string{
		"INSPECT_LIMITS_DAILY_PER_REPO":      "9",
		"INSPECT_REPAIR_MAX_SESSIONS_PER_PR": "20",
		"INSPECT_REPAIR_COOLDOWN":            "1h",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Limits{
		ActivePerRepo: 0, ActivePerUser: 1, ActivePerInstallation: 0,
		DailyPerRepo:   9,
		SessionTimeout: 45 * time.Minute, MaxChangedFiles: 40, RepairsPerPR: 20,
	}
	if got := cfg.PolicyLimits(); got != want {
		t.Errorf("PolicyLimits() = %+v, want %+v", got, want)
	}
	if cfg.Repair.Cooldown != time.Hour || cfg.Repair.Debounce != 10*time.Minute {
		t.Errorf("repair = %+v", cfg.Repair)
	}
}

func TestLimitsAndRepairValidation(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  map[string]string
		want []string
	}{
		{"negative caps", `
limits: {active_per_repo: -1, active_per_user: -2, active_per_installation: -3, daily_per_repo: -4}`, nil, []string{
			"limits.active_per_repo: must not be negative (0 means no cap; found -1)",
			"limits.active_per_user: must not be negative (0 means no cap; found -2)",
			"limits.active_per_installation: must not be negative (0 means no cap; found -3)",
			"limits.daily_per_repo: must not be negative (0 means no cap; found -4)",
		}},
		{"too many repairs", `
repair: {max_sessions_per_pr: 21}`, nil, []string{"repair.max_sessions_per_pr: must be between 0 and 20 (0 turns automatic repair off; found 21)"}},
		{"negative repairs", ``, map[string]string{"INSPECT_REPAIR_MAX_SESSIONS_PER_PR": "-1"},
			[]string{"repair.max_sessions_per_pr: must be between 0 and 20"}},
		{"negative cooldown", `
repair: {cooldown: -1s}`, nil, []string{"repair.cooldown: must not be negative"}},
		{"long debounce", `
repair: {debounce: 11m}`, nil, []string{"repair.debounce: must be between 0s and 10m (found 11m0s)"}},
		{"negative debounce", ``, map[string]string{"INSPECT_REPAIR_DEBOUNCE": "-1s"},
			[]string{"repair.debounce: must be between 0s and 10m (found -1s)"}},
		{"bad env integer names the variable", ``, map[string]string{"INSPECT_LIMITS_ACTIVE_PER_USER": "three"},
			[]string{"INSPECT_LIMITS_ACTIVE_PER_USER (limits.active_per_user): not an integer"}},
		{"bad env duration names the variable", ``, map[string]string{"INSPECT_REPAIR_COOLDOWN": "10"},
			[]string{"INSPECT_REPAIR_COOLDOWN (repair.cooldown): not a duration"}},
		{"unknown key", `
limits: {active_per_org: 3}`, nil, []string{"unknown key `active_per_org`"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, minimalYAML+tc.yaml), envOf(tc.env))
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// The edges are valid.
	for _, env := range []map[string]string{
		{"INSPECT_REPAIR_MAX_SESSIONS_PER_PR": "0", "INSPECT_REPAIR_DEBOUNCE": "0s", "INSPECT_REPAIR_COOLDOWN": "0s"},
		{"INSPECT_REPAIR_MAX_SESSIONS_PER_PR": "20", "INSPECT_REPAIR_DEBOUNCE": "10m"},
		{"INSPECT_LIMITS_ACTIVE_PER_REPO": "0", "INSPECT_LIMITS_ACTIVE_PER_USER": "0", "INSPECT_LIMITS_ACTIVE_PER_INSTALLATION": "0", "INSPECT_LIMITS_DAILY_PER_REPO": "0"},
	} {
		if _, err := Load(writeFile(t, minimalYAML), envOf(env)); err != nil {
			t.Errorf("%v: %v", env, err)
		}
	}
}

func TestRepoNewKeyDefaults(t *testing.T) {
	r, err := ParseRepo(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.TriggerLabel() != DefaultTriggerLabel || DefaultTriggerLabel != "inspect" {
		t.Errorf("TriggerLabel() = %q", r.TriggerLabel())
	}
	if OutcomeLabelDone != "inspect:done" || OutcomeLabelFailed != "inspect:failed" {
		t.Errorf("outcome labels %q %q", OutcomeLabelDone, OutcomeLabelFailed)
	}
	if r.Repair.Enabled || r.RepairEnabled() || r.RepairsCheck("test") {
		t.Errorf("repair is on by default: %+v", r.Repair)
	}
	if got := r.PolicyLimits(); got != (policy.RepoLimits{}) {
		t.Errorf("PolicyLimits() = %+v, want all zero (the server's)", got)
	}
	// An emoji's presentation selector (U+FE0F) is part of a label a
	// person sees; every other hidden character is refused (below).
	r, err = ParseRepo([]byte("label: \"\u2699\ufe0f inspect\"\n"))
	if err != nil || r.TriggerLabel() != "\u2699\ufe0f inspect" {
		t.Errorf("emoji label: %q, %v", r.TriggerLabel(), err)
	}
	_, err = ParseRepo([]byte("label: \"in\ufe01spect\"\n"))
	if err == nil || !strings.Contains(err.Error(), "invisible") {
		t.Errorf("a variation selector that is not a presentation selector: %v, want refused", err)
	}
	// An explicit empty label is the default too.
	r, err = ParseRepo([]byte("label: \"\"\n"))
	if err != nil || r.TriggerLabel() != "inspect" {
		t.Errorf("empty label: %q, %v", r.TriggerLabel(), err)
	}
}

func TestRepoNewKeys(t *testing.T) {
	r, err := ParseRepo([]byte(`
label: "needs: agent"
repair:
  enabled: true
  checks: ["ci/*", "test"]
  max_sessions: 1
limits:
  session_timeout: 20m
  max_files: 50
  max_active: 1
  daily_sessions: 20
`))
	if err != nil {
		t.Fatal(err)
	}
	if r.TriggerLabel() != "needs: agent" {
		t.Errorf("TriggerLabel() = %q", r.TriggerLabel())
	}
	want := policy.RepoLimits{MaxActive: 1, DailySessions: 20, SessionTimeout: 20 * time.Minute, MaxChangedFiles: 50, RepairsPerPR: 1}
	if got := r.PolicyLimits(); got != want {
		t.Errorf("PolicyLimits() = %+v, want %+v", got, want)
	}
	for name, want := range map[string]bool{
		"ci/build": true, "CI/Lint": true, "test": true, "Test": true, "unit test": false, "lint": false, "": false,
	} {
		if got := r.RepairsCheck(name); got != want {
			t.Errorf("RepairsCheck(%q) = %v, want %v", name, got, want)
		}
	}

	// Patterns without repair.enabled repair nothing.
	r.Repair.Enabled = false
	if r.RepairEnabled() || r.RepairsCheck("test") {
		t.Error("repair disabled, but a check is repaired")
	}
	// A paused repository repairs nothing either.
	r.Repair.Enabled = true
	off := false
	r.Enabled = &off
	if r.RepairEnabled() || r.RepairsCheck("test") {
		t.Error("repository paused, but a check is repaired")
	}

	// Narrowing the defaults through policy.Narrow.
	got := policy.Narrow(Defaults().PolicyLimits(), want)
	if got.ActivePerRepo != 1 || got.DailyPerRepo != 20 || got.SessionTimeout != 20*time.Minute ||
		got.MaxChangedFiles != 50 || got.RepairsPerPR != 1 || got.ActivePerUser != 3 || got.ActivePerInstallation != 20 {
		t.Errorf("Narrow = %+v", got)
	}
	// A repo cannot widen.
	wide, err := ParseRepo([]byte("limits: {max_active: 50, daily_sessions: 1000}\nrepair: {max_sessions: 20}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := policy.Narrow(Defaults().PolicyLimits(), wide.PolicyLimits()); got != Defaults().PolicyLimits() {
		t.Errorf("a repo widened the limits: %+v", got)
	}
}

func TestRepoNewKeyValidation(t *testing.T) {
	for _, l := range []string{"inspect", "Agent", "needs: agent", "inspect-me", "inspectdone", "x", strings.Repeat("x", 50), strings.Repeat("é", 50), "bug 🐛"} {
		if _, err := ParseRepo([]byte("label: " + quoteYAML(l) + "\n")); err != nil {
			t.Errorf("label %q: %v", l, err)
		}
	}
	for input, want := range map[string]string{
		"label: " + strings.Repeat("x", 51) + "\n":     "label: \"" + strings.Repeat("x", 51) + "\" is 51 characters long; at most 50",
		"label: " + quoteYAML(strings.Repeat("é", 51)): "is 51 characters long; at most 50",
		"label: \"a,b\"\n":                             "label: \"a,b\" must not contain a comma",
		"label: \"fix?\"\n":                            "label: \"fix?\" must not contain ?, # or %",
		"label: \"p#1\"\n":                             "must not contain ?, # or %",
		"label: \"100%\"\n":                            "must not contain ?, # or %",
		"label: \"inspect:done\"\n":                    "label: \"inspect:done\" starts with \"inspect:\", which is reserved for Inspect's outcome labels (inspect:done, inspect:failed)",
		"label: \"inspect:\"\n":                        "label: \"inspect:\" starts with \"inspect:\"",
		"label: \"Inspect:Later\"\n":                   "label: \"Inspect:Later\" starts with",
		"label: \" inspect\"\n":                        "label: \" inspect\" must not start or end with a space",
		"label: \"   \"\n":                             "label: \"   \" must not start or end with a space",
		"label: \"in\\tspect\"\n":                      "label: \"in\\tspect\" has control or invisible characters",
		"label: \"in\\u200bspect\"\n":                  "has control or invisible characters",
		"label: [a]\n":                                 "line 1",

		"repair: {enabled: true}\n":                                 "repair.checks: must list at least one check name pattern when repair.enabled is true",
		"repair: {enabled: true, checks: []}\n":                     "repair.checks: must list at least one",
		"repair: {enabled: true, checks: [\"\"]}\n":                 "repair.checks[0]: check pattern is empty",
		"repair: {checks: [test, \"a\\nb\"]}\n":                     "repair.checks[1]: check pattern \"a\\nb\" has control or invisible characters",
		"repair: {checks: [" + strings.Repeat("x", 201) + "]}\n":    "repair.checks[0]: check pattern is 201 bytes long; at most 200",
		"repair: {enabled: true, checks: [" + manyChecks(51) + "]}": "repair.checks: has 51 patterns; at most 50",
		"repair: {max_sessions: -1}\n":                              "repair.max_sessions: must not be negative (0 means the server's repair.max_sessions_per_pr)",
		"repair: {enabled: yes please}\n":                           "line 1",
		"repair: {enable: true}\n":                                  "unknown key `enable`",

		"limits: {max_active: -1}\n":     "limits.max_active: must not be negative (0 means the server's limits.active_per_repo)",
		"limits: {daily_sessions: -1}\n": "limits.daily_sessions: must not be negative (0 means the server's limits.daily_per_repo)",
		"limits: {max_files: -1}\n":      "limits.max_files: must not be negative",
		"limits: {daily: 3}\n":           "unknown key `daily`",
	} {
		_, err := ParseRepo([]byte(input))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRepo(%q) = %v, want error containing %q", input, err, want)
		}
	}
	// Fifty patterns are fine, and patterns are checked even with repair off.
	if _, err := ParseRepo([]byte("repair: {enabled: true, checks: [" + manyChecks(50) + "]}")); err != nil {
		t.Errorf("50 checks: %v", err)
	}
	if _, err := ParseRepo([]byte("repair: {checks: [test]}")); err != nil {
		t.Errorf("checks with repair off: %v", err)
	}
	// All faults at once.
	_, err := ParseRepo([]byte("label: \"a,b\"\nrepair: {enabled: true, max_sessions: -1}\nlimits: {max_active: -1}\n"))
	for _, want := range []string{"label:", "repair.checks:", "repair.max_sessions:", "limits.max_active:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("all faults: %v lacks %q", err, want)
		}
	}
}

func manyChecks(n int) string {
	var s []string
	for i := range n {
		s = append(s, "check-"+strings.Repeat("x", i%3)+string(rune('a'+i%26)))
	}
	return strings.Join(s, ", ")
}

func quoteYAML(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"` + "\n"
}

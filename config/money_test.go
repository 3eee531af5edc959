package config

import (
	"math"
	"strings"
	"testing"
)

// Money budgets are US dollars, 0 or more: a negative, NaN or infinite one
// is refused naming its key, on the server and in a repository; a
// repository's narrows the server's per-repository budget and never the
// installation's.
func TestMoneyBudgetsAreValidatedAndNarrowed(t *testing.T) {
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		c := Defaults()
		c.Limits.DailyMoneyPerRepo, c.Limits.DailyMoneyPerInstallation = bad, bad
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "limits.daily_money_per_repo") || !strings.Contains(err.Error(), "limits.daily_money_per_installation") {
			t.Errorf("server budgets %g: %v", bad, err)
		}
	}
	if _, err := ParseRepo([]byte("limits:\n  daily_money: -0.5\n")); err == nil || !strings.Contains(err.Error(), "limits.daily_money") {
		t.Errorf("a negative repo budget: %v", err)
	}
	repo, err := ParseRepo([]byte("limits:\n  daily_money: 2.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := Defaults()
	c.Limits.DailyMoneyPerRepo, c.Limits.DailyMoneyPerInstallation = 10, 40
	if got := c.PolicyLimits(); got.DailyMoneyPerRepo != 10 || got.DailyMoneyPerInstallation != 40 {
		t.Errorf("server limits = %+v", got)
	}
	if got := repo.PolicyLimits(); got.DailyMoney != 2.5 {
		t.Errorf("repo limits = %+v", got)
	}
	env := map[string]string{"INSPECT_LIMITS_DAILY_MONEY_PER_INSTALLATION": "12.5"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := applyEnv(&c, lookup); err != nil || c.Limits.DailyMoneyPerInstallation != 12.5 {
		t.Errorf("env: %v %g", err, c.Limits.DailyMoneyPerInstallation)
	}
	env["INSPECT_LIMITS_DAILY_MONEY_PER_INSTALLATION"] = "twelve"
	if err := applyEnv(&c, lookup); err == nil {
		t.Error("a budget that is not a number is taken")
	}
}

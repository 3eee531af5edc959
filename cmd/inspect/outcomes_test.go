package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/outcomes/outcomestest"
	"github.com/inspecthq/inspect/app/store"
)

// `inspect outcomes` reads the server's database: the scripted 40
// sessions by preset, as JSON and CSV, match the hand computation of
// store's TestOutcomesByPresetAndModel, and money is at the config's prices.
func TestOutcomesCommandPrintsJSONAndCSV(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "inspect.db")
	st, err := store.Open(context.Background(), "sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if err := outcomestest.Seed(context.Background(), st, "c", time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), outcomestest.Scripted40()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "inspect.yaml")
	yaml := "state_dir: " + dir + "\ngithub:\n  app_id: 5\n  app_slug: inspect\n  private_key: k\n  webhook_secret: s\n" +
		"database:\n  driver: sqlite\n  dsn: " + db + "\n" +
		"agents:\n  providers:\n    oa:\n      kind: openai\n      base_url: https://api.openai.com/v1\n      api_key_path: " + filepath.Join(dir, "key") + "\n" +
		"  models:\n    - name: gpt-a\n      provider: oa\n      input_price: 1\n      output_price: 2\n"
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"outcomes", "--config", cfg, "--by", "preset", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got struct {
		Groups []map[string]any `json:"groups"`
		Total  map[string]any   `json:"total"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	byKey := map[string]map[string]any{}
	for _, g := range got.Groups {
		byKey[g["key"].(string)] = g
	}
	codex := byKey["codex"]
	for k, want := range map[string]any{"sessions": 14.0, "opened": 11.0, "merged": 6.0, "closed_unmerged": 2.0, "withdrawn": 2.0,
		"reverted": 1.0, "median_review_rounds": 1.0, "median_comments": 2.5, "median_minutes_to_merge": 52.5,
		"tokens_per_merged": 1000.0, "has_cost": true, "cost_per_merged": 0.0014} {
		if v := codex[k]; v != want {
			t.Errorf("codex %s = %v, want %v", k, v, want)
		}
	}
	if r := codex["acceptance_rate"].(float64); r < 0.6666 || r > 0.6667 {
		t.Errorf("codex acceptance %v, want 6/9", r)
	}
	if byKey["claude-code"]["has_cost"] != false {
		t.Error("a model without a price has a cost")
	}
	if got.Total["sessions"] != 40.0 || got.Total["opened"] != 32.0 {
		t.Errorf("total %v", got.Total)
	}
	out.Reset()
	if code := run([]string{"outcomes", "--config", cfg, "--by", "model", "--csv"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// header, claude-b, gpt-a, all
	if len(recs) != 4 || strings.Join(recs[1][:8], ",") != "claude-b,20,16,11,3,1,2,0.7333333333333333" ||
		strings.Join(recs[2][:8], ",") != "gpt-a,20,16,8,3,3,1,0.6153846153846154" || recs[3][0] != "all" {
		t.Errorf("csv:\n%s", out.String())
	}

	// A backfill on demand marks every fate for the server's reconcile
	// passes to read from GitHub; it calls nothing itself.
	out.Reset()
	if code := run([]string{"outcomes", "backfill", "--config", cfg}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "0 PRs without a fate") {
		t.Fatalf("backfill: exit %d: %s %s", code, out.String(), errOut.String())
	}
	st, err = store.Open(context.Background(), "sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	due, err := st.FatesToCheck(context.Background(), time.Now(), 100)
	if err != nil || len(due) != 32 {
		t.Errorf("after the backfill %d fates are due a check (%v), want all 32", len(due), err)
	}
}

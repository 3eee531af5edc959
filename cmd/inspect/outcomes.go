package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
)

// outcomesCmd is `inspect outcomes`: what became of the PRs Inspect
// opened, by a dimension, read from the store's rollup (as the dashboard's
// /outcomes page reads it, over every repository), as a table, JSON or
// CSV; and `inspect outcomes backfill`, which marks PRs to be read from
// the API by the server's next reconcile passes.
func outcomesCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "backfill" {
		return outcomesBackfill(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("outcomes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the server's YAML config file (its database is read; INSPECT_* variables override it)")
	by := fs.String("by", "repo", "group by: repo, trigger, preset, model, requester or week")
	var f store.OutcomeFilter
	fs.StringVar(&f.Repo, "repo", "", "only this repository (owner/name)")
	fs.StringVar(&f.Trigger, "trigger", "", "only this trigger (comment, review_comment, label, repair, retry, dashboard)")
	fs.StringVar(&f.Preset, "preset", "", "only this agent preset")
	fs.StringVar(&f.Model, "model", "", "only this model")
	fs.StringVar(&f.Requester, "requester", "", "only this requester's sessions")
	fs.StringVar(&f.Since, "since", "", "only sessions from this week on (the week's Monday, YYYY-MM-DD)")
	asJSON := fs.Bool("json", false, "print JSON: the groups' figures and the total")
	asCSV := fs.Bool("csv", false, "print CSV, one line per group and a last one for all")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *asJSON && *asCSV {
		fmt.Fprintln(stderr, "inspect outcomes: choose --json or --csv, not both")
		return 2
	}
	f.AllRepos = true
	cfg, st, code := openStoreFromConfig(*configPath, stderr)
	if st == nil {
		return code
	}
	defer func() { _ = st.Close() }() // a read-only use: nothing to lose
	groups, err := st.OutcomeGroups(context.Background(), outcomes.Dimension(*by), f)
	if err != nil {
		fmt.Fprintf(stderr, "inspect outcomes: %v\n", err)
		return 1
	}
	cost := func(model string, t outcomes.Tokens) (float64, bool) {
		return cfg.ModelCost(model, contract.TokenUsage{Input: t.Input, Output: t.Output, Total: t.Total, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite})
	}
	rows, total := outcomes.Report(groups, cost)
	total.Key = "all"
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"by": *by, "groups": nonNil(rows), "total": total}); err != nil {
			fmt.Fprintf(stderr, "inspect outcomes: %v\n", err)
			return 1
		}
	case *asCSV:
		w := csv.NewWriter(stdout)
		_ = w.Write([]string{*by, "sessions", "opened", "merged", "closed_unmerged", "withdrawn", "reverted", "acceptance_rate",
			"median_review_rounds", "median_comments", "median_minutes_to_merge", "cost_per_merged", "tokens_per_merged"}) // errors surface at Flush
		for _, r := range append(rows, total) {
			_ = w.Write(csvRow(r)) // as above
		}
		w.Flush()
		if err := w.Error(); err != nil {
			fmt.Fprintf(stderr, "inspect outcomes: %v\n", err)
			return 1
		}
	default:
		fmt.Fprintf(stdout, "%-28s %8s %6s %6s %6s %9s %8s %10s\n", *by, "sessions", "opened", "merged", "closed", "withdrawn", "reverted", "acceptance")
		for _, r := range append(rows, total) {
			fmt.Fprintf(stdout, "%-28s %8d %6d %6d %6d %9d %8d %10s\n", orNone(r.Key), r.Sessions, r.Opened, r.Merged, r.Closed, r.Withdrawn, r.Reverted, opt(r.HasRate, r.AcceptanceRate))
		}
	}
	return 0
}

func nonNil(rows []outcomes.Figures) []outcomes.Figures {
	if rows == nil {
		return []outcomes.Figures{}
	}
	return rows
}

func orNone(k string) string {
	if k == "" {
		return "(none)"
	}
	return k
}

// opt is v, or "" when it is not known.
func opt(ok bool, v float64) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func csvRow(r outcomes.Figures) []string {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []string{orNone(r.Key), i(r.Sessions), i(r.Opened), i(r.Merged), i(r.Closed), i(r.Withdrawn), i(r.Reverted),
		opt(r.HasRate, r.AcceptanceRate), opt(r.HasMedians, r.MedianRounds), opt(r.HasMedians, r.MedianComments),
		opt(r.HasMedians, r.MedianMergeMinutes), opt(r.HasCost, r.CostPerMerged), opt(r.HasMedians, r.TokensPerMerged)}
}

// outcomesBackfill is `inspect outcomes backfill`: every PR Inspect's
// sessions opened gets a fate, and each is marked to be read from the API
// by the server's reconcile passes, a batch at a time within the outbound
// limits (this command itself calls nothing).
func outcomesBackfill(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("outcomes backfill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the server's YAML config file (its database is written)")
	installation := fs.Int64("installation", 0, "only this installation's PRs (0: all)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	_, st, code := openStoreFromConfig(*configPath, stderr)
	if st == nil {
		return code
	}
	defer func() { _ = st.Close() }() // the write committed or failed already
	n, err := st.BackfillFates(context.Background(), *installation, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "inspect outcomes backfill: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "inspect: %d PRs without a fate got one; every PR's fate will be read from GitHub by the server's reconcile passes, a batch at a time\n", n)
	return 0
}

// openStoreFromConfig loads the server's config and opens its database;
// st nil means it failed, with code to exit with.
func openStoreFromConfig(path string, stderr io.Writer) (config.Server, *store.Store, int) {
	cfg, err := config.Load(path, os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "inspect: %v\n", err)
		return cfg, nil, 2
	}
	st, err := store.Open(context.Background(), cfg.Database.Driver, cfg.Database.DSN)
	if err != nil {
		fmt.Fprintf(stderr, "inspect: opening the database: %v\n", err)
		return cfg, nil, 1
	}
	return cfg, st, 0
}

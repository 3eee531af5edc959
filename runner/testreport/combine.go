package testreport

import (
	"slices"

	"github.com/inspecthq/inspect/contract"
)

// Combine is one attempt's test summary from its commands' outputs and
// the reports they wrote, or nil when there was neither. A runner is
// counted once: when a report of a known runner was read (pytest's JUnit,
// jest's JSON or jest-junit, node's JUnit, gotestsum's), that runner's
// output is left out, the report being the fuller of the two. Reports of
// an unknown writer, and outputs of runners with no report, add up.
func Combine(outputs, reports []*contract.TestSummary) *contract.TestSummary {
	reported := map[string]bool{}
	for _, r := range reports {
		for _, name := range r.Runners {
			if f := family(name); f != "" {
				reported[f] = true
			}
		}
	}
	var out *contract.TestSummary
	for _, o := range outputs {
		if o == nil || slices.ContainsFunc(o.Runners, func(n string) bool { return reported[family(n)] }) {
			continue
		}
		out = Merge(out, o)
	}
	for _, r := range reports {
		out = Merge(out, r)
	}
	return out
}

// Merge adds b's results to a's; either may be nil, and neither is
// changed. The lists stay within their caps (the rest of Results counted
// in MoreResults); the counts stay exact.
func Merge(a, b *contract.TestSummary) *contract.TestSummary {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		c := *b
		return &c
	case b == nil:
		c := *a
		return &c
	}
	s := contract.TestSummary{
		Passed:       a.Passed + b.Passed,
		Failed:       a.Failed + b.Failed,
		Skipped:      a.Skipped + b.Skipped,
		Failures:     append(slices.Clip(a.Failures), b.Failures...),
		Results:      append(slices.Clip(a.Results), b.Results...),
		MoreResults:  a.MoreResults + b.MoreResults,
		FailuresOnly: a.FailuresOnly || b.FailuresOnly,
	}
	if len(s.Failures) > contract.MaxTestFailures {
		s.Failures = s.Failures[:contract.MaxTestFailures]
	}
	if over := len(s.Results) - contract.MaxTestResults; over > 0 {
		s.Results = s.Results[:contract.MaxTestResults]
		s.MoreResults += over
	}
	if len(s.Failures) == 0 {
		s.Failures = nil
	}
	if len(s.Results) == 0 {
		s.Results = nil
	}
	for _, r := range slices.Concat(a.Runners, b.Runners) {
		if !slices.Contains(s.Runners, r) && len(s.Runners) < contract.MaxTestRunners {
			s.Runners = append(s.Runners, r)
		}
	}
	return &s
}

package outcomes

import "sort"

// Group is one key's counts for one model, as the store sums the rollup:
// money is priced per model, so Report sums a key's models.
type Group struct {
	Key, Model string
	Counts     Counts
}

// CostFunc prices a model's tokens (config.Server.ModelCost over the
// tokens); ok is false for a model without a price.
type CostFunc func(model string, t Tokens) (usd float64, ok bool)

// Report is the figures of each key of groups, in key order, and of all
// of them together (Key ""), money priced by cost (nil: none).
func Report(groups []Group, cost CostFunc) (rows []Figures, total Figures) {
	type acc struct {
		c       Counts
		usd     float64
		hasCost bool
	}
	byKey := map[string]*acc{}
	all := &acc{}
	for _, g := range groups {
		a := byKey[g.Key]
		if a == nil {
			a = &acc{}
			byKey[g.Key] = a
		}
		for _, x := range []*acc{a, all} {
			x.c.Add(g.Counts, 1)
			if cost != nil && g.Counts.Merged > 0 {
				if usd, ok := cost(g.Model, g.Counts.MergedTokens); ok {
					x.usd += usd
					x.hasCost = true
				}
			}
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := byKey[k]
		rows = append(rows, Summarize(k, a.c, a.usd, a.hasCost))
	}
	return rows, Summarize("", all.c, all.usd, all.hasCost)
}

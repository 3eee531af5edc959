package outcomes

import (
	"math"
	"sort"
	"time"
)

// Hist counts values: value → how many. Medians are read from it, so the
// rollup keeps them additive (decision 0075).
type Hist map[int64]int64

// Metric names a Hist the rollup keeps for merged PRs.
type Metric string

// The metrics.
const (
	// MetricRounds: review rounds per merged PR.
	MetricRounds Metric = "rounds"
	// MetricComments: humans' review and thread comments per merged PR.
	MetricComments Metric = "comments"
	// MetricMergeMinutes: minutes from opening to merge, Bucket'ed.
	MetricMergeMinutes Metric = "merge_minutes"
)

// Metrics lists them in a fixed order.
var Metrics = []Metric{MetricRounds, MetricComments, MetricMergeMinutes}

// Counts are additive figures: what one fate (or one session) adds to the
// rollup, and what a group of rollup rows sums to.
type Counts struct {
	Sessions, Opened, Merged, Closed, Withdrawn, Reverted int64
	// MergedTokens are the opening sessions' tokens of merged PRs.
	MergedTokens Tokens
	Hists        map[Metric]Hist
}

// Add adds o times sign (+1 or -1) to c.
func (c *Counts) Add(o Counts, sign int64) {
	c.Sessions += sign * o.Sessions
	c.Opened += sign * o.Opened
	c.Merged += sign * o.Merged
	c.Closed += sign * o.Closed
	c.Withdrawn += sign * o.Withdrawn
	c.Reverted += sign * o.Reverted
	c.MergedTokens = c.MergedTokens.Add(o.MergedTokens, sign)
	for m, h := range o.Hists {
		for v, n := range h {
			c.AddValue(m, v, sign*n)
		}
	}
}

// AddValue counts n more of value v in m's Hist (a zero count is dropped).
func (c *Counts) AddValue(m Metric, v, n int64) {
	if c.Hists == nil {
		c.Hists = map[Metric]Hist{}
	}
	h := c.Hists[m]
	if h == nil {
		h = Hist{}
		c.Hists[m] = h
	}
	h[v] += n
	if h[v] == 0 {
		delete(h, v)
	}
}

// Contribution is what f adds to the rollup as it stands: one opened PR,
// and by its state one merged (reverted, its tokens, rounds, comments and
// time to merge), closed unmerged or withdrawn. Counting a changed fate is
// subtracting the old contribution and adding the new one.
func Contribution(f Fate) Counts {
	c := Counts{Opened: 1}
	switch f.State {
	case Merged:
		c.Merged = 1
		if !f.RevertedAt.IsZero() {
			c.Reverted = 1
		}
		c.MergedTokens = f.Tokens
		c.AddValue(MetricRounds, Bucket(MetricRounds, int64(f.ReviewRounds)), 1)
		c.AddValue(MetricComments, Bucket(MetricComments, int64(f.ReviewComments+f.ThreadComments)), 1)
		if !f.OpenedAt.IsZero() && !f.MergedAt.Before(f.OpenedAt) {
			c.AddValue(MetricMergeMinutes, Bucket(MetricMergeMinutes, int64(f.MergedAt.Sub(f.OpenedAt)/time.Minute)), 1)
		}
	case Closed:
		if f.Withdrawn {
			c.Withdrawn = 1
		} else {
			c.Closed = 1
		}
	}
	return c
}

// Buckets are each metric's values as the rollup counts them, in order:
// a value counts under the greatest bucket at or below it, so a median is
// read to its bucket (decision 0075). Review rounds are exact to ten
// (10: ten or more), comments to twenty, minutes to merge to five minutes
// within the hour and coarser after, up to thirty days.
var Buckets = map[Metric][]int64{
	MetricRounds:   {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
	MetricComments: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 25, 30, 40, 50, 75, 100},
	MetricMergeMinutes: {0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 75, 90, 120, 150, 180, 240, 300, 360, 480, 600,
		720, 960, 1440, 2160, 2880, 4320, 5760, 7200, 10080, 14400, 20160, 30240, 43200},
}

// BucketIndex is the index in Buckets[m] that v counts under.
func BucketIndex(m Metric, v int64) int {
	b := Buckets[m]
	i := sort.Search(len(b), func(i int) bool { return b[i] > v }) - 1
	return max(i, 0)
}

// Bucket is the bucket v counts under, as a value.
func Bucket(m Metric, v int64) int64 { return Buckets[m][BucketIndex(m, v)] }

// Median is the median of h's values (the mean of the two middle ones
// when their number is even); ok is false for an empty h.
func Median(h Hist) (float64, bool) {
	var n int64
	vals := make([]int64, 0, len(h))
	for v, c := range h {
		if c > 0 {
			vals = append(vals, v)
			n += c
		}
	}
	if n == 0 {
		return 0, false
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	at := func(k int64) int64 { // the k-th value (0-based) in order
		for _, v := range vals {
			if k < h[v] {
				return v
			}
			k -= h[v]
		}
		return vals[len(vals)-1]
	}
	if n%2 == 1 {
		return float64(at(n / 2)), true
	}
	return (float64(at(n/2-1)) + float64(at(n/2))) / 2, true
}

// Figures are what the page, the CLI and the metrics show of one group.
type Figures struct {
	Key       string `json:"key"`
	Sessions  int64  `json:"sessions"`
	Opened    int64  `json:"opened"`
	Merged    int64  `json:"merged"`
	Closed    int64  `json:"closed_unmerged"`
	Withdrawn int64  `json:"withdrawn"`
	Reverted  int64  `json:"reverted"`
	// AcceptanceRate is merged / (opened - withdrawn); HasRate is false
	// when no PR counts toward it.
	AcceptanceRate float64 `json:"acceptance_rate"`
	HasRate        bool    `json:"has_acceptance_rate"`
	// Medians over merged PRs; HasMedians false when none merged.
	MedianRounds       float64 `json:"median_review_rounds"`
	MedianComments     float64 `json:"median_comments"`
	MedianMergeMinutes float64 `json:"median_minutes_to_merge"`
	HasMedians         bool    `json:"has_medians"`
	// CostPerMerged is money per merged PR at the server's prices
	// (HasCost false when no model of the group has a price);
	// TokensPerMerged the total tokens per merged PR.
	CostPerMerged   float64 `json:"cost_per_merged"`
	HasCost         bool    `json:"has_cost"`
	TokensPerMerged float64 `json:"tokens_per_merged"`
}

// Summarize is c's figures, cost being the money the merged PRs' tokens
// cost (hasCost: some model of them has a price).
func Summarize(key string, c Counts, cost float64, hasCost bool) Figures {
	f := Figures{Key: key, Sessions: c.Sessions, Opened: c.Opened, Merged: c.Merged, Closed: c.Closed,
		Withdrawn: c.Withdrawn, Reverted: c.Reverted}
	if counted := c.Opened - c.Withdrawn; counted > 0 {
		f.AcceptanceRate, f.HasRate = float64(c.Merged)/float64(counted), true
	}
	if c.Merged > 0 {
		f.MedianRounds, _ = Median(c.Hists[MetricRounds])
		f.MedianComments, _ = Median(c.Hists[MetricComments])
		f.MedianMergeMinutes, _ = Median(c.Hists[MetricMergeMinutes])
		f.HasMedians = true
		f.TokensPerMerged = float64(c.MergedTokens.Total) / float64(c.Merged)
		if hasCost {
			f.CostPerMerged, f.HasCost = cost/float64(c.Merged), true
		}
	}
	if math.IsNaN(f.AcceptanceRate) {
		f.AcceptanceRate, f.HasRate = 0, false
	}
	return f
}

// Dimension is what outcomes are grouped by.
type Dimension string

// The dimensions.
const (
	ByRepo      Dimension = "repo"
	ByTrigger   Dimension = "trigger"
	ByPreset    Dimension = "preset"
	ByModel     Dimension = "model"
	ByRequester Dimension = "requester"
	ByWeek      Dimension = "week"
)

// Dimensions lists them in the page's order.
var Dimensions = []Dimension{ByRepo, ByTrigger, ByPreset, ByModel, ByRequester, ByWeek}

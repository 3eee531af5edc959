package retryafter

import (
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	longest := time.Duration(maxSeconds) * time.Second
	for _, c := range []struct {
		name  string
		value []string // nil: no Retry-After at all
		want  time.Duration
		ok    bool
	}{
		{"absent", nil, 0, false},
		{"empty", []string{""}, 0, false},
		{"blank", []string{"   "}, 0, false},
		{"seconds", []string{"7"}, 7 * time.Second, true},
		{"zero seconds", []string{"0"}, 0, true},
		{"leading zeros", []string{"007"}, 7 * time.Second, true},
		{"surrounding space", []string{" 12 "}, 12 * time.Second, true},
		{"seconds past a Duration", []string{"99999999999999999"}, longest, true},
		{"seconds past an int64", []string{"999999999999999999999999"}, longest, true},
		{"negative seconds", []string{"-3"}, 0, false},
		{"signed seconds", []string{"+3"}, 0, false},
		{"fractional seconds", []string{"1.5"}, 0, false},
		{"seconds with a unit", []string{"5s"}, 0, false},
		{"words", []string{"soon"}, 0, false},
		{"IMF-fixdate ahead", []string{now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{"IMF-fixdate now", []string{now.Format(http.TimeFormat)}, 0, true},
		{"IMF-fixdate past clamps to 0", []string{now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{"RFC 850 date", []string{now.Add(time.Hour).Format(time.RFC850)}, time.Hour, true},
		{"ANSI C date", []string{now.Add(2 * time.Second).Format(time.ANSIC)}, 2 * time.Second, true},
		{"date centuries ahead saturates", []string{"Fri, 31 Dec 9999 23:59:59 GMT"}, 1<<63 - 1, true},
		{"malformed date", []string{"Sat, 31 Feb 2025 25:00:00 GMT"}, 0, false},
		{"first value wins", []string{"4", "9"}, 4 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			if c.value != nil {
				h["Retry-After"] = c.value
			}
			got, ok := Parse(h, now)
			if got != c.want || ok != c.ok {
				t.Fatalf("Parse(Retry-After: %q) = %v, %v; want %v, %v", c.value, got, ok, c.want, c.ok)
			}
		})
	}
}

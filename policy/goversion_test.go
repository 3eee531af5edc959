package policy

import (
	"testing"

	"golang.org/x/mod/module"
)

// canonicalGoVersion agrees with golang.org/x/mod (which policy may not
// import) on what a canonical version is, for the escaped form a GOPROXY
// path carries. go test runs the seeds; go test -fuzz searches further.
func FuzzCanonicalGoVersion(f *testing.F) {
	for _, v := range []string{
		"v0.7.0", "v1.0.0", "v10.20.30", "v0.0.0-20240101000000-abcdefabcdef", "v0.1.1-0.20240101000000-abcdefabcdef",
		"v2.0.0+incompatible", "v1.0.0-!r!c.1", "v1.0.0-rc.1", "v1.0.0-0", "v1.0.0-x-y-z.-",
		"v1.2", "v1", "v2-dev", "v01.2.3", "v1.02.3", "v1.2.3-01", "v1.2.3-", "v1.2.3-a..b", "v1.2.3+build",
		"v1.2.3-!", "v1.2.3-!!a", "v1.2.3-!R", "1.2.3", "v1.2.3.4", "v1.2.3+incompatible+incompatible", "", "v",
		"v1.2.3-RC1", "v1.2.3-rc+incompatible", "v1..3",
	} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		u, err := module.UnescapeVersion(v)
		want := err == nil && module.CanonicalVersion(u) == u && u != ""
		if got := canonicalGoVersion(v); got != want {
			t.Errorf("canonicalGoVersion(%q) = %v; x/mod says %v (unescaped %q, %v)", v, got, want, u, err)
		}
	})
}

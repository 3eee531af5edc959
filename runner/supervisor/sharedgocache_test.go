package supervisor

import (
	"maps"
	"testing"

	"github.com/inspecthq/inspect/runner/sandbox"
)

// The repo's or the image's GOCACHE wins over the shared cache; without
// one, every command gets the shared cache, bound at its one place.
func TestSharedGoCacheYieldsToTheEnvsOwn(t *testing.T) {
	was := sharedGoCacheDir()
	UseSharedGoCache("/host/shared")
	t.Cleanup(func() { UseSharedGoCache(was) })
	if sharedGoCacheDir() != "/host/shared" {
		// A build without the inspecttest tag has no shared cache at all.
		if got := withSharedGoCache(map[string]string{"A": "1"}); !maps.Equal(got, map[string]string{"A": "1"}) || sharedGoCacheMounts(nil) != nil {
			t.Fatalf("without the tag: env %v, mounts %v; want nothing shared", got, sharedGoCacheMounts(nil))
		}
		return
	}
	cases := []struct {
		name      string
		env       map[string]string
		wantCache string
		wantMount bool
	}{
		{"no env", nil, SharedGoCacheTarget, true},
		{"env without GOCACHE", map[string]string{"GOFLAGS": "-mod=mod"}, SharedGoCacheTarget, true},
		{"the env's own GOCACHE", map[string]string{"GOCACHE": "/cache/go/build"}, "/cache/go/build", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := maps.Clone(c.env)
			got := withSharedGoCache(c.env)
			if got["GOCACHE"] != c.wantCache {
				t.Errorf("GOCACHE = %q, want %q", got["GOCACHE"], c.wantCache)
			}
			if !maps.Equal(c.env, before) {
				t.Errorf("the env given was changed: %v", c.env)
			}
			mounts := sharedGoCacheMounts(c.env)
			want := []sandbox.Mount(nil)
			if c.wantMount {
				want = []sandbox.Mount{{Source: "/host/shared", Target: SharedGoCacheTarget}}
			}
			if len(mounts) != len(want) || (len(want) == 1 && mounts[0] != want[0]) {
				t.Errorf("mounts = %v, want %v", mounts, want)
			}
		})
	}
}

package fakenpm

import "testing"

// AddGreet publishes the sample the end-to-end tests install: greet 2.1.0,
// which requires @acme/util ^1.0.0 (a scoped package, so both of npm's
// name forms are exercised). It returns the package.json of a project
// that depends on greet, whose node code can call greet.greet(name).
func (r *Registry) AddGreet(t testing.TB) (packageJSON string) {
	t.Helper()
	for _, v := range []Version{
		{Name: "@acme/util", Version: "1.0.0", Manifest: map[string]any{"main": "index.js"},
			Files: map[string]string{"index.js": "exports.shout = s => s.toUpperCase()\n"}},
		{Name: "greet", Version: "2.1.0", Dependencies: map[string]string{"@acme/util": "^1.0.0"},
			Manifest: map[string]any{"main": "index.js"},
			Files:    map[string]string{"index.js": "const { shout } = require('@acme/util')\nexports.greet = n => shout('hello ' + n)\n"}},
	} {
		if _, err := r.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	return `{"name": "widgets", "version": "1.0.0", "private": true, "dependencies": {"greet": "^2.1.0"}}` + "\n"
}

package policy

import (
	"strings"
	"testing"
)

// sumGolangOrgKey is sum.golang.org's verifier key, as go carries it
// (config.DefaultSumDB, which policy cannot import).
const sumGolangOrgKey = "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"

// A goproxy registry passes its own checksum database's paths and no
// other's; with no database configured, none.
func TestGoProxyPassesOnlyItsOwnChecksumDatabase(t *testing.T) {
	for _, tc := range []struct {
		sumDB, path string
		allowed     bool
	}{
		{"corp.example+12345678+AAAA", "sumdb/corp.example/supported", true},
		{"corp.example+12345678+AAAA", "sumdb/corp.example/lookup/corp.example/x@v1.0.0", true},
		{"corp.example+12345678+AAAA", "sumdb/sum.golang.org/supported", false},
		{"", "sumdb/sum.golang.org/supported", false},
		{"", "golang.org/x/mod/@v/list", true},
	} {
		d := DecideRegistryRequest(RegistryRule{Kind: RegistryGoProxy, SumDB: tc.sumDB}, "GET", tc.path)
		if d.Allowed != tc.allowed || (!d.Allowed && !strings.Contains(d.Why, "checksum database")) {
			t.Errorf("sumdb %q, %s = %+v, want allowed %v", tc.sumDB, tc.path, d, tc.allowed)
		}
	}
	if got := SumDBName(sumGolangOrgKey); got != "sum.golang.org" {
		t.Errorf("SumDBName = %q", got)
	}
}

func TestDecideRegistryRequest(t *testing.T) {
	type want struct {
		allowed bool
		class   RegistryClass
		quiet   bool
	}
	meta, artifact, refused := want{true, RegistryMetadata, false}, want{true, RegistryArtifact, false}, want{}
	cases := []struct {
		kind, method, path string
		want               want
	}{
		// GOPROXY protocol, and the checksum database through it.
		{RegistryGoProxy, "GET", "github.com/google/go-cmp/@v/list", meta},
		{RegistryGoProxy, "GET", "github.com/google/go-cmp/@v/v0.7.0.info", artifact},
		{RegistryGoProxy, "GET", "golang.org/x/mod/@v/v0.0.0-20240101000000-abcdefabcdef.info", artifact},
		{RegistryGoProxy, "GET", "golang.org/x/mod/@v/v0.1.1-0.20240101000000-abcdefabcdef.info", artifact},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v2.0.0+incompatible.info", artifact},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v1.0.0-!r!c.1.info", artifact}, // v1.0.0-RC.1, escaped
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v1.2.info", meta},              // queries: the answer may move
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v2-dev.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v01.2.3.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v1.2.3-01.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v1.2.3-.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v1.2.3-a..b.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v1.2.3+build.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/v1.2.3-!.info", meta},
		// `go get m@branch` and `m@commit` ask the proxy to resolve any
		// revision (go.dev/ref/mod, "GOPROXY protocol": $base/$module/@v/$version.info
		// takes a query): metadata, as the answer may move.
		{RegistryGoProxy, "GET", "github.com/x/y/@v/master.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/0123456789ab.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/0123456789abcdef0123456789abcdef01234567.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/my_feature-!branch.info", meta},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/master.zip", refused}, // only canonical versions have files
		{RegistryGoProxy, "GET", "github.com/x/y/@v/master.mod", refused},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/.info", refused},
		{RegistryGoProxy, "GET", "github.com/x/y/@v/Master.info", refused}, // capitals travel escaped
		{RegistryGoProxy, "GET", "github.com/google/go-cmp/@v/v0.7.0.mod", artifact},
		{RegistryGoProxy, "GET", "github.com/google/go-cmp/@v/v0.7.0.zip", artifact},
		{RegistryGoProxy, "HEAD", "github.com/google/go-cmp/@v/v0.7.0.zip", artifact},
		{RegistryGoProxy, "GET", "github.com/!burnt!sushi/toml/@latest", meta},
		{RegistryGoProxy, "GET", "golang.org/x/mod/@v/v0.0.0-20240101000000-abcdefabcdef.zip", artifact},
		{RegistryGoProxy, "GET", "sumdb/sum.golang.org/supported", meta},
		{RegistryGoProxy, "GET", "sumdb/sum.golang.org/latest", meta},
		{RegistryGoProxy, "GET", "sumdb/sum.golang.org/lookup/github.com/google/go-cmp@v0.7.0", meta},
		{RegistryGoProxy, "GET", "sumdb/sum.golang.org/tile/8/0/001", artifact},
		{RegistryGoProxy, "GET", "sumdb/sum.golang.org/tile/8/1/000.p/12", meta},
		{RegistryGoProxy, "GET", "github.com/Google/go-cmp/@v/list", refused}, // capitals travel escaped
		{RegistryGoProxy, "GET", "github.com/google/go-cmp/@v/v0.7.0.exe", refused},
		{RegistryGoProxy, "GET", "github.com/google/go-cmp/@v/0.7.0.zip", refused},
		{RegistryGoProxy, "GET", "github.com/google/go-cmp", refused},
		{RegistryGoProxy, "GET", "sumdb/sum.golang.org/admin", refused},
		// Only the registry's own checksum database (sumGolangOrgKey's).
		{RegistryGoProxy, "GET", "sumdb/sum.example.org/supported", refused},
		{RegistryGoProxy, "GET", "sumdb/sum.example.org/lookup/github.com/google/go-cmp@v0.7.0", refused},
		{RegistryGoProxy, "GET", "sumdb/sum.golang.org.evil/supported", refused},
		{RegistryGoProxy, "GET", "sumdb/sum.golang/supported", refused},
		{RegistryGoProxy, "GET", "sumdb/sum.golang.org+033de0ae/supported", refused},
		{RegistryGoProxy, "POST", "github.com/google/go-cmp/@v/list", refused},
		{RegistryGoProxy, "PUT", "github.com/google/go-cmp/@v/v0.7.0.zip", refused},
		{RegistryGoProxy, "GET", "github.com/../x/@v/list", refused},
		{RegistryGoProxy, "GET", "github.com/%2e%2e/x/@v/list", refused},
		{RegistryGoProxy, "GET", "github.com//x/@v/list", refused},
		{RegistryGoProxy, "GET", "/github.com/x/@v/list", refused},
		{RegistryGoProxy, "GET", "github.com\\x/@v/list", refused},

		// npm: packuments and tarballs only.
		{RegistryNPM, "GET", "left-pad", meta},
		{RegistryNPM, "GET", "left-pad/1.3.0", meta},
		{RegistryNPM, "GET", "left-pad/latest", meta},
		{RegistryNPM, "GET", "left-pad/-/left-pad-1.3.0.tgz", artifact},
		{RegistryNPM, "GET", "@types%2fnode", meta},
		{RegistryNPM, "GET", "@types%2Fnode", meta},
		{RegistryNPM, "GET", "@types/node", meta},
		{RegistryNPM, "GET", "@types/node/-/node-20.1.0.tgz", artifact},
		{RegistryNPM, "PUT", "left-pad", refused},           // publish
		{RegistryNPM, "DELETE", "left-pad/-rev/3", refused}, // unpublish
		{RegistryNPM, "GET", "-/package/left-pad/dist-tags", refused},
		{RegistryNPM, "PUT", "-/user/org.couchdb.user:mallory", refused},
		{RegistryNPM, "GET", "-/v1/search", refused},
		{RegistryNPM, "GET", "-/whoami", refused},
		{RegistryNPM, "GET", "-/npm/v1/security/advisories/bulk", want{quiet: true}},
		{RegistryNPM, "GET", "left-pad/-/left-pad-1.3.0.exe", refused},
		{RegistryNPM, "GET", "left-pad/a/b/c", refused},
		{RegistryNPM, "GET", ".hidden", refused},
		{RegistryNPM, "GET", "@scope", refused},

		// PyPI: the simple index and its files.
		{RegistryPyPI, "GET", "simple/", meta},
		{RegistryPyPI, "GET", "simple/requests/", meta},
		{RegistryPyPI, "GET", "simple/requests", meta},
		{RegistryPyPI, "GET", "files/packages/ab/cd/requests-2.32.0-py3-none-any.whl", artifact},
		{RegistryPyPI, "GET", "files/packages/ab/cd/requests-2.32.0.tar.gz", artifact},
		{RegistryPyPI, "GET", "files/packages/ab/cd/requests-2.32.0-py3-none-any.whl.metadata", artifact},
		// Legacy files older projects still link (PEP 527 stopped new
		// uploads of them, not downloads).
		{RegistryPyPI, "GET", "files/packages/ab/cd/old-0.1.tar.bz2", artifact},
		{RegistryPyPI, "GET", "files/packages/ab/cd/old-0.1.tgz", artifact},
		{RegistryPyPI, "GET", "files/packages/ab/cd/old-0.1-py2.7.egg", artifact},
		{RegistryPyPI, "GET", "files/packages/ab/cd/evil.sh", refused},
		{RegistryPyPI, "GET", "files/packages/ab/cd/old-0.1.bz2", refused},
		{RegistryPyPI, "POST", "legacy/", refused},
		{RegistryPyPI, "GET", "legacy/", refused},
		{RegistryPyPI, "GET", "pypi/requests/json", refused},
		{RegistryPyPI, "GET", "simple/a/b/", refused},
		{RegistryPyPI, "GET", "files/../../etc/passwd.whl", refused},

		// No such kind.
		{"maven", "GET", "org/x/1.0/x-1.0.jar", refused},
	}
	for _, c := range cases {
		d := DecideRegistryRequest(RegistryRule{Kind: c.kind, SumDB: sumGolangOrgKey}, c.method, c.path)
		got := want{d.Allowed, d.Class, d.Quiet}
		if got != c.want {
			t.Errorf("%s %s %s = %+v, want %+v", c.kind, c.method, c.path, d, c.want)
		}
		if !d.Allowed && d.Why == "" {
			t.Errorf("%s %s %s refused without saying why", c.kind, c.method, c.path)
		}
	}
}

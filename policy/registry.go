package policy

import (
	"net/http"
	"strings"
)

// Registry kinds: the package-manager protocols the registry egress speaks
// (issue 15, decision 0018). Each allows only its protocol's read requests.
const (
	// RegistryGoProxy is the GOPROXY protocol (go.dev/ref/mod, "GOPROXY
	// protocol"), with the checksum database reached through the same
	// proxy ("$GOPROXY/sumdb/<name>/...", "Checksum database").
	RegistryGoProxy = "goproxy"
	// RegistryNPM is the npm registry's read API: packuments and tarballs.
	RegistryNPM = "npm"
	// RegistryPyPI is the simple repository API (PEP 503, PEP 691) and the
	// files it links to, which the proxy serves under files/.
	RegistryPyPI = "pypi"
)

// RegistryKinds are the kinds a server may configure.
func RegistryKinds() []string { return []string{RegistryGoProxy, RegistryNPM, RegistryPyPI} }

// RegistryClass says what a registry request is for: metadata (may change:
// version lists, packuments, index pages) or an artifact (immutable by its
// name and checked by hash: module zips and .mod files, tarballs, wheels),
// which a shared cache may keep.
type RegistryClass string

// Classes.
const (
	RegistryMetadata RegistryClass = "metadata"
	RegistryArtifact RegistryClass = "artifact"
)

// RegistryDecision is the verdict on one request through the registry
// egress. Allowed requests have a Class; refused ones say Why, in words
// the client's user reads in a 403 body, and Quiet ones (a client's audit
// call, which every `npm install` makes) need not be reported as an attempt
// to get out.
type RegistryDecision struct {
	Allowed bool
	Class   RegistryClass
	Why     string
	Quiet   bool
}

// RegistryRule is what a registry's requests are judged by: its kind and,
// for a goproxy registry, its checksum database's verifier key (its sumdb
// setting), whose name alone passes under sumdb/.
type RegistryRule struct {
	Kind  string
	SumDB string
}

// SumDBName is the name of the checksum database whose verifier key is key:
// the part before the first '+' (golang.org/x/mod/sumdb/note, "Verifier
// keys": <name>+<hash>+<keydata>), as go names it in
// $GOPROXY/sumdb/<name>/...; "" for no key.
func SumDBName(key string) string {
	name, _, _ := strings.Cut(key, "+")
	return name
}

// DecideRegistryRequest decides one request to a registry of rule, by its
// method and its path below the registry's base (no leading slash, still
// escaped as it arrived). Only the kind's read requests pass: GET and HEAD
// on the paths its protocol documents. Publishing, unpublishing, dist-tags,
// login, search and anything else is refused before it reaches the
// upstream. A path with an empty, "." or ".." segment, a backslash, or a
// character outside the protocol's alphabet is refused whatever the kind.
func DecideRegistryRequest(rule RegistryRule, method, path string) RegistryDecision {
	kind := rule.Kind
	if method != http.MethodGet && method != http.MethodHead {
		return refuseRegistry("only GET and HEAD reach a registry: the sandbox may download packages, never publish or change them")
	}
	if !cleanRegistryPath(path) {
		return refuseRegistry("the path is not a clean relative path")
	}
	switch kind {
	case RegistryGoProxy:
		return decideGoProxy(SumDBName(rule.SumDB), path)
	case RegistryNPM:
		return decideNPM(path)
	case RegistryPyPI:
		return decidePyPI(path)
	}
	return refuseRegistry("the server configures no registry of kind " + kind)
}

func refuseRegistry(why string) RegistryDecision { return RegistryDecision{Why: why} }

func allowRegistry(c RegistryClass) RegistryDecision {
	return RegistryDecision{Allowed: true, Class: c}
}

// cleanRegistryPath refuses what could change the path's meaning on the
// way: empty, "." and ".." segments (also percent-encoded), backslashes,
// NUL and other controls, and anything outside printable ASCII.
func cleanRegistryPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	lower := strings.ToLower(p)
	if strings.Contains(lower, "%2e") || strings.Contains(lower, "%5c") || strings.Contains(lower, "%00") {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7F || c == '\\' || c == '?' || c == '#' {
			return false
		}
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		// A trailing slash is a directory listing (PyPI's /simple/name/).
		if s == "" && i == len(segs)-1 {
			continue
		}
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	return true
}

// goModuleChars is the alphabet of an escaped module path or version
// (module paths are lower case with '!' before an escaped capital).
func goModuleChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~/!+", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// goRevisionChars is the alphabet of a revision the go command asks the
// proxy to resolve (a branch, a tag, a commit hash), as
// module.EscapeVersion leaves it: lower case with '!' before an escaped
// capital, and no '/' (a name with one cannot travel through a proxy).
func goRevisionChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!+", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// decideGoProxy decides a GOPROXY path; under sumdb/ only the database
// named sumDB passes: the upstream's credential goes with every request,
// and go asks only for the one its GOSUMDB names.
func decideGoProxy(sumDB, p string) RegistryDecision {
	if rest, ok := strings.CutPrefix(p, "sumdb/"); ok {
		name, op, ok := strings.Cut(rest, "/")
		if !ok || !goModuleChars(name) {
			return refuseRegistry("not a checksum database path")
		}
		if sumDB == "" || name != sumDB {
			return refuseRegistry("this registry reaches only its own checksum database, " + orNoSumDB(sumDB) + ", not " + name)
		}
		switch {
		case op == "supported", op == "latest":
			return allowRegistry(RegistryMetadata)
		case strings.HasPrefix(op, "lookup/"):
			mod, ver, ok := strings.Cut(strings.TrimPrefix(op, "lookup/"), "@")
			if !ok || !goModuleChars(mod) || !goModuleChars(ver) {
				return refuseRegistry("not a checksum database lookup (lookup/<module>@<version>)")
			}
			return allowRegistry(RegistryMetadata)
		case strings.HasPrefix(op, "tile/") && goModuleChars(strings.TrimPrefix(op, "tile/")):
			// A full tile never changes; a partial one (".p/") grows.
			if strings.Contains(op, ".p/") {
				return allowRegistry(RegistryMetadata)
			}
			return allowRegistry(RegistryArtifact)
		}
		return refuseRegistry("not a checksum database path")
	}
	if module, ok := strings.CutSuffix(p, "/@latest"); ok && goModuleChars(module) {
		return allowRegistry(RegistryMetadata)
	}
	module, file, ok := strings.Cut(p, "/@v/")
	if !ok || !goModuleChars(module) || strings.Contains(file, "/") {
		return refuseRegistry("only the GOPROXY protocol's paths are served: <module>/@v/list, <module>/@v/<version>.info|.mod|.zip, <module>/@latest and sumdb/<name>/...")
	}
	if file == "list" {
		return allowRegistry(RegistryMetadata)
	}
	if v, ok := strings.CutSuffix(file, ".info"); ok && goRevisionChars(v) {
		if !canonicalGoVersion(v) {
			// A query: v1.2, a branch, a commit hash (`go get m@main`
			// asks the proxy to resolve any revision). The version it
			// names may move.
			return allowRegistry(RegistryMetadata)
		}
		// A canonical version's .info (its Version and Time) is as fixed
		// as its .mod: the go command keeps it in its module cache and
		// never asks again.
		return allowRegistry(RegistryArtifact)
	}
	for _, ext := range []string{".mod", ".zip"} {
		// The go command asks for files only by the canonical version a
		// query resolved to.
		if v, ok := strings.CutSuffix(file, ext); ok && goModuleChars(v) && strings.HasPrefix(v, "v") {
			return allowRegistry(RegistryArtifact)
		}
	}
	return refuseRegistry("not a GOPROXY version file (.info, .mod or .zip)")
}

func orNoSumDB(name string) string {
	if name == "" {
		return "none configured"
	}
	return name
}

// npmNameChars is the alphabet of a package name as it appears in a path
// (URL-safe characters; npm encodes a scoped name's slash as %2f).
func npmNameChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0) {
			return false
		}
	}
	return s != "" && s[0] != '.' && s[0] != '_'
}

func decideNPM(p string) RegistryDecision {
	if strings.HasPrefix(p, "-/") {
		if strings.HasPrefix(p, "-/npm/v1/security/") {
			// `npm install` and `npm ci` send the audit on their own; it
			// leaks the dependency tree and is no download.
			return RegistryDecision{Why: "audits are not served through Inspect's registry egress", Quiet: true}
		}
		return refuseRegistry("registry operations under /-/ (login, search, tokens, dist-tags, audits) are not served; only packuments and tarballs are")
	}
	segs := strings.Split(p, "/")
	// A scoped name arrives as "@scope%2fname" (one segment) or
	// "@scope/name" (two).
	name := segs[0]
	rest := segs[1:]
	if scope, ok := strings.CutPrefix(name, "@"); ok {
		if s, n, enc := cutFold(scope, "%2f"); enc {
			if !npmNameChars(s) || !npmNameChars(n) {
				return refuseRegistry("not a package name")
			}
		} else {
			if len(rest) == 0 || !npmNameChars(scope) || !npmNameChars(rest[0]) {
				return refuseRegistry("not a package name")
			}
			name, rest = name+"/"+rest[0], rest[1:]
		}
	} else if !npmNameChars(name) {
		return refuseRegistry("not a package name")
	}
	switch {
	case len(rest) == 0:
		return allowRegistry(RegistryMetadata) // the packument
	case len(rest) == 1 && npmNameChars(rest[0]):
		return allowRegistry(RegistryMetadata) // one version's manifest, or a dist-tag's
	case len(rest) == 2 && rest[0] == "-" && strings.HasSuffix(rest[1], ".tgz") && npmNameChars(rest[1]):
		return allowRegistry(RegistryArtifact)
	}
	return refuseRegistry("only packuments (/<name>) and tarballs (/<name>/-/<file>.tgz) are served")
}

// cutFold is strings.Cut with an ASCII-case-insensitive separator.
func cutFold(s, sep string) (before, after string, found bool) {
	i := strings.Index(strings.ToLower(s), sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// pypiFileChars is the alphabet of a distribution file's path under
// files/ (the upstream's own layout, kept as is).
func pypiFileChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/!", c) >= 0) {
			return false
		}
	}
	return s != ""
}

func decidePyPI(p string) RegistryDecision {
	switch {
	case p == "simple/":
		return allowRegistry(RegistryMetadata)
	case strings.HasPrefix(p, "simple/"):
		project := strings.TrimSuffix(strings.TrimPrefix(p, "simple/"), "/")
		if project == "" || strings.Contains(project, "/") || !pypiFileChars(project) {
			return refuseRegistry("not a project page of the simple index")
		}
		return allowRegistry(RegistryMetadata)
	case strings.HasPrefix(p, "files/"):
		f := strings.TrimPrefix(p, "files/")
		if !pypiFileChars(f) || strings.HasSuffix(f, "/") {
			return refuseRegistry("not a distribution file")
		}
		if strings.HasSuffix(f, ".metadata") {
			return allowRegistry(RegistryArtifact) // PEP 658 metadata, by the file's hash
		}
		// Wheels and today's sdists, and the legacy files older releases
		// still link: PEP 527 stopped their uploads, not their downloads.
		for _, ext := range []string{".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz", ".egg"} {
			if strings.HasSuffix(f, ext) {
				return allowRegistry(RegistryArtifact)
			}
		}
		return refuseRegistry("not a wheel or source distribution")
	}
	return refuseRegistry("only the simple index (simple/) and the files it links to (files/) are served; uploads are not")
}

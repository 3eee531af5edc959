package fakenpm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// get sends one request with the token ("" for none) and returns the
// status, headers and body.
func get(t *testing.T, method, url, token string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, body
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	return doc
}

func TestPackumentForms(t *testing.T) {
	reg := Serve(t, WithToken(token, "ci-bot"))
	tbs := addDemoPackages(t, reg)
	abbreviatedAccept := map[string]string{"Accept": "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"}

	for _, path := range []string{"/@acme%2futil", "/@acme%2Futil", "/@acme/util"} {
		status, h, body := get(t, "GET", reg.URL()+path, token, abbreviatedAccept)
		if status != 200 || h.Get("Content-Type") != abbreviatedType {
			t.Fatalf("GET %s (abbreviated): %d %s %s", path, status, h.Get("Content-Type"), body)
		}
		doc := decode(t, body)
		v, _ := doc["versions"].(map[string]any)["1.0.0"].(map[string]any)
		dist, _ := v["dist"].(map[string]any)
		if doc["name"] != "@acme/util" || doc["modified"] == nil || doc["time"] != nil || doc["_rev"] != nil ||
			v["main"] != nil || v["_id"] != nil || v["_hasShrinkwrap"] != false ||
			dist["tarball"] != reg.URL()+"/@acme/util/-/util-1.0.0.tgz" ||
			dist["integrity"] != tbs["@acme/util@1.0.0"].Integrity || dist["shasum"] != tbs["@acme/util@1.0.0"].Shasum {
			t.Errorf("abbreviated packument at %s: %s", path, body)
		}
	}

	for _, accept := range []map[string]string{nil, {"Accept": "application/json"}} {
		status, h, body := get(t, "GET", reg.URL()+"/greet", token, accept)
		if status != 200 || h.Get("Content-Type") != "application/json" || !strings.Contains(h.Get("Vary"), "Accept") {
			t.Fatalf("GET /greet (full, Accept %v): %d %v %s", accept, status, h, body)
		}
		doc := decode(t, body)
		v, _ := doc["versions"].(map[string]any)["2.0.0"].(map[string]any)
		times, _ := doc["time"].(map[string]any)
		if doc["_id"] != "greet" || doc["_rev"] == nil || doc["description"] != "says hello" ||
			times["2.0.0"] == nil || times["created"] == nil ||
			v["_id"] != "greet@2.0.0" || v["main"] != "index.js" || v["dependencies"].(map[string]any)["left-pad"] != "^1.0.0" ||
			doc["dist-tags"].(map[string]any)["latest"] != "2.0.0" {
			t.Errorf("full packument: %s", body)
		}
	}

	// A version or a dist-tag is one version's manifest.
	for _, spec := range []string{"1.1.0", "latest"} {
		status, _, body := get(t, "GET", reg.URL()+"/left-pad/"+spec, token, nil)
		if doc := decode(t, body); status != 200 || doc["_id"] != "left-pad@1.1.0" {
			t.Errorf("GET /left-pad/%s: %d %s", spec, status, body)
		}
	}
	if status, _, body := get(t, "GET", reg.URL()+"/-/package/left-pad/dist-tags", token, nil); status != 200 || string(body) != `{"latest":"1.1.0"}` {
		t.Errorf("dist-tags: %d %s", status, body)
	}
	if err := reg.SetDistTag("left-pad", "legacy", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if status, _, body := get(t, "GET", reg.URL()+"/left-pad/legacy", token, nil); status != 200 || decode(t, body)["version"] != "1.0.0" {
		t.Errorf("GET /left-pad/legacy after SetDistTag: %d %s", status, body)
	}
	// The CDN's conditional request: an unchanged document is a 304.
	_, h, _ := get(t, "GET", reg.URL()+"/greet", token, nil)
	if status, _, body := get(t, "GET", reg.URL()+"/greet", token, map[string]string{"If-None-Match": h.Get("ETag")}); status != 304 || len(body) != 0 {
		t.Errorf("If-None-Match %s: %d %s", h.Get("ETag"), status, body)
	}
}

func TestTarballDownloads(t *testing.T) {
	reg := Serve(t, WithToken(token, "ci-bot"))
	tbs := addDemoPackages(t, reg)
	url := reg.URL() + "/@acme/util/-/util-1.0.0.tgz"

	status, h, body := get(t, "GET", url, token, nil)
	if status != 200 || !bytes.Equal(body, tbs["@acme/util@1.0.0"].Data) || Integrity(body) != tbs["@acme/util@1.0.0"].Integrity {
		t.Fatalf("GET tarball: %d, %d bytes, want the packed tarball", status, len(body))
	}
	if status, _, head := get(t, "HEAD", url, token, nil); status != 200 || len(head) != 0 {
		t.Errorf("HEAD tarball: %d with %d body bytes", status, len(head))
	}
	if status, _, _ := get(t, "GET", url, token, map[string]string{"If-None-Match": h.Get("ETag")}); status != 304 {
		t.Errorf("conditional GET of a tarball: %d, want 304", status)
	}
	for _, missing := range []string{"/@acme/util/-/util-9.9.9.tgz", "/@acme/util/-/other-1.0.0.tgz", "/nope/-/nope-1.0.0.tgz"} {
		if status, _, body := get(t, "GET", reg.URL()+missing, token, nil); status != 404 || string(body) != `{"error":"Not found"}` {
			t.Errorf("GET %s: %d %s", missing, status, body)
		}
	}
	// Only downloads count: not the HEAD, not the 304.
	if got := reg.TarballFetches(); len(got) != 1 || got["@acme/util@1.0.0"] != 1 {
		t.Errorf("TarballFetches = %v", got)
	}
	reqs := reg.Requests()
	if len(reqs) != 6 || reqs[0].Bytes != int64(len(body)) || reqs[0].Version != "1.0.0" || reqs[1].Method != "HEAD" || reqs[1].Bytes != 0 {
		t.Errorf("log: %+v", reqs)
	}

	// The tarball's contents are npm's layout.
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
	if want := []string{"package/package.json", "package/lib/index.js"}; !slices.Equal(names, want) {
		t.Errorf("tarball entries %v, want %v", names, want)
	}

	// Tampered: other bytes for the same version, metadata unchanged.
	if err := reg.Tamper("@acme/util", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	_, _, tampered := get(t, "GET", url, token, nil)
	if Integrity(tampered) == tbs["@acme/util@1.0.0"].Integrity {
		t.Error("the tampered tarball has the published integrity")
	}
	if err := reg.Tamper("@acme/util", "2.0.0"); err == nil {
		t.Error("Tamper of a missing version succeeded")
	}
}

func TestTokenAuth(t *testing.T) {
	reg := Serve(t, WithToken(token, "ci-bot"), WithToken("second-token", "other"))
	addDemoPackages(t, reg)
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"no auth", nil, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer npm_wrong"}, 401},
		{"basic", map[string]string{"Authorization": "Basic Y2k6Ym90"}, 401},
		{"bearer", map[string]string{"Authorization": "Bearer " + token}, 200},
		{"second token", map[string]string{"Authorization": "Bearer second-token"}, 200},
	} {
		status, h, body := get(t, "GET", reg.URL()+"/greet", "", tc.header)
		if status != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, status, tc.status)
		}
		if status == 401 && (h.Get("WWW-Authenticate") == "" || decode(t, body)["error"] == nil) {
			t.Errorf("%s: 401 without WWW-Authenticate or a JSON error: %v %s", tc.name, h, body)
		}
	}
	reqs := reg.Requests()
	if r := reqs[1]; !r.AuthPresent || r.AuthValid || r.User != "" || r.Status != 401 {
		t.Errorf("wrong token logged as %+v", r)
	}
	if r := reqs[4]; !r.AuthPresent || !r.AuthValid || r.User != "other" {
		t.Errorf("second token logged as %+v", r)
	}
	if status, _, body := get(t, "GET", reg.URL()+"/-/whoami", token, nil); status != 200 || string(body) != `{"username":"ci-bot"}` {
		t.Errorf("whoami: %d %s", status, body)
	}

	public := Serve(t, WithAnonymousReads(), WithToken(token, "ci-bot"))
	addDemoPackages(t, public)
	if status, _, _ := get(t, "GET", public.URL()+"/greet", "", nil); status != 200 {
		t.Errorf("anonymous read of a public registry: %d", status)
	}
	if status, _, _ := get(t, "GET", public.URL()+"/greet", "npm_wrong", nil); status != 401 {
		t.Errorf("wrong token on a public registry: %d, want 401", status)
	}
	if status, _, _ := get(t, "GET", public.URL()+"/-/whoami", "", nil); status != 401 {
		t.Errorf("anonymous whoami: %d, want 401", status)
	}
	if status, _, _ := get(t, "PUT", public.URL()+"/greet", "", nil); status != 401 {
		t.Errorf("anonymous publish on a public registry: %d, want 401", status)
	}
}

func TestWritesAreRecordedAndRefused(t *testing.T) {
	reg := Serve(t, WithToken(token, "ci-bot"))
	addDemoPackages(t, reg)
	before, _ := reg.distTags("greet")
	for _, tc := range []struct {
		method, path string
		route        Route
		status       int
	}{
		{"PUT", "/brand-new", RoutePublish, 403},
		{"PUT", "/@acme%2fnew", RoutePublish, 403},
		{"DELETE", "/greet/-rev/3-abc", RouteUnpublish, 403},
		{"PUT", "/greet/-rev/3-abc", RouteUnpublish, 403},
		{"DELETE", "/greet/-/greet-2.0.0.tgz/-rev/3-abc", RouteUnpublish, 403},
		{"PUT", "/-/package/greet/dist-tags/beta", RouteSetTag, 403},
		{"DELETE", "/-/package/@acme%2futil/dist-tags/latest", RouteSetTag, 403},
		{"PUT", "/-/user/org.couchdb.user:mallory", RouteLogin, 401},
		{"POST", "/-/v1/login", RouteLogin, 401},
		{"POST", "/-/npm/v1/tokens", RouteToken, 403},
		{"DELETE", "/-/user/token/abc", RouteToken, 403},
		{"POST", "/-/npm/v1/security/advisories/bulk", RouteAudit, 403},
		{"POST", "/-/npm/v1/security/audits", RouteAudit, 403},
		{"POST", "/-/npm/v1/security/audits/quick", RouteAudit, 403},
	} {
		for _, tok := range []string{token, ""} {
			n := len(reg.Requests())
			status, _, body := get(t, tc.method, reg.URL()+tc.path, tok, map[string]string{"Content-Type": "application/json"})
			want := tc.status
			if tok == "" {
				want = 401
			}
			if status != want || decode(t, body)["error"] == nil {
				t.Errorf("%s %s (token %v): %d %s; want %d with a JSON error", tc.method, tc.path, tok != "", status, body, want)
			}
			reqs := reg.Requests()
			if len(reqs) != n+1 || reqs[n].Route != tc.route || !reqs[n].Route.IsWrite() || reqs[n].Status != want || reqs[n].Method != tc.method || reqs[n].Path != tc.path {
				t.Errorf("%s %s: logged %+v; want route %s, status %d", tc.method, tc.path, reqs[n:], tc.route, want)
			}
		}
	}
	if _, ok := reg.distTags("brand-new"); ok {
		t.Error("a refused publish added a package")
	}
	if after, _ := reg.distTags("greet"); !slices.Equal(slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before))) {
		t.Errorf("dist-tags changed: %v -> %v", before, after)
	}
	// Undocumented methods on read paths are a 405, not a write.
	if status, h, _ := get(t, "POST", reg.URL()+"/greet/-/greet-2.0.0.tgz", token, nil); status != 405 || h.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST to a tarball: %d Allow %q", status, h.Get("Allow"))
	}
}

func TestNotFound(t *testing.T) {
	reg := Serve(t, WithToken(token, "ci-bot"))
	addDemoPackages(t, reg)
	for _, tc := range []struct{ path, body string }{
		{"/nope", `{"error":"Not found"}`},
		{"/@acme%2fnope", `{"error":"Not found"}`},
		{"/greet/9.9.9", `"version not found: 9.9.9"`},
		{"/-/v1/search?text=greet", `{"error":"Not found"}`},
		{"/-/nothing", `{"error":"Not found"}`},
		{"/a/b/c/d/e", `{"error":"Not found"}`},
	} {
		if status, _, body := get(t, "GET", reg.URL()+tc.path, token, nil); status != 404 || string(body) != tc.body {
			t.Errorf("GET %s: %d %s; want 404 %s", tc.path, status, body, tc.body)
		}
	}
	if status, _, body := get(t, "GET", reg.URL()+"/-/ping", token, nil); status != 200 || string(body) != "{}" {
		t.Errorf("ping: %d %s", status, body)
	}
}

func TestBaseURLAndMounting(t *testing.T) {
	// A registry behind a proxy: links name the proxy, not the server.
	reg := New(WithToken(token, "ci-bot"), WithBaseURL("http://proxy.example/npm/acme/"))
	addDemoPackages(t, reg)
	ts := httptest.NewServer(reg)
	t.Cleanup(ts.Close)
	if reg.URL() != "http://proxy.example/npm/acme" {
		t.Errorf("URL() = %q", reg.URL())
	}
	_, _, body := get(t, "GET", ts.URL+"/greet", token, nil)
	if !strings.Contains(string(body), `"tarball":"http://proxy.example/npm/acme/greet/-/greet-2.0.0.tgz"`) {
		t.Errorf("WithBaseURL not in dist.tarball: %s", body)
	}

	// Mounted under a prefix without a base URL: links follow the Host.
	mounted := New(WithToken(token, "ci-bot"))
	addDemoPackages(t, mounted)
	mux := http.NewServeMux()
	mux.Handle("/npm/", http.StripPrefix("/npm", mounted))
	mts := httptest.NewServer(mux)
	t.Cleanup(mts.Close)
	status, _, body := get(t, "GET", mts.URL+"/npm/@acme%2futil", token, nil)
	if status != 200 || !strings.Contains(string(body), `"tarball":"`+mts.URL+`/@acme/util/-/util-1.0.0.tgz"`) {
		t.Errorf("mounted: %d %s", status, body)
	}
	if reqs := mounted.Requests(); len(reqs) != 1 || reqs[0].Path != "/@acme%2futil" || reqs[0].Package != "@acme/util" {
		t.Errorf("mounted log: %+v", reqs)
	}
}

func TestLatency(t *testing.T) {
	const latency = 30 * time.Millisecond
	reg := Serve(t, WithToken(token, "ci-bot"), WithLatency(latency))
	addDemoPackages(t, reg)
	start := time.Now()
	if status, _, _ := get(t, "GET", reg.URL()+"/greet", token, nil); status != 200 {
		t.Fatalf("status %d", status)
	}
	if elapsed := time.Since(start); elapsed < latency {
		t.Errorf("answered in %v; want at least %v", elapsed, latency)
	}
	if d := reg.Requests()[0].Duration; d < latency {
		t.Errorf("logged duration %v; want at least %v", d, latency)
	}
}

func TestPackAndAdd(t *testing.T) {
	files := map[string]string{"package.json": `{"name":"x","version":"1.0.0"}`, "bin/x": "#!/bin/sh\n", "a.js": "1"}
	a, err := Pack(files)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Pack(files)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Data, b.Data) || a.Integrity != Integrity(a.Data) || a.Shasum != Shasum(a.Data) || !strings.HasPrefix(a.Integrity, "sha512-") || len(a.Shasum) != 40 {
		t.Errorf("Pack is not reproducible or its digests are wrong: %+v", a)
	}
	for _, bad := range []map[string]string{
		{"index.js": ""},
		{"package.json": "{}", "../escape": ""},
		{"package.json": "{}", "/abs": ""},
		{"package.json": "{}", "a/../b": ""},
	} {
		if _, err := Pack(bad); err == nil {
			t.Errorf("Pack(%v) succeeded", bad)
		}
	}

	reg := New()
	if _, err := reg.Add(Version{Name: "ok", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []Version{
		{Name: "ok", Version: "1.0.0"},     // already published
		{Name: "Upper", Version: "1.0.0"},  // npm names are lower case
		{Name: "@scope", Version: "1.0.0"}, // a scope is not a name
		{Name: "a/b", Version: "1.0.0"},    // only scopes have a slash
		{Name: "ok", Version: ""},          // no version
		{Name: "ok", Version: "2.0.0", Files: map[string]string{"package.json": "{}"}},
	} {
		if _, err := reg.Add(v); err == nil {
			t.Errorf("Add(%+v) succeeded", v)
		}
	}
	if err := reg.SetDistTag("ok", "next", "9.0.0"); err == nil {
		t.Error("SetDistTag to a missing version succeeded")
	}
}

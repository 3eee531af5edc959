package fakegoproxy

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb"
)

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, p *Proxy, method, path string, header http.Header) answer {
	t.Helper()
	req, err := http.NewRequest(method, p.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := p.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{res.StatusCode, res.Header, string(body)}
}

func TestProtocolEndpoints(t *testing.T) {
	p := New(t, Options{Modules: fixture()})
	get := func(path string) answer { return do(t, p, http.MethodGet, path, nil) }

	if a := get("/fake.test/alpha/@v/list"); a.status != 200 || a.body != "v1.0.0\nv1.1.0\n" {
		t.Errorf("list = %d %q, want the two versions in order", a.status, a.body)
	}
	var info struct {
		Version string
		Time    time.Time
	}
	a := get("/fake.test/alpha/@v/v1.0.0.info")
	if err := json.Unmarshal([]byte(a.body), &info); err != nil || a.status != 200 || info.Version != "v1.0.0" || !info.Time.Equal(defaultTime) {
		t.Errorf(".info = %d %q (%v), want v1.0.0 at %v", a.status, a.body, err, defaultTime)
	}
	if a := get("/fake.test/alpha/@latest"); a.status != 200 || !strings.Contains(a.body, `"Version":"v1.1.0"`) {
		t.Errorf("@latest = %d %q, want v1.1.0", a.status, a.body)
	}
	if a := get("/fake.test/!beta/@v/v0.2.0.mod"); a.status != 200 || a.body != fixture()[2].Files["go.mod"] {
		t.Errorf("Beta's .mod = %d %q", a.status, a.body)
	}

	a = get("/fake.test/!beta/@v/v0.2.0.zip")
	if a.status != 200 || a.header.Get("Content-Type") != "application/zip" {
		t.Fatalf("zip = %d %s", a.status, a.header.Get("Content-Type"))
	}
	z, err := zip.NewReader(bytes.NewReader([]byte(a.body)), int64(len(a.body)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range z.File {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "fake.test/Beta@v0.2.0/LICENSE fake.test/Beta@v0.2.0/beta.go fake.test/Beta@v0.2.0/go.mod" {
		t.Errorf("zip holds %s: want the files under the unescaped path@version/", got)
	}
	h, err := hashZip([]byte(a.body))
	if err != nil || !strings.HasPrefix(p.GoSum("fake.test/Beta", "v0.2.0"), "fake.test/Beta v0.2.0 "+h+"\n") {
		t.Errorf("served zip hashes to %s (%v); the database records %q", h, err, p.GoSum("fake.test/Beta", "v0.2.0"))
	}

	for _, tc := range []struct {
		path, bodyPrefix string
		kind             Kind
	}{
		{"/fake.test/Beta/@v/list", "not found: ", KindList},                      // a capital must be case-encoded
		{"/fake.test/nope/@v/list", "not found: module fake.test/nope", KindList}, // unknown module
		{"/fake.test/alpha/@v/v9.9.9.zip", "not found: fake.test/alpha@v9.9.9", KindZip},
		{"/fake.test/alpha/@v/master.info", "not found: ", KindInfo}, // no queries
		{"/fake.test/alpha/@v/v1.0.0.tar", "not found: ", ""},
		{"/fake.test/alpha", "not found: ", ""},
		{"/", "not found: ", ""},
		{"/sumdb/sum.golang.org/supported", "not found: ", ""}, // only its own database
		{"/sumdb/sum.test.example/admin", "not found: ", ""},
	} {
		p.Reset()
		a := get(tc.path)
		if a.status != 404 || !strings.HasPrefix(a.body, tc.bodyPrefix) || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s = %d %s %q, want 404 text/plain %q…", tc.path, a.status, a.header.Get("Content-Type"), a.body, tc.bodyPrefix)
		}
		if r := p.Requests(); len(r) != 1 || r[0].Kind != tc.kind || r[0].Status != 404 {
			t.Errorf("GET %s logged %+v, want one 404 of kind %q", tc.path, r, tc.kind)
		}
	}

	gone := New(t, Options{Modules: fixture(), MissingStatus: http.StatusGone})
	if a := do(t, gone, http.MethodGet, "/fake.test/nope/@v/list", nil); a.status != 410 || !strings.HasPrefix(a.body, "gone: ") {
		t.Errorf("MissingStatus 410: unknown module = %d %q", a.status, a.body)
	}
}

func TestOnlyGetAndHead(t *testing.T) {
	p := New(t, Options{Modules: fixture()})
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		a := do(t, p, method, "/fake.test/alpha/@v/v1.0.0.zip", nil)
		if a.status != 405 || a.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s = %d Allow %q, want 405 GET, HEAD", method, a.status, a.header.Get("Allow"))
		}
	}
	p.Reset()
	a := do(t, p, http.MethodHead, "/fake.test/alpha/@v/v1.0.0.zip", nil)
	r := p.Requests()
	if a.status != 200 || len(r) != 1 || r[0].Method != http.MethodHead || r[0].Bytes != 0 || r[0].Kind != KindZip {
		t.Errorf("HEAD zip = %d, logged %+v", a.status, r)
	}
	if got := p.Fetches(KindZip); len(got) != 0 {
		t.Errorf("a HEAD counted as a fetch: %v", got)
	}
}

func TestToken(t *testing.T) {
	const token = "tok-123"
	p := New(t, Options{Modules: fixture(), Token: token})
	basic := func(user, password string) http.Header {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.SetBasicAuth(user, password)
		return r.Header
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		status int
		scheme string
	}{
		{"none", nil, 401, ""},
		{"bearer", http.Header{"Authorization": {"Bearer " + token}}, 200, "Bearer"},
		{"basic, token as password", basic("anyone", token), 200, "Basic"},
		{"wrong bearer", http.Header{"Authorization": {"Bearer tok-12"}}, 401, "Bearer"},
		{"basic, token as user", basic(token, ""), 401, "Basic"},
		{"another scheme", http.Header{"Authorization": {"Token " + token}}, 401, "Token"},
	} {
		p.Reset()
		a := do(t, p, http.MethodGet, "/fake.test/alpha/@v/list", tc.header)
		r := p.Requests()
		if a.status != tc.status || len(r) != 1 || r[0].Status != tc.status || r[0].AuthScheme != tc.scheme || r[0].Authenticated != (tc.status == 200) {
			t.Errorf("%s: %d, logged %+v; want %d with scheme %q", tc.name, a.status, r, tc.status, tc.scheme)
		}
		if tc.status == 401 && (len(a.header.Values("WWW-Authenticate")) != 2 || !strings.HasPrefix(a.body, "unauthorized: ")) {
			t.Errorf("%s: 401 without its challenges or text: %v %q", tc.name, a.header, a.body)
		}
	}
	// The token guards the checksum database and refused methods too.
	for _, path := range []string{"/sumdb/sum.test.example/supported", "/sumdb/sum.test.example/latest"} {
		if a := do(t, p, http.MethodGet, path, nil); a.status != 401 {
			t.Errorf("GET %s without the token = %d", path, a.status)
		}
	}
	if a := do(t, p, http.MethodPost, "/fake.test/alpha/@v/list", nil); a.status != 401 {
		t.Errorf("POST without the token = %d, want 401", a.status)
	}
}

func TestLatencyIsInEveryAnswer(t *testing.T) {
	const latency = 30 * time.Millisecond
	p := New(t, Options{Modules: fixture(), Latency: latency, Token: "t"})
	do(t, p, http.MethodGet, "/fake.test/alpha/@v/list", http.Header{"Authorization": {"Bearer t"}})
	do(t, p, http.MethodGet, "/fake.test/alpha/@v/list", nil) // refused, after the same delay
	do(t, p, http.MethodGet, "/elsewhere", http.Header{"Authorization": {"Bearer t"}})
	r := p.Requests()
	if len(r) != 3 {
		t.Fatalf("logged %d requests, want 3", len(r))
	}
	for _, req := range r {
		if req.Duration < latency {
			t.Errorf("%s (%d) took %v, under the latency %v", req.Path, req.Status, req.Duration, latency)
		}
	}
}

// The checksum database verifies with x/mod's own client, as the go
// command's does: a lookup's record is proven in the signed tree, and an
// unknown module is not found.
func TestChecksumDatabaseVerifies(t *testing.T) {
	mods := append(fixture(), Graph("graph.test", 300)...) // past one full tile of 256
	p := New(t, Options{Modules: mods, SumDBName: "sum.other.example"})
	name, key := p.SumDB()
	if name != "sum.other.example" || !strings.HasPrefix(key, name+"+") {
		t.Fatalf("SumDB() = %q, %q", name, key)
	}
	if a := do(t, p, http.MethodGet, "/sumdb/sum.other.example/supported", nil); a.status != 200 {
		t.Fatalf("supported = %d", a.status)
	}
	client := sumdb.NewClient(&clientOps{t: t, p: p, base: "/sumdb/" + name, key: key})
	for _, m := range []Module{mods[2], mods[len(mods)-1], mods[10]} {
		var got []string
		for _, version := range []string{m.Version, m.Version + "/go.mod"} {
			lines, err := client.Lookup(m.Path, version)
			if err != nil {
				t.Fatalf("lookup %s %s: %v", m.Path, version, err)
			}
			got = append(got, lines...)
		}
		if joined := strings.Join(got, "\n") + "\n"; joined != p.GoSum(m.Path, m.Version) {
			t.Errorf("lookups of %s = %q, want %q", m, joined, p.GoSum(m.Path, m.Version))
		}
	}
	if _, err := client.Lookup("fake.test/nope", "v1.0.0"); err == nil || !strings.Contains(err.Error(), "Not Found") {
		t.Errorf("lookup of an unknown module: %v, want not found", err)
	}
	if got := p.Fetches(KindSumDBTile); len(got) == 0 {
		t.Error("the client proved nothing with tiles")
	}
}

// clientOps is sumdb.ClientOps over the proxy, holding state in memory.
type clientOps struct {
	t         *testing.T
	p         *Proxy
	base, key string
	config    map[string][]byte
}

func (c *clientOps) ReadRemote(path string) ([]byte, error) {
	a := do(c.t, c.p, http.MethodGet, c.base+path, nil)
	if a.status != 200 {
		return nil, &httpError{a.status, a.body}
	}
	return []byte(a.body), nil
}

type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string { return http.StatusText(e.status) + ": " + e.body }

func (c *clientOps) ReadConfig(file string) ([]byte, error) {
	if file == "key" {
		return []byte(c.key), nil
	}
	return c.config[file], nil
}

func (c *clientOps) WriteConfig(file string, old, new []byte) error {
	if c.config == nil {
		c.config = map[string][]byte{}
	}
	if !bytes.Equal(c.config[file], old) {
		return sumdb.ErrWriteConflict
	}
	c.config[file] = new
	return nil
}

func (c *clientOps) ReadCache(string) ([]byte, error) { return nil, io.EOF }
func (c *clientOps) WriteCache(string, []byte)        {}
func (c *clientOps) Log(msg string)                   { c.t.Log(msg) }
func (c *clientOps) SecurityError(msg string)         { c.t.Errorf("security error: %s", msg) }

func TestHandlerMountsBehindAnotherServer(t *testing.T) {
	p := New(t, Options{Modules: fixture()})
	front := httptest.NewServer(p.Handler())
	t.Cleanup(front.Close)
	res, err := http.Get(front.URL + "/fake.test/alpha/@v/list")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if r := p.Requests(); res.StatusCode != 200 || len(r) != 1 || r[0].Kind != KindList {
		t.Errorf("through another server: %d, logged %+v", res.StatusCode, r)
	}
}

func TestPrepareRefusesWhatGoWould(t *testing.T) {
	files := func(gomod string) map[string]string { return map[string]string{"go.mod": gomod} }
	for _, tc := range []struct {
		name string
		m    Module
	}{
		{"no go.mod", Module{Path: "fake.test/a", Version: "v1.0.0", Files: map[string]string{"a.go": "package a\n"}}},
		{"go.mod names another module", Module{Path: "fake.test/a", Version: "v1.0.0", Files: files("module fake.test/b\n")}},
		{"v2 without /v2", Module{Path: "fake.test/a", Version: "v2.0.0", Files: files("module fake.test/a\n")}},
		{"not canonical", Module{Path: "fake.test/a", Version: "v1.0", Files: files("module fake.test/a\n")}},
		{"bad path", Module{Path: "fake.test/a b", Version: "v1.0.0", Files: files("module \"fake.test/a b\"\n")}},
	} {
		if _, err := prepare(tc.m); err == nil {
			t.Errorf("%s: prepared", tc.name)
		}
	}
	if _, err := prepare(Module{Path: "fake.test/a/v2", Version: "v2.0.0", Files: files("module fake.test/a/v2\n")}); err != nil {
		t.Errorf("a /v2 module: %v", err)
	}
}

// With RedirectZips, a zip is a 302 to a signed storage URL on a second
// listener, as proxy.golang.org's are to storage.googleapis.com; the
// storage serves it while the signature holds and refuses anything else.
func TestZipsRedirectToSignedStorage(t *testing.T) {
	p := New(t, Options{Modules: fixture(), RedirectZips: true, Token: "tok"})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(target string, auth bool) answer {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.Header.Set("Authorization", "Bearer tok")
		}
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return answer{res.StatusCode, res.Header, string(body)}
	}
	a := get(p.URL()+"/fake.test/!beta/@v/v0.2.0.zip", true)
	loc, err := url.Parse(a.header.Get("Location"))
	if a.status != http.StatusFound || err != nil {
		t.Fatalf("zip = %d, Location %q", a.status, a.header.Get("Location"))
	}
	storage, _ := url.Parse(p.StorageURL())
	if loc.Host != storage.Host || loc.Host == strings.TrimPrefix(p.URL(), "http://") {
		t.Fatalf("redirected to %s, want the storage listener %s", loc.Host, storage.Host)
	}
	q := loc.Query()
	if q.Get("Expires") == "" || q.Get("Signature") == "" || q.Get("GoogleAccessId") == "" {
		t.Fatalf("the URL is not signed: %s", loc)
	}
	// Other endpoints are served as before.
	if a := get(p.URL()+"/fake.test/!beta/@v/v0.2.0.mod", true); a.status != http.StatusOK {
		t.Errorf(".mod = %d", a.status)
	}

	// The signed URL serves the zip, with no credential.
	z := get(loc.String(), false)
	if z.status != http.StatusOK || z.header.Get("Content-Type") != "application/zip" {
		t.Fatalf("storage = %d %s", z.status, z.body)
	}
	if zr, err := zip.NewReader(bytes.NewReader([]byte(z.body)), int64(len(z.body))); err != nil || len(zr.File) != 3 {
		t.Fatalf("storage's zip: %v", err)
	}

	tampered := func(key, value string) string {
		u := *loc
		v := u.Query()
		v.Set(key, value)
		u.RawQuery = v.Encode()
		return u.String()
	}
	later := fmt.Sprint(time.Now().Add(48 * time.Hour).Unix())
	other := *loc
	other.Path = strings.Replace(other.Path, "v0.2.0", "v0.3.0", 1)
	for name, target := range map[string]string{
		"a changed signature":      tampered("Signature", "AAAA"+q.Get("Signature")[4:]),
		"no signature":             tampered("Signature", ""),
		"a later expiry":           tampered("Expires", later),
		"another signer":           tampered("GoogleAccessId", "someone@else.example"),
		"another object, same sig": other.String(),
		"no query":                 p.StorageURL() + loc.Path,
	} {
		if a := get(target, false); a.status != http.StatusForbidden || !strings.Contains(a.body, "<Code>SignatureDoesNotMatch</Code>") {
			t.Errorf("%s: %d %s, want 403 SignatureDoesNotMatch", name, a.status, a.body)
		}
	}

	var storageGets int
	for _, r := range p.Requests() {
		if r.Kind == KindStorageZip && r.Status == http.StatusOK {
			storageGets++
			if r.Module != "fake.test/Beta" || r.Version != "v0.2.0" || r.AuthScheme != "" {
				t.Errorf("storage log entry %+v", r)
			}
		}
	}
	if storageGets != 1 {
		t.Errorf("%d storage fetches logged, want 1", storageGets)
	}

	// An expired URL is refused.
	expired := New(t, Options{Modules: fixture(), RedirectZips: true, SignedURLTTL: -time.Minute})
	u := expired.SignedZipURL("fake.test/alpha", "v1.0.0")
	if a := get(u, false); a.status != http.StatusBadRequest || !strings.Contains(a.body, "<Code>ExpiredToken</Code>") {
		t.Errorf("expired: %d %s, want 400 ExpiredToken", a.status, a.body)
	}
}

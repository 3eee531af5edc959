package fakepypi

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"demo-app": "demo-app", "Demo_App": "demo-app", "DEMO.app": "demo-app",
		"a-_.b": "a-b", "zope.interface": "zope-interface", "Django": "django", "x": "x",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWheelBuild(t *testing.T) {
	w := Wheel{Name: "Demo.App", Version: "2.0rc1", Source: "X = 1\n", Requires: []string{"dep>=1", "other; python_version<'4'"}, RequiresPython: ">=3.8"}
	f, err := w.Build()
	if err != nil {
		t.Fatal(err)
	}
	if f.Filename != "demo_app-2.0rc1-py3-none-any.whl" || f.Project != "Demo.App" || f.Version != "2.0rc1" || f.RequiresPython != ">=3.8" {
		t.Errorf("file = %q %q %q %q", f.Filename, f.Project, f.Version, f.RequiresPython)
	}
	again, err := w.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Data, again.Data) {
		t.Error("two builds of one Wheel differ; its sha256 would not be stable")
	}
	if sum := sha256.Sum256(f.Data); f.SHA256() != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA256 = %s", f.SHA256())
	}

	zr, err := zip.NewReader(bytes.NewReader(f.Data), int64(len(f.Data)))
	if err != nil {
		t.Fatal(err)
	}
	members := map[string]string{}
	var order []string
	for _, m := range zr.File {
		rc, err := m.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
		members[m.Name] = string(b)
		order = append(order, m.Name)
	}
	const di = "demo_app-2.0rc1.dist-info/"
	if want := []string{"demo_app/__init__.py", di + "METADATA", di + "WHEEL", di + "RECORD"}; !slices.Equal(order, want) {
		t.Fatalf("members = %q, want %q (RECORD last)", order, want)
	}
	if members["demo_app/__init__.py"] != "X = 1\n" {
		t.Errorf("__init__.py = %q", members["demo_app/__init__.py"])
	}
	for _, want := range []string{"Metadata-Version: 2.1\n", "Name: Demo.App\n", "Version: 2.0rc1\n", "Requires-Python: >=3.8\n",
		"Requires-Dist: dep>=1\n", "Requires-Dist: other; python_version<'4'\n"} {
		if !strings.Contains(members[di+"METADATA"], want) {
			t.Errorf("METADATA lacks %q:\n%s", want, members[di+"METADATA"])
		}
	}
	for _, want := range []string{"Wheel-Version: 1.0\n", "Root-Is-Purelib: true\n", "Tag: py3-none-any\n"} {
		if !strings.Contains(members[di+"WHEEL"], want) {
			t.Errorf("WHEEL lacks %q", want)
		}
	}
	// RECORD: every other member with its urlsafe-base64 sha256 (no
	// padding) and size; itself with neither.
	lines := strings.Split(strings.TrimSuffix(members[di+"RECORD"], "\n"), "\n")
	if len(lines) != 4 || lines[3] != di+"RECORD,," {
		t.Fatalf("RECORD = %q", lines)
	}
	for _, line := range lines[:3] {
		parts := strings.Split(line, ",")
		body := members[parts[0]]
		sum := sha256.Sum256([]byte(body))
		want := "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:])
		if len(parts) != 3 || parts[1] != want || parts[2] != strconv.Itoa(len(body)) {
			t.Errorf("RECORD line %q; want hash %s and size %d", line, want, len(body))
		}
	}
	if meta, ok := wheelMetadata(f); !ok || string(meta) != members[di+"METADATA"] {
		t.Errorf("wheelMetadata = %q, %v", meta, ok)
	}

	for _, bad := range []Wheel{
		{Name: "", Version: "1"}, {Name: "-x", Version: "1"}, {Name: "a b", Version: "1"},
		{Name: "ok", Version: "1-2"}, {Name: "ok", Version: ""}, {Name: "ok", Version: "1", Module: "not-ident"},
		{Name: "ok", Version: "1", Requires: []string{"a\nb"}}, {Name: "ok", Version: "1", RequiresPython: ">=3\n"},
	} {
		if _, err := bad.Build(); err == nil {
			t.Errorf("Build(%+v) succeeded", bad)
		}
	}
}

// get sends one request to the index and returns the response and its
// body.
func get(t *testing.T, method, url string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// authed is the header pip sends for the demo token.
func authed(extra ...string) http.Header {
	h := http.Header{}
	req := &http.Request{Header: h}
	req.SetBasicAuth(TokenUser, demoToken)
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return h
}

func TestContentNegotiation(t *testing.T) {
	x, _ := demoIndex(t, WithToken(demoToken))
	for _, tc := range []struct {
		accept, format, want string
	}{
		{"", "", "text/html; charset=utf-8"},
		{"application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01", "", TypeV1JSON},
		{"application/vnd.pypi.simple.latest+json", "", TypeV1JSON},
		{"application/vnd.pypi.simple.v1+html", "", TypeV1HTML},
		{"application/vnd.pypi.simple.latest+html", "", TypeV1HTML},
		{"text/html", "", "text/html; charset=utf-8"},
		{"*/*", "", "text/html; charset=utf-8"},
		{"text/html;q=0.9, application/vnd.pypi.simple.v1+json;q=0.5", "", "text/html; charset=utf-8"},
		{"text/html, application/vnd.pypi.simple.v1+json", "", TypeV1JSON}, // a tie goes to JSON
		{"application/vnd.pypi.simple.v1+json;q=0, text/html", "", "text/html; charset=utf-8"},
		{"application/json", "", ""},
		{"application/vnd.pypi.simple.v2+json", "", ""},
		{"text/html", TypeV1JSON, TypeV1JSON}, // ?format= wins
	} {
		u := x.URL() + "/simple/demo-app/"
		if tc.format != "" {
			u += "?format=" + url.QueryEscape(tc.format)
		}
		resp, body := get(t, "GET", u, authed("Accept", tc.accept))
		if tc.want == "" {
			if resp.StatusCode != http.StatusNotAcceptable || !strings.Contains(body, TypeV1JSON) {
				t.Errorf("Accept %q: %d %q; want 406 naming what is served", tc.accept, resp.StatusCode, body)
			}
			continue
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tc.want || resp.Header.Get("Vary") != "Accept" {
			t.Errorf("Accept %q format %q: %d %q Vary %q; want 200 %q Vary Accept", tc.accept, tc.format, resp.StatusCode,
				resp.Header.Get("Content-Type"), resp.Header.Get("Vary"), tc.want)
		}
	}
}

func TestPages(t *testing.T) {
	x, files := demoIndex(t, WithToken(demoToken))
	dep := files[depWheel]

	t.Run("root, HTML", func(t *testing.T) {
		resp, body := get(t, "GET", x.URL()+"/simple/", authed())
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		for _, want := range []string{"<!DOCTYPE html>", `<meta name="pypi:repository-version" content="1.1">`,
			`<a href="demo-app/">Demo_App</a>`, `<a href="demo-dep/">demo-dep</a>`} {
			if !strings.Contains(body, want) {
				t.Errorf("root lacks %q:\n%s", want, body)
			}
		}
	})
	t.Run("root, JSON", func(t *testing.T) {
		_, body := get(t, "GET", x.URL()+"/simple/", authed("Accept", TypeV1JSON))
		var doc struct {
			Meta     map[string]string
			Projects []struct{ Name string }
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Meta["api-version"] != "1.1" || len(doc.Projects) != 2 || doc.Projects[0].Name != "Demo_App" || doc.Projects[1].Name != "demo-dep" {
			t.Errorf("root = %s", body)
		}
	})
	t.Run("project, HTML", func(t *testing.T) {
		_, body := get(t, "GET", x.URL()+"/simple/demo-dep/", authed("Accept", "text/html"))
		want := `<a href="` + x.URL() + "/files/demo-dep/" + depWheel + "#sha256=" + dep.SHA256() +
			`" data-requires-python="&gt;=3.8">` + depWheel + "</a>"
		for _, w := range []string{want, `content="1.1"`, "<h1>Links for demo-dep</h1>", ">" + oldWheel + "</a>"} {
			if !strings.Contains(body, w) {
				t.Errorf("page lacks %q:\n%s", w, body)
			}
		}
		if strings.Contains(body, "metadata") {
			t.Errorf("metadata advertised without WithMetadataFiles:\n%s", body)
		}
	})
	t.Run("project, JSON", func(t *testing.T) {
		_, body := get(t, "GET", x.URL()+"/simple/demo-dep/", authed("Accept", TypeV1JSON))
		var doc struct {
			Meta     map[string]string
			Name     string
			Versions []string
			Files    []map[string]any
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Meta["api-version"] != "1.1" || doc.Name != "demo-dep" || !slices.Equal(doc.Versions, []string{"1.0", "1.1"}) || len(doc.Files) != 2 {
			t.Fatalf("page = %s", body)
		}
		f := doc.Files[1]
		if f["filename"] != depWheel || f["url"] != x.URL()+"/files/demo-dep/"+depWheel ||
			f["hashes"].(map[string]any)["sha256"] != dep.SHA256() || f["requires-python"] != ">=3.8" ||
			f["size"] != float64(len(dep.Data)) || f["yanked"] != false {
			t.Errorf("file = %v", f)
		}
		if _, err := time.Parse(time.RFC3339, f["upload-time"].(string)); err != nil {
			t.Errorf("upload-time: %v", err)
		}
		if _, ok := f["core-metadata"]; ok {
			t.Errorf("core-metadata without WithMetadataFiles: %v", f)
		}
	})
	t.Run("redirects and 404s", func(t *testing.T) {
		for path, loc := range map[string]string{
			"/simple":               "simple/",
			"/simple/demo-app":      "demo-app/",
			"/simple/Demo_App/":     "../demo-app/",
			"/simple/DEMO.app":      "demo-app/",
			"/simple/Demo_App/?x=1": "../demo-app/?x=1",
		} {
			resp, _ := get(t, "GET", x.URL()+path, authed())
			if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != loc {
				t.Errorf("%s: %d Location %q; want 301 %q", path, resp.StatusCode, resp.Header.Get("Location"), loc)
			}
		}
		// A client that follows lands on the normalised page.
		req, err := http.NewRequest("GET", x.URL()+"/simple/Demo_App", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = authed()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Request.URL.Path != "/simple/demo-app/" {
			t.Errorf("followed to %d %s", resp.StatusCode, resp.Request.URL.Path)
		}
		for _, path := range []string{"/simple/nope/", "/simple/demo-app/extra/", "/files/demo-app/nope.whl", "/files/demo-dep/" + depWheel + ".metadata",
			"/files/Demo_App/" + appWheel, "/pypi/demo-app/json", "/", "/simple/a%20b/"} {
			if resp, _ := get(t, "GET", x.URL()+path, authed()); resp.StatusCode != 404 {
				t.Errorf("%s: %d, want 404", path, resp.StatusCode)
			}
		}
	})
}

func TestFiles(t *testing.T) {
	x, files := demoIndex(t, WithToken(demoToken))
	app := files[appWheel]
	u := x.URL() + "/files/demo-app/" + appWheel

	resp, body := get(t, "GET", u, authed())
	if resp.StatusCode != 200 || body != string(app.Data) || resp.Header.Get("Content-Type") != "application/octet-stream" ||
		resp.Header.Get("Cache-Control") != "max-age=365000000, immutable, public" {
		t.Fatalf("GET file: %d %q %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), len(body))
	}
	etag := resp.Header.Get("ETag")
	if resp, body := get(t, "HEAD", u, authed()); resp.StatusCode != 200 || body != "" || resp.ContentLength != int64(len(app.Data)) {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %d", resp.StatusCode, len(body), resp.ContentLength)
	}
	if resp, body := get(t, "GET", u, authed("If-None-Match", etag)); resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	if d := x.Downloads(); d[appWheel] != 1 || len(d) != 1 {
		t.Errorf("downloads = %v; want one (HEAD and 304 are not downloads)", d)
	}
	last := x.Requests()[0]
	if last.Route != RouteFile || last.Project != "demo-app" || last.Filename != appWheel || last.Bytes != int64(len(app.Data)) || last.Status != 200 {
		t.Errorf("logged %+v", last)
	}

	if err := x.Tamper(appWheel, []byte("evil")); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, "GET", u, authed()); body != "evil" {
		t.Errorf("tampered file = %q", body)
	}
	if _, page := get(t, "GET", x.URL()+"/simple/demo-app/", authed()); !strings.Contains(page, "#sha256="+app.SHA256()) {
		t.Errorf("tampering changed the page's hash:\n%s", page)
	}
	if err := x.Tamper("nope.whl", nil); err == nil {
		t.Error("Tamper of an unknown file succeeded")
	}
	if err := x.Add(app); err == nil {
		t.Error("a filename was added twice")
	}
	for _, bad := range []File{{Project: "x y", Version: "1", Filename: "a.whl"}, {Project: "x", Version: "", Filename: "a.whl"},
		{Project: "x", Version: "1", Filename: "a/b.whl"}, {Project: "x", Version: "1", Filename: "a.whl.metadata"}} {
		if err := x.Add(bad); err == nil {
			t.Errorf("Add(%+v) succeeded", bad)
		}
	}
}

func TestMetadataFiles(t *testing.T) {
	x, files := demoIndex(t, WithToken(demoToken), WithMetadataFiles())
	app := files[appWheel]
	meta, ok := wheelMetadata(app)
	if !ok {
		t.Fatal("no METADATA in the demo wheel")
	}
	sum := sha256.Sum256(meta)
	metaHash := hex.EncodeToString(sum[:])

	resp, body := get(t, "GET", x.URL()+"/files/demo-app/"+appWheel+".metadata", authed())
	if resp.StatusCode != 200 || body != string(meta) || !strings.Contains(body, "Requires-Dist: demo-dep>=1.0") {
		t.Errorf(".metadata: %d %q", resp.StatusCode, body)
	}
	if d := x.Downloads(); len(d) != 0 {
		t.Errorf("a .metadata fetch counted as a download: %v", d)
	}
	_, page := get(t, "GET", x.URL()+"/simple/demo-app/", authed())
	if want := `data-dist-info-metadata="sha256=` + metaHash + `" data-core-metadata="sha256=` + metaHash + `"`; !strings.Contains(page, want) {
		t.Errorf("HTML page lacks %q:\n%s", want, page)
	}
	_, js := get(t, "GET", x.URL()+"/simple/demo-app/", authed("Accept", TypeV1JSON))
	var loose struct{ Files []map[string]any }
	if err := json.Unmarshal([]byte(js), &loose); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"core-metadata", "dist-info-metadata"} {
		if h, ok := loose.Files[0][key].(map[string]any); !ok || h["sha256"] != metaHash {
			t.Errorf("JSON %s = %v, want sha256 %s", key, loose.Files[0][key], metaHash)
		}
	}
}

func TestAuth(t *testing.T) {
	x, _ := demoIndex(t, WithToken(demoToken), WithToken("second-token"))
	u := x.URL() + "/simple/demo-app/"
	basic := func(user, pass string) http.Header {
		h := http.Header{}
		(&http.Request{Header: h}).SetBasicAuth(user, pass)
		return h
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		status int
	}{
		{"none", nil, 401},
		{"wrong token", basic(TokenUser, "pypi-wrong"), 401},
		{"right token, wrong user", basic("alice", demoToken), 401},
		{"a bearer token", http.Header{"Authorization": {"Bearer " + demoToken}}, 401},
		{"right", basic(TokenUser, demoToken), 200},
		{"the second token", basic(TokenUser, "second-token"), 200},
	} {
		resp, body := get(t, "GET", u, tc.header)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
		if tc.status == 401 && (resp.Header.Get("WWW-Authenticate") != `Basic realm="fakepypi"` || !strings.Contains(body, "__token__")) {
			t.Errorf("%s: WWW-Authenticate %q, body %q", tc.name, resp.Header.Get("WWW-Authenticate"), body)
		}
		if strings.Contains(body, demoToken) {
			t.Errorf("%s: the body names the token", tc.name)
		}
	}
	// Files and unknown paths need the token too: a private index does
	// not say what it has.
	for _, path := range []string{"/files/demo-app/" + appWheel, "/simple/nope/", "/simple/"} {
		if resp, _ := get(t, "GET", x.URL()+path, nil); resp.StatusCode != 401 {
			t.Errorf("%s without a token: %d", path, resp.StatusCode)
		}
	}
	reqs := x.Requests()
	if r := reqs[1]; !r.AuthPresent || r.AuthScheme != "Basic" || r.AuthUser != TokenUser || r.AuthValid || r.Status != 401 {
		t.Errorf("wrong token logged as %+v", r)
	}
	if r := reqs[4]; !r.AuthValid || r.Status != 200 {
		t.Errorf("right token logged as %+v", r)
	}
	if r := reqs[3]; r.AuthScheme != "Bearer" || r.AuthUser != "" || r.AuthValid {
		t.Errorf("bearer logged as %+v", r)
	}

	// Without WithToken reads are anonymous, as on pypi.org.
	open, _ := demoIndex(t)
	if resp, _ := get(t, "GET", open.URL()+"/simple/demo-app/", nil); resp.StatusCode != 200 {
		t.Errorf("anonymous index: %d", resp.StatusCode)
	}
}

func TestWritesAreRefused(t *testing.T) {
	x, _ := demoIndex(t, WithToken(demoToken))
	// twine's upload: a multipart POST to /legacy/ with :action=file_upload.
	body := "--b\r\nContent-Disposition: form-data; name=\":action\"\r\n\r\nfile_upload\r\n--b--\r\n"
	for _, auth := range []http.Header{nil, authed()} {
		req, err := http.NewRequest("POST", x.URL()+"/legacy/", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range auth {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("upload (auth %v): %d, want 403", auth != nil, resp.StatusCode)
		}
	}
	for _, m := range []string{"PUT", "DELETE", "POST"} {
		resp, _ := get(t, m, x.URL()+"/simple/demo-app/", authed())
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	reqs := x.Requests()
	for _, r := range reqs[:2] {
		if r.Route != RouteUpload || r.Status != 403 || r.RequestBytes != int64(len(body)) || r.Method != "POST" || r.Path != "/legacy/" {
			t.Errorf("upload logged as %+v", r)
		}
	}
	if !reqs[1].AuthValid {
		t.Error("the authed upload's token was not logged as valid")
	}
}

func TestBaseURLAndMounting(t *testing.T) {
	files := demoFiles(t)
	const base = "http://proxy.test/pypi/acme"
	mounted := New(WithToken(demoToken), WithBaseURL(base+"/"))
	addAll(t, mounted, files)
	mux := http.NewServeMux()
	mux.Handle("/pypi/acme/", http.StripPrefix("/pypi/acme", mounted))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	if mounted.URL() != "" || mounted.SimpleURL(demoToken) != "" {
		t.Errorf("a mounted index has URL %q, SimpleURL %q", mounted.URL(), mounted.SimpleURL(demoToken))
	}

	_, page := get(t, "GET", ts.URL+"/pypi/acme/simple/demo-dep/", authed())
	dep := files[1]
	if want := `href="` + base + "/files/demo-dep/" + depWheel + "#sha256=" + dep.SHA256() + `"`; !strings.Contains(page, want) {
		t.Errorf("page lacks %q:\n%s", want, page)
	}
	// Redirects are relative, so they keep the mount's prefix.
	req, err := http.NewRequest("GET", ts.URL+"/pypi/acme/simple/Demo_Dep", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = authed()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/pypi/acme/simple/demo-dep/" {
		t.Errorf("redirect under the mount: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
	if resp, body := get(t, "GET", ts.URL+"/pypi/acme/files/demo-dep/"+depWheel, authed()); resp.StatusCode != 200 || body != string(dep.Data) {
		t.Errorf("file under the mount: %d", resp.StatusCode)
	}

	// Without WithBaseURL, a mounted index's links follow the Host.
	plain := New()
	addAll(t, plain, files)
	ps := httptest.NewServer(plain)
	t.Cleanup(ps.Close)
	if _, page := get(t, "GET", ps.URL+"/simple/demo-dep/", nil); !strings.Contains(page, `href="`+ps.URL+"/files/demo-dep/") {
		t.Errorf("links do not follow the Host:\n%s", page)
	}
}

func TestLatency(t *testing.T) {
	const d = 40 * time.Millisecond
	x, _ := demoIndex(t, WithLatency(d))
	start := time.Now()
	if resp, _ := get(t, "GET", x.URL()+"/simple/", nil); resp.StatusCode != 200 {
		t.Fatalf("%d", resp.StatusCode)
	}
	if took := time.Since(start); took < d {
		t.Errorf("answered in %v, before the latency %v", took, d)
	}
	if r := x.Requests()[0]; r.Duration < d {
		t.Errorf("logged duration %v < %v", r.Duration, d)
	}
}

package registryproxy

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakenpm"
	"github.com/inspecthq/inspect/internal/fakepypi"
	"github.com/inspecthq/inspect/policy"
)

// The class closed (issue 33, decision 0059): memory that grows with the
// agent's wishes. Metadata used to be read whole and copied again by the
// rewrite; now it is rewritten as it streams. These tests hold the streamed
// rewrite to the old one, byte for byte, whatever the chunks.

// wholeDocumentRewrite is the rewrite as it was before decision 0059, kept
// verbatim as the reference: the whole document, one bytes.ReplaceAll.
func wholeDocumentRewrite(doc []byte, up config.Registry, name string) []byte {
	base := contract.RegistryBaseURL(name)
	switch up.Kind {
	case policy.RegistryNPM:
		return bytes.ReplaceAll(doc, []byte(strings.TrimSuffix(up.URL, "/")+"/"), []byte(base))
	case policy.RegistryPyPI:
		return bytes.ReplaceAll(doc, []byte(strings.TrimSuffix(filesBase(up), "/")+"/"), []byte(base+"files/"))
	}
	return doc
}

// chunkings are the ways a body arrives: whole, a byte at a time (every
// link then spans reads, at every offset), halves, and fixed sizes around
// a link's length and the rewrite's own chunk.
func chunkings(old int) map[string]func(io.Reader) io.Reader {
	c := map[string]func(io.Reader) io.Reader{
		"whole":          func(r io.Reader) io.Reader { return r },
		"one byte":       iotest.OneByteReader,
		"half":           iotest.HalfReader,
		"data with EOF":  iotest.DataErrReader,
		"chunk+1":        fixedReads(rewriteChunkBytes + 1),
		"chunk-1":        fixedReads(rewriteChunkBytes - 1),
		"link length-1":  fixedReads(old - 1),
		"link length":    fixedReads(old),
		"link length+1":  fixedReads(old + 1),
		"a 4 KiB buffer": fixedReads(4096),
	}
	return c
}

func fixedReads(n int) func(io.Reader) io.Reader {
	return func(r io.Reader) io.Reader { return &fixedReader{r: r, n: max(n, 1)} }
}

// fixedReader gives at most n bytes a read.
type fixedReader struct {
	r io.Reader
	n int
}

func (f *fixedReader) Read(p []byte) (int, error) { return f.r.Read(p[:min(len(p), f.n)]) }

func streamed(t *testing.T, doc []byte, up config.Registry, name string, chunk func(io.Reader) io.Reader) []byte {
	t.Helper()
	old, proxied, ok := linkPrefixes(up, name)
	if !ok {
		t.Fatalf("no rewrite for kind %s", up.Kind)
	}
	got, err := io.ReadAll(newLinkRewriter(chunk(bytes.NewReader(doc)), old, proxied))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// realShapedDocuments are what the stand-ins serve, as a package manager
// asks for them: npm's full and abbreviated packuments (a scoped package
// among them) and PyPI's project pages, PEP 691 JSON and PEP 503 HTML.
func realShapedDocuments(t *testing.T) (npm, pypi map[string][]byte, npmUp, pypiUp config.Registry) {
	t.Helper()
	reg := fakenpm.Serve(t, fakenpm.WithAnonymousReads())
	for i, v := range []fakenpm.Version{
		{Name: "left-pad", Version: "1.3.0", Manifest: map[string]any{"description": "String left pad <with> & \"quotes\" — and ünïcode"}},
		{Name: "left-pad", Version: "1.4.0", Dependencies: map[string]string{"@acme/util": "^1.0.0"}},
		{Name: "@acme/util", Version: "1.0.0", Files: map[string]string{"README.md": "See " + reg.URL() + "/@acme/util for more.\n"}},
		{Name: "@acme/util", Version: "1.1.0-beta.1", Tag: "next"},
	} {
		v.Files = mergeFiles(v.Files, map[string]string{"index.js": fmt.Sprintf("module.exports = %d\n", i)})
		if _, err := reg.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	npm = map[string][]byte{}
	for _, p := range []string{"left-pad", "@acme%2futil"} {
		npm[p+" full"] = get(t, reg.URL()+"/"+p, "application/json")
		npm[p+" abbreviated"] = get(t, reg.URL()+"/"+p, "application/vnd.npm.install-v1+json")
	}

	idx := fakepypi.Serve(t, fakepypi.WithMetadataFiles())
	for _, w := range []fakepypi.Wheel{
		{Name: "demo-app", Version: "1.0", Source: "X = 1\n"},
		{Name: "demo-app", Version: "2.0", Source: "X = 2\n", RequiresPython: ">=3.8"},
		{Name: "Zope.Interface", Version: "6.0", Source: "Y = 1\n"},
	} {
		f, err := w.Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := idx.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	pypi = map[string][]byte{}
	for _, p := range []string{"demo-app", "zope-interface"} {
		pypi[p+" json"] = get(t, idx.URL()+"/simple/"+p+"/", fakepypi.TypeV1JSON)
		pypi[p+" html"] = get(t, idx.URL()+"/simple/"+p+"/", fakepypi.TypeHTML)
	}
	return npm, pypi, config.Registry{Kind: policy.RegistryNPM, URL: reg.URL()}, config.Registry{Kind: policy.RegistryPyPI, URL: idx.URL()}
}

func mergeFiles(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range b {
		out[k] = v
	}
	for k, v := range a {
		out[k] = v
	}
	return out
}

func get(t *testing.T, u, accept string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
	}
	return body
}

// edgeCases are documents whose links sit where a chunked rewrite could go
// wrong. prefix is the upstream's, with its trailing slash.
func edgeCases(prefix string) map[string]string {
	escaped := strings.ReplaceAll(prefix, "/", `\/`)
	half := prefix[:len(prefix)/2]
	pad := strings.Repeat("x", rewriteChunkBytes)
	cases := map[string]string{
		"empty":                       "",
		"only the prefix":             prefix,
		"ends in half a prefix":       `{"a":"` + prefix + `a/-/a-1.tgz","b":"` + half,
		"starts with a link":          prefix + "a/-/a-1.0.0.tgz\"}",
		"ends with a link":            `{"tarball":"` + prefix,
		"links back to back":          prefix + prefix + prefix + "x",
		"a half prefix then a link":   half + prefix + "p",
		"a prefix of the prefix":      prefix[:len(prefix)-1] + "evil/" + prefix[:len(prefix)-1] + `"`,
		"escaped slashes (JSON \\/)":  `{"dist":{"tarball":"` + escaped + `a\/-\/a-1.0.0.tgz"}}`,
		"unicode-escaped h":           `{"tarball":"\u0068` + prefix[1:] + `a.tgz"}`,
		"unicode-escaped slash":       `{"tarball":"` + strings.ReplaceAll(prefix, "/", `\u002f`) + `a.tgz"}`,
		"unicode escapes in the path": `{"tarball":"` + prefix + `caf\u00e9\/-\/caf\u00e9-1.0.0.tgz"}`,
		"HTML entities":               `<a href="` + prefix + `files/demo/demo-1.0.tar.gz#sha256=ab&amp;x">demo</a>` + `<a href="` + strings.ReplaceAll(prefix, "/", "&#x2F;") + `x">`,
		"non-UTF-8 bytes around":      "\xff\xfe" + prefix + "\x00\x80" + prefix,
	}
	// A link across the rewrite's chunk boundary, at each offset: the
	// chunk ends k bytes into it.
	for k := 0; k <= len(prefix); k++ {
		cases[fmt.Sprintf("a link %d bytes into the chunk's end", k)] = pad[:rewriteChunkBytes-k] + prefix + "a/-/a-1.0.0.tgz" + pad[:100]
	}
	return cases
}

func TestTheStreamedLinkRewriteIsTheWholeDocumentRewriteByteForByte(t *testing.T) {
	npm, pypi, npmUp, pypiUp := realShapedDocuments(t)
	type corpus struct {
		up   config.Registry
		docs map[string][]byte
	}
	pypiFiles := pypiUp
	pypiFiles.FilesURL = "https://files.example.test/packages/"
	all := map[string]corpus{"npm": {npmUp, npm}, "pypi": {pypiUp, pypi}}
	for kind, up := range map[string]config.Registry{"npm": npmUp, "pypi": pypiUp, "pypi files_url": pypiFiles} {
		old, _, _ := linkPrefixes(up, "reg")
		docs := map[string][]byte{}
		for name, doc := range edgeCases(string(old)) {
			docs[name] = []byte(doc)
		}
		all[kind+" edge cases"] = corpus{up, docs}
	}
	links := 0
	for cname, c := range all {
		old, _, _ := linkPrefixes(c.up, "reg")
		for dname, doc := range c.docs {
			want := wholeDocumentRewrite(doc, c.up, "reg")
			links += bytes.Count(doc, old)
			for how, chunk := range chunkings(len(old)) {
				if tiny := how == "one byte" || strings.HasPrefix(how, "link length"); tiny && len(doc) > 16<<10 {
					// The chunk-boundary documents are for the rewrite's
					// own chunk meeting a link, which takes reads that
					// fill it; the small documents have the tiny reads.
					continue
				}
				if got := streamed(t, doc, c.up, "reg", chunk); !bytes.Equal(got, want) {
					t.Errorf("%s, %s, read %s: the streamed rewrite differs from the whole document's\n got %.300q\nwant %.300q", cname, dname, how, got, want)
				}
			}
		}
	}
	// The stand-ins' documents hold links to rewrite, or the corpus
	// proves nothing.
	for name, doc := range npm {
		if !bytes.Contains(doc, []byte(npmUp.URL+"/")) {
			t.Fatalf("the packument %s names no tarball under %s", name, npmUp.URL)
		}
	}
	for name, doc := range pypi {
		if !bytes.Contains(doc, []byte(pypiUp.URL+"/")) {
			t.Fatalf("the page %s names no file under %s", name, pypiUp.URL)
		}
	}
	if links < 100 {
		t.Fatalf("the corpus holds %d links, want many", links)
	}
}

// Random documents made of pieces of the prefix, read in random chunks:
// what the hand-made cases did not think of.
func TestTheStreamedLinkRewriteMatchesOnRandomDocuments(t *testing.T) {
	up := config.Registry{Kind: policy.RegistryNPM, URL: "http://up.test"}
	old, _, _ := linkPrefixes(up, "reg")
	pieces := []string{string(old), string(old[:3]), string(old[3:]), "/", "h", "x", `\/`, "\n", string(old[:len(old)-1])}
	rng := rand.New(rand.NewPCG(33, 59))
	for i := range 3000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		doc := []byte(b.String())
		n := 1 + rng.IntN(len(old)+3)
		want := wholeDocumentRewrite(doc, up, "reg")
		if got := streamed(t, doc, up, "reg", fixedReads(n)); !bytes.Equal(got, want) {
			t.Fatalf("document %d %q read %d bytes at a time:\n got %q\nwant %q", i, doc, n, got, want)
		}
	}
}

// An upstream error mid-document reaches the reader after everything that
// came before it, so that the proxy can tell a cut answer from a whole one.
func TestTheStreamedLinkRewritePassesAnUpstreamErrorOn(t *testing.T) {
	up := config.Registry{Kind: policy.RegistryNPM, URL: "http://up.test"}
	old, proxied, _ := linkPrefixes(up, "reg")
	doc := []byte(`{"a":"` + string(old) + `a.tgz","b":"` + string(old[:5]))
	cut := io.MultiReader(bytes.NewReader(doc), iotest.ErrReader(io.ErrUnexpectedEOF))
	got, err := io.ReadAll(newLinkRewriter(cut, old, proxied))
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v, want the upstream's", err)
	}
	if want := wholeDocumentRewrite(doc, up, "reg"); !bytes.Equal(got, want) {
		t.Fatalf("got %q before the error, want %q", got, want)
	}
}

// A metadata document the upstream cuts halfway must not reach the client
// as a whole one: the streamed answer has no length to fall short of, so
// the proxy cuts its own answer. A short PEP 503 page would otherwise
// parse, listing fewer files than the index has.
func TestACutUpstreamDocumentNeverReachesTheClientWhole(t *testing.T) {
	page := `<!DOCTYPE html><html><body><a href="%s/files/demo-app/demo_app-1.0-py3-none-any.whl#sha256=00">demo_app-1.0</a><br />`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := fmt.Sprintf(page, "http://"+r.Host)
		w.Header().Set("Content-Type", fakepypi.TypeHTML)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)+4096)) // the rest never comes
		_, _ = io.WriteString(w, body)                               // the test's client reads it or fails the test
	}))
	t.Cleanup(up.Close)
	p := New(Options{Upstreams: upstreams{"pypi": {Kind: "pypi", URL: up.URL}}})
	mux := http.NewServeMux()
	mux.HandleFunc(contract.PathEgressRegistry, func(w http.ResponseWriter, req *http.Request) {
		p.Serve(w, req, "a1", []contract.Registry{{Name: "pypi", Kind: "pypi", Phases: goSetup}}, zerolog.Nop())
	})
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	resp, err := http.Get(front.URL + contract.EgressRegistryPath("a1", "pypi", "simple/demo-app/"))
	if err != nil {
		return // cut before its headers: broken, as it should be
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && err == nil {
		t.Fatalf("the cut page reached the client as a whole answer: %q", body)
	}
}

package fakepypi

import (
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The simple API's content types (PEP 691). TypeHTML is text/html, which
// the spec keeps as an alias of TypeV1HTML for older clients.
const (
	TypeV1JSON = "application/vnd.pypi.simple.v1+json"
	TypeV1HTML = "application/vnd.pypi.simple.v1+html"
	TypeHTML   = "text/html"
)

// APIVersion is the simple API version served: 1.1 is PEP 700's fields
// (versions, size, upload-time) in the JSON form.
const APIVersion = "1.1"

// pageForm is a page's negotiated form.
type pageForm int

const (
	formNone pageForm = iota
	formJSON
	formV1HTML
	formHTML
)

func (f pageForm) contentType() string {
	switch f {
	case formJSON:
		return TypeV1JSON
	case formV1HTML:
		return TypeV1HTML
	}
	return TypeHTML + "; charset=utf-8"
}

// negotiate picks the form for an Accept header (or a ?format= query,
// which wins), per PEP 691: the highest q-value the index serves, ties
// going to JSON, then v1+html, then text/html; "latest" aliases are v1;
// */* and text/* are text/html. No header is text/html. formNone means
// nothing acceptable (a 406).
func negotiate(req *http.Request) pageForm {
	accept := req.Header.Get("Accept")
	if format := req.URL.Query().Get("format"); format != "" {
		accept = format
	}
	if strings.TrimSpace(accept) == "" {
		return formHTML
	}
	best, bestQ := formNone, 0.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || v > 1 {
				continue
			}
			q = v
		}
		var form pageForm
		switch mt {
		case TypeV1JSON, "application/vnd.pypi.simple.latest+json":
			form = formJSON
		case TypeV1HTML, "application/vnd.pypi.simple.latest+html":
			form = formV1HTML
		case TypeHTML, "text/*", "*/*":
			form = formHTML
		default:
			continue
		}
		if q == 0 {
			continue
		}
		if q > bestQ || q == bestQ && form < best {
			best, bestQ = form, q
		}
	}
	return best
}

// servePage writes a negotiated page: JSON from doc, or the HTML body.
func servePage(w http.ResponseWriter, req *http.Request, doc any, htmlBody string) {
	w.Header().Set("Vary", "Accept")
	form := negotiate(req)
	if form == formNone {
		writeText(w, req, http.StatusNotAcceptable, fmt.Sprintf("406 Not Acceptable: this index serves %s, %s and %s", TypeV1JSON, TypeV1HTML, TypeHTML), nil)
		return
	}
	var body []byte
	if form == formJSON {
		b, err := json.Marshal(doc)
		if err != nil {
			writeText(w, req, http.StatusInternalServerError, "500: encoding the page failed: "+err.Error(), nil)
			return
		}
		body = b
	} else {
		body = []byte(htmlBody)
	}
	writeCacheable(w, req, body, http.Header{
		"Content-Type":  {form.contentType()},
		"Cache-Control": {"max-age=600, public"},
	})
}

const htmlHead = "<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"" + APIVersion + "\">\n"

func (x *Index) serveRoot(w http.ResponseWriter, req *http.Request) {
	x.mu.Lock()
	keys := slices.Sorted(maps.Keys(x.projects))
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = x.projects[k].name
	}
	x.mu.Unlock()

	type entry struct {
		Name string `json:"name"`
	}
	doc := struct {
		Meta     map[string]string `json:"meta"`
		Projects []entry           `json:"projects"`
	}{Meta: map[string]string{"api-version": APIVersion}, Projects: []entry{}}
	var b strings.Builder
	b.WriteString(htmlHead + "    <title>Simple index</title>\n  </head>\n  <body>\n")
	for i, name := range names {
		doc.Projects = append(doc.Projects, entry{Name: name})
		// Relative, so the listing holds under any mount prefix.
		fmt.Fprintf(&b, "    <a href=\"%s/\">%s</a>\n", html.EscapeString(keys[i]), html.EscapeString(name))
	}
	b.WriteString("  </body>\n</html>\n")
	servePage(w, req, doc, b.String())
}

// jsonFile is a file in the JSON form of a project page.
type jsonFile struct {
	Filename         string            `json:"filename"`
	URL              string            `json:"url"`
	Hashes           map[string]string `json:"hashes"`
	RequiresPython   string            `json:"requires-python,omitempty"`
	DistInfoMetadata any               `json:"dist-info-metadata,omitempty"`
	CoreMetadata     any               `json:"core-metadata,omitempty"`
	Yanked           bool              `json:"yanked"`
	Size             int               `json:"size"`
	UploadTime       string            `json:"upload-time"`
}

func (x *Index) serveProject(w http.ResponseWriter, req *http.Request, name string) {
	base := x.base(req)
	x.mu.Lock()
	p := x.projects[name]
	var files []jsonFile
	versions := []string{}
	if p != nil {
		for _, f := range p.files {
			jf := jsonFile{
				Filename:       f.Filename,
				URL:            base + "/files/" + name + "/" + f.Filename,
				Hashes:         map[string]string{"sha256": f.sha256},
				RequiresPython: f.RequiresPython,
				Size:           len(f.Data),
				UploadTime:     f.uploaded.Format("2006-01-02T15:04:05.000000Z"),
			}
			if x.metadataFiles && f.metadata != nil {
				h := map[string]string{"sha256": sha256Hex(f.metadata)}
				jf.DistInfoMetadata, jf.CoreMetadata = h, h
			}
			files = append(files, jf)
			if !slices.Contains(versions, f.Version) {
				versions = append(versions, f.Version)
			}
		}
	}
	x.mu.Unlock()
	if p == nil {
		writeText(w, req, http.StatusNotFound, "404 Not Found", nil)
		return
	}

	doc := struct {
		Meta     map[string]string `json:"meta"`
		Name     string            `json:"name"`
		Files    []jsonFile        `json:"files"`
		Versions []string          `json:"versions"`
	}{Meta: map[string]string{"api-version": APIVersion}, Name: name, Files: files, Versions: versions}

	var b strings.Builder
	fmt.Fprintf(&b, "%s    <title>Links for %s</title>\n  </head>\n  <body>\n    <h1>Links for %s</h1>\n", htmlHead, html.EscapeString(name), html.EscapeString(name))
	for _, f := range files {
		fmt.Fprintf(&b, "    <a href=\"%s\"", html.EscapeString(f.URL+"#sha256="+f.Hashes["sha256"]))
		if f.RequiresPython != "" {
			fmt.Fprintf(&b, " data-requires-python=\"%s\"", html.EscapeString(f.RequiresPython))
		}
		if h, ok := f.CoreMetadata.(map[string]string); ok {
			fmt.Fprintf(&b, " data-dist-info-metadata=\"sha256=%s\" data-core-metadata=\"sha256=%s\"", h["sha256"], h["sha256"])
		}
		fmt.Fprintf(&b, ">%s</a><br />\n", html.EscapeString(f.Filename))
	}
	b.WriteString("  </body>\n</html>\n")
	servePage(w, req, doc, b.String())
}

package standin

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Paginate slices n items the way GitHub's and Buildkite's page-numbered
// REST APIs do (per_page defaults to 30 and is capped at 100; page starts
// at 1; an out-of-range page is an empty one) and returns the Link header
// to send: prev, next, last and first, each one that applies, pointing at
// linkPath on the request's host with the request's query.
func Paginate(r *http.Request, linkPath string, n int) (lo, hi int, h http.Header) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per < 1 {
		per = 30
	}
	per = min(per, 100)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	last := max(1, (n+per-1)/per)
	lo = min((page-1)*per, n)
	hi = min(lo+per, n)

	link := func(p int, rel string) string {
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(per))
		return Link(r, linkPath, q, rel)
	}
	var links []string
	if page > 1 {
		links = append(links, link(min(page-1, last), "prev"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	h = http.Header{}
	if len(links) > 0 {
		h.Set("Link", strings.Join(links, ", "))
	}
	return lo, hi, h
}

// Page is one page of items (Paginate), never nil, so that it encodes as
// a JSON array, and the Link header to send with it.
func Page[T any](r *http.Request, linkPath string, items []T) ([]T, http.Header) {
	lo, hi, h := Paginate(r, linkPath, len(items))
	out := items[lo:hi]
	if out == nil {
		out = []T{}
	}
	return out, h
}

// Link is one entry of a Link header: the URL of linkPath with query q on
// the request's host (plain http: stand-ins listen on loopback), and rel.
func Link(r *http.Request, linkPath string, q url.Values, rel string) string {
	u := url.URL{Scheme: "http", Host: r.Host, Path: linkPath, RawQuery: q.Encode()}
	return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
}

package outbound

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// HeaderCache is set to "hit" on a response the cache answered after
// GitHub's 304, for observability.
const HeaderCache = "X-Inspect-Cache"

const (
	// maxBodyBytes is the largest body kept: bigger ones are rare
	// (diffs, archives) and would crowd out the many small ones.
	maxBodyBytes = 1 << 20
	// maxCacheBytes bounds the bodies kept in all: the entry count alone
	// would allow gigabytes of 1 MB bodies.
	maxCacheBytes = 64 << 20
)

// cacheKey names a cached response: the installation (or user) and the
// identity of the token it was asked with. GitHub's responses vary by
// Authorization, and its ETags are the token's: an ETag one token got
// never earns another a 304. Keyed by installation alone, two tokens of
// one installation (its hourly rotation overlapping, a minted token)
// overwrite each other's entries and neither gets its 304s; keyed by
// token, each keeps its own. The key holds a hash, never the token.
type cacheKey struct {
	inst   int64
	token  string
	method string
	url    string
	accept string
}

// tokenSource is a transport that knows the token it will send (the
// installation transport, ghinstallation's, adds it below the limiter).
type tokenSource interface {
	Token(ctx context.Context) (string, error)
}

// tokenIdentity names the credential req goes out with, as a hash: the
// Authorization header when the caller set one (a user's or a minted
// token, added by go-github above the limiter), else the token next will
// add; ok is false when that cannot be known, and the response is then
// not cached.
func tokenIdentity(req *http.Request, next http.RoundTripper) (string, bool) {
	cred := req.Header.Get("Authorization")
	if cred == "" {
		if ts, isSource := next.(tokenSource); isSource {
			tok, err := ts.Token(req.Context())
			if err != nil {
				return "", false // the request itself will fail to get one, and say why
			}
			cred = "token " + tok
		}
	}
	if cred == "" {
		return "", true // no credential: one identity, as GitHub sees it
	}
	sum := sha256.Sum256([]byte(cred))
	return hex.EncodeToString(sum[:12]), true
}

// pathKey groups a URL's entries (all queries and Accepts) so a write to
// the path can drop them.
type pathKey struct {
	inst int64
	path string
}

// cacheEntry is immutable once stored, so a request may use one that was
// evicted while it was in flight.
type cacheEntry struct {
	key          cacheKey
	path         pathKey
	etag         string
	lastModified string
	status       int
	header       http.Header
	body         []byte
}

// etagCache is a bounded LRU of GET responses that carried a validator.
type etagCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int
	bytes    int
	ll       *list.List // of *cacheEntry, most recent first
	byKey    map[cacheKey]*list.Element
	byPath   map[pathKey]map[*list.Element]struct{}
}

func newETagCache(entries, maxBytes int) *etagCache {
	return &etagCache{max: entries, maxBytes: maxBytes, ll: list.New(),
		byKey: map[cacheKey]*list.Element{}, byPath: map[pathKey]map[*list.Element]struct{}{}}
}

func (c *etagCache) get(k cacheKey) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil
	}
	c.ll.MoveToFront(el)
	return el.Value.(*cacheEntry)
}

func (c *etagCache) put(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[e.key]; ok {
		c.removeLocked(el)
	}
	el := c.ll.PushFront(e)
	c.byKey[e.key] = el
	if c.byPath[e.path] == nil {
		c.byPath[e.path] = map[*list.Element]struct{}{}
	}
	c.byPath[e.path][el] = struct{}{}
	c.bytes += len(e.body)
	for c.ll.Len() > c.max || c.bytes > c.maxBytes {
		c.removeLocked(c.ll.Back())
	}
}

func (c *etagCache) dropPath(inst int64, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := range c.byPath[pathKey{inst, path}] {
		c.removeLocked(el)
	}
}

func (c *etagCache) removeLocked(el *list.Element) {
	e := c.ll.Remove(el).(*cacheEntry)
	delete(c.byKey, e.key)
	if set := c.byPath[e.path]; set != nil {
		delete(set, el)
		if len(set) == 0 {
			delete(c.byPath, e.path)
		}
	}
	c.bytes -= len(e.body)
}

// storable says a GET's response may be kept: a 200 with a validator,
// not marked no-store, and not known to be too big.
func storable(resp *http.Response) bool {
	return resp.StatusCode == http.StatusOK &&
		(resp.Header.Get("ETag") != "" || resp.Header.Get("Last-Modified") != "") &&
		!strings.Contains(strings.ToLower(resp.Header.Get("Cache-Control")), "no-store") &&
		resp.ContentLength <= maxBodyBytes
}

// keep reads a storable response's body, stores it, and returns the
// response with the body replayed; the in-flight place is released once
// the body is read. A body over the bound is handed on unread past it.
func (l *Limiter) keep(k cacheKey, inst int64, req *http.Request, resp *http.Response) (*http.Response, error) {
	buf, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil || len(buf) > maxBodyBytes {
		// Too big (or cut short): the caller reads what was read, then the
		// rest (or the error) from the connection.
		resp.Body = &inFlightBody{ReadCloser: replayBody(buf, resp.Body), done: l.releaseInFlight}
		return resp, nil
	}
	_ = resp.Body.Close() // read to the end; a close error changes nothing
	l.releaseInFlight()
	l.cache.put(&cacheEntry{
		key: k, path: pathKey{inst, req.URL.Path},
		etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified"),
		status: resp.StatusCode, header: resp.Header.Clone(), body: buf,
	})
	resp.Body = io.NopCloser(bytes.NewReader(buf))
	return resp, nil
}

// notMerged are the 304's headers that describe its own (empty) body,
// not the cached one.
var notMerged = map[string]bool{
	"Content-Length": true, "Content-Type": true, "Content-Encoding": true,
	"Content-Range": true, "Transfer-Encoding": true,
}

// response is the cached response, as GitHub's 304 confirmed it: the
// cached status and body, its headers updated with the 304's (so the
// rate-limit headers are fresh).
func (e *cacheEntry) response(req *http.Request, notModified *http.Response) *http.Response {
	h := e.header.Clone()
	for k, vs := range notModified.Header {
		if !notMerged[k] {
			h[k] = append([]string(nil), vs...)
		}
	}
	h.Del("Content-Length")
	h.Set(HeaderCache, "hit")
	return &http.Response{
		Status: strconv.Itoa(e.status) + " " + http.StatusText(e.status), StatusCode: e.status,
		Proto: notModified.Proto, ProtoMajor: notModified.ProtoMajor, ProtoMinor: notModified.ProtoMinor,
		Header: h, Body: io.NopCloser(bytes.NewReader(e.body)), ContentLength: int64(len(e.body)),
		Request: req, TLS: notModified.TLS,
	}
}

// replayBody is a body that reads what was already read from rest, then
// the rest of it, and closes rest.
func replayBody(read []byte, rest io.ReadCloser) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(read), rest), rest}
}

package registryproxy

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
)

// Cache is this replica's store of immutable registry artifacts (decision
// 0019): module zips and .mod files, full checksum-database tiles, npm
// tarballs, PyPI files. Each is kept by its upstream and path, which the
// kind's protocol says never change in content (a version once published
// is what it is; the clients check it against go.sum, the lockfile's
// integrity or the index's hash all the same). It is bounded in bytes and
// forgets the least recently used first.
//
// One file an entry, written whole under a temporary name and renamed into
// place, so a reader never sees half an artifact, and a crash leaves at
// most a temporary file, removed at the next open. An entry evicted while
// a session reads it stays readable to that reader (an open file outlives
// its name).
type Cache struct {
	dir      string
	max      int64
	maxEntry int64
	log      zerolog.Logger

	mu      sync.Mutex
	entries map[string]*list.Element // key → element of lru, whose Value is *cacheEntry
	lru     *list.List               // front: most recently used
	total   int64
}

type cacheEntry struct {
	key  string
	size int64 // the file's, header included
}

// DefaultCacheBytes bounds the cache unless egress.cache.max_bytes says.
const DefaultCacheBytes = 8 << 30

// OpenCache opens (making it when missing) the cache at dir, bounded to
// max bytes (DefaultCacheBytes when 0): the entries a previous run left are
// kept, least recently used first out when they no longer fit.
func OpenCache(dir string, max int64, log zerolog.Logger) (*Cache, error) {
	if max <= 0 {
		max = DefaultCacheBytes
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("registry cache: %w", err)
	}
	c := &Cache{dir: dir, max: max, maxEntry: max / 4, log: log, entries: map[string]*list.Element{}, lru: list.New()}
	if err := c.load(); err != nil {
		return nil, fmt.Errorf("registry cache %s: %w", dir, err)
	}
	return c, nil
}

// load indexes the entries on disk, most recently used (by mtime, which a
// hit refreshes) first, and removes temporary files a crash left.
func (c *Cache) load() error {
	tmp, err := os.ReadDir(filepath.Join(c.dir, "tmp"))
	if err != nil {
		return err
	}
	for _, e := range tmp {
		if err := os.Remove(filepath.Join(c.dir, "tmp", e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	type found struct {
		key  string
		size int64
		mod  time.Time
	}
	var all []found
	err = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "tmp" {
				return filepath.SkipDir
			}
			return nil
		}
		key := d.Name()
		if !validKey(key) || filepath.Base(filepath.Dir(p)) != key[:2] {
			return nil // not ours: left alone
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		all = append(all, found{key: key, size: fi.Size(), mod: fi.ModTime()})
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod.After(all[j].mod) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range all {
		c.entries[f.key] = c.lru.PushBack(&cacheEntry{key: f.key, size: f.size})
		c.total += f.size
	}
	c.evictLocked()
	return nil
}

// CacheKey names an artifact: the upstream as the server configures it
// (its name and URLs, so a renamed or repointed upstream shares nothing
// with the old one) and the path of the request below it.
func CacheKey(name string, up config.Registry, path string) string {
	h := sha256.New()
	for _, part := range []string{name, up.Kind, up.URL, up.FilesURL, path} {
		fmt.Fprintf(h, "%d:%s\n", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func validKey(k string) bool {
	if len(k) != 64 {
		return false
	}
	_, err := hex.DecodeString(k)
	return err == nil && strings.ToLower(k) == k
}

func (c *Cache) pathOf(key string) string { return filepath.Join(c.dir, key[:2], key) }

// Hit is a cached artifact being read: its body, and the headers it was
// first served with.
type Hit struct {
	*io.SectionReader
	Header http.Header
	Size   int64
	f      *os.File
}

// Close closes the entry's file.
func (h *Hit) Close() error { return h.f.Close() }

// entryHeader is what an entry's file starts with, after a 4-byte length:
// the response headers the package manager needs.
type entryHeader struct {
	Header map[string][]string `json:"header"`
}

// Open returns the entry for key and marks it used; ok is false when the
// cache does not hold it (or holds it damaged, when it is dropped).
func (c *Cache) Open(key string) (*Hit, bool) {
	c.mu.Lock()
	el, ok := c.entries[key]
	if ok {
		c.lru.MoveToFront(el)
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	f, err := os.Open(c.pathOf(key))
	if err != nil {
		c.drop(key, err)
		return nil, false
	}
	hit, err := readEntry(f)
	if err != nil {
		_ = f.Close() // read only; nothing to flush
		c.drop(key, err)
		return nil, false
	}
	now := time.Now()
	// The order survives a restart by mtime; a failure only ages it.
	_ = os.Chtimes(c.pathOf(key), now, now)
	return hit, true
}

func readEntry(f *os.File) (*Hit, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var n [4]byte
	if _, err := io.ReadFull(f, n[:]); err != nil {
		return nil, err
	}
	hlen := int64(binary.BigEndian.Uint32(n[:]))
	if hlen > 64<<10 || 4+hlen > fi.Size() {
		return nil, errors.New("the entry's header is damaged")
	}
	raw := make([]byte, hlen)
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, err
	}
	var eh entryHeader
	if err := json.Unmarshal(raw, &eh); err != nil {
		return nil, err
	}
	size := fi.Size() - 4 - hlen
	return &Hit{SectionReader: io.NewSectionReader(f, 4+hlen, size), Header: http.Header(eh.Header), Size: size, f: f}, nil
}

// drop forgets a damaged or vanished entry.
func (c *Cache) drop(key string, why error) {
	c.log.Warn().Str("key", key).Err(why).Msg("registry cache entry unreadable; dropped")
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.removeLocked(el)
	}
}

// Filling is an artifact being written into the cache as it is served.
// Write never fails the caller's copy: a cache that cannot keep the entry
// gives it up and lets the download go on.
type Filling struct {
	c      *Cache
	key    string
	f      *os.File
	want   int64 // the upstream's Content-Length, or -1
	body   int64
	header int64
	failed bool
}

// Fill starts keeping the artifact for key as it streams, with the headers
// it is served with; nil when it is not to be kept (too large for the
// cache, or its temporary file cannot be made). length is the upstream's
// Content-Length (-1 when unknown).
func (c *Cache) Fill(key string, header http.Header, length int64) *Filling {
	if length > c.maxEntry {
		return nil
	}
	kept := http.Header{}
	contract.CopyHeaders(kept, header, contract.RegistryResponseHeaders)
	kept.Del("Content-Length") // the entry's own size says it
	raw, err := json.Marshal(entryHeader{Header: kept})
	if err != nil {
		return nil
	}
	f, err := os.CreateTemp(filepath.Join(c.dir, "tmp"), "fill-")
	if err != nil {
		c.log.Warn().Err(err).Msg("registry cache: cannot start an entry")
		return nil
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(raw)))
	if _, err := f.Write(append(n[:], raw...)); err != nil {
		c.abandon(f, err)
		return nil
	}
	return &Filling{c: c, key: key, f: f, want: length, header: int64(4 + len(raw))}
}

// Write keeps p; it always reports success, so that a tee through it never
// cuts the download.
func (fl *Filling) Write(p []byte) (int, error) {
	if fl.failed {
		return len(p), nil
	}
	fl.body += int64(len(p))
	if fl.body > fl.c.maxEntry {
		fl.failed = true
		return len(p), nil
	}
	if _, err := fl.f.Write(p); err != nil {
		fl.failed = true
	}
	return len(p), nil
}

// Finish keeps the entry when complete is true and the whole body came
// (as long as the upstream said), else throws it away.
func (fl *Filling) Finish(complete bool) {
	c := fl.c
	if !complete || fl.failed || (fl.want >= 0 && fl.body != fl.want) {
		c.abandon(fl.f, nil)
		return
	}
	if err := fl.f.Close(); err != nil {
		c.abandon(fl.f, err)
		return
	}
	dst := c.pathOf(fl.key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		c.abandon(fl.f, err)
		return
	}
	if err := os.Rename(fl.f.Name(), dst); err != nil {
		c.abandon(fl.f, err)
		return
	}
	size := fl.header + fl.body
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[fl.key]; ok {
		// Two sessions fetched it at once; the later file replaced the
		// earlier one's name, with the same content.
		c.total -= el.Value.(*cacheEntry).size
		el.Value.(*cacheEntry).size = size
		c.lru.MoveToFront(el)
	} else {
		c.entries[fl.key] = c.lru.PushFront(&cacheEntry{key: fl.key, size: size})
	}
	c.total += size
	c.evictLocked()
}

// abandon closes and removes a temporary file; err, when set, is logged.
func (c *Cache) abandon(f *os.File, err error) {
	if err != nil {
		c.log.Warn().Err(err).Msg("registry cache: entry not kept")
	}
	_ = f.Close() // it is being thrown away
	if err := os.Remove(f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.log.Warn().Err(err).Msg("registry cache: removing a temporary file")
	}
}

// evictLocked removes least recently used entries until the cache fits.
func (c *Cache) evictLocked() {
	for c.total > c.max {
		el := c.lru.Back()
		if el == nil {
			return
		}
		e := el.Value.(*cacheEntry)
		if err := os.Remove(c.pathOf(e.key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn().Err(err).Msg("registry cache: evicting an entry")
		}
		c.removeLocked(el)
	}
}

func (c *Cache) removeLocked(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.total -= e.size
	delete(c.entries, e.key)
	c.lru.Remove(el)
}

// Stats are the cache's entries and bytes.
func (c *Cache) Stats() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.total
}

package registryproxy

import (
	"bytes"
	"io"
	"strings"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// rewriteChunkBytes is how much of a metadata document the rewrite reads
// at a time. What it holds is this, the few bytes of a link that may run
// past it, and the chunk rewritten: a request's memory is bounded whatever
// the document's size (decision 0059).
const rewriteChunkBytes = 64 << 10

// linkPrefixes are what pointing a metadata document's links back at the
// proxy replaces: the upstream's prefix (npm's dist.tarball, a PyPI
// index's file links) and the proxy's. Only the URL's prefix changes: the
// path, and the "#sha256=" fragment or "integrity" beside it, stay as they
// were. ok is false for a kind whose metadata keeps its links.
func linkPrefixes(up config.Registry, name string) (upstream, proxy []byte, ok bool) {
	base := contract.RegistryBaseURL(name)
	switch up.Kind {
	case policy.RegistryNPM:
		return []byte(strings.TrimSuffix(up.URL, "/") + "/"), []byte(base), true
	case policy.RegistryPyPI:
		return []byte(strings.TrimSuffix(filesBase(up), "/") + "/"), []byte(base + "files/"), true
	}
	return nil, nil, false
}

// linkRewriter reads a metadata document from src with every occurrence of
// old replaced by new, as bytes.ReplaceAll would replace them in the whole
// document (left to right, never overlapping), one chunk at a time: a link
// that runs past a chunk's end waits, at most len(old)-1 bytes of it, for
// the next. It never holds the whole document.
type linkRewriter struct {
	src      io.Reader
	old, new []byte
	in       []byte // read, not yet rewritten: at most the tail of a link
	out      []byte // rewritten, not yet read; a slice of outBuf
	outBuf   []byte
	err      error // src's, once it has said it
}

func newLinkRewriter(src io.Reader, old, new []byte) *linkRewriter {
	return &linkRewriter{src: src, old: old, new: new, in: make([]byte, 0, rewriteChunkBytes+len(old))}
}

// Read gives the rewritten document; its error is src's, once all that
// came before it has been given.
func (r *linkRewriter) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.fill()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// fill reads one more chunk and rewrites what of r.in cannot be the start
// of a link still arriving.
func (r *linkRewriter) fill() {
	n, err := r.src.Read(r.in[len(r.in):cap(r.in)])
	r.in = r.in[:len(r.in)+n]
	if err != nil {
		r.err = err
	}
	out := r.outBuf[:0]
	start := 0
	for {
		i := bytes.Index(r.in[start:], r.old)
		if i < 0 {
			break
		}
		out = append(out, r.in[start:start+i]...)
		out = append(out, r.new...)
		start += i + len(r.old)
	}
	// bytes.Index found no link starting before the last len(old)-1
	// bytes; those may begin one the next chunk completes. At the end of
	// the document there is no next chunk.
	keep := 0
	if r.err == nil {
		keep = min(len(r.in)-start, len(r.old)-1)
	}
	out = append(out, r.in[start:len(r.in)-keep]...)
	r.in = r.in[:copy(r.in, r.in[len(r.in)-keep:])]
	r.outBuf, r.out = out, out
}

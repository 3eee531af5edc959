package fakegoproxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

// The public proxy does not serve a zip itself: proxy.golang.org answers
// $module/@v/$version.zip with a 302 to a V2 signed URL on Google Cloud
// Storage, another domain (golang/go issues 52908 and 68412 show one):
//
//	https://storage.googleapis.com/proxy-golang-org-prod/8e29db8988b1fa75-google.golang.org:api-v0.162.0.zip?Expires=1722887934&GoogleAccessId=gcs-urlsigner-prod%40golang-modproxy.iam.gserviceaccount.com&Signature=…
//
// Options.RedirectZips does the same to a second listener, the storage,
// which checks the signature and the expiry as Cloud Storage does
// (cloud.google.com/storage/docs/access-control/signed-urls-v2: the
// signature is over "GET\n\n\n<Expires>\n/<bucket>/<object>"; a bad one is
// a 403 SignatureDoesNotMatch, an expired one a 400 ExpiredToken, as
// this storage answers them).

// storageBucket is the bucket the storage's object names start with.
const storageBucket = "proxy-fake-prod"

// storageSigner is the GoogleAccessId the signed URLs name.
const storageSigner = "fakegoproxy-urlsigner@fake.iam.example"

// DefaultSignedURLTTL is how long a signed URL lives unless
// Options.SignedURLTTL says otherwise: a day, as proxy.golang.org's
// (Expires is 86400 s after the 302's Date in issue 68412's).
const DefaultSignedURLTTL = 24 * time.Hour

// storage is the second listener: zips by signed URL.
type storage struct {
	server *httptest.Server
	key    []byte
	ttl    time.Duration

	mu      sync.Mutex
	objects map[string]*servedModule // by object name, bucket included
}

func newStorage(ttl time.Duration, tls bool, record func(Request)) (*storage, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("the storage's signing key: %w", err)
	}
	if ttl == 0 {
		ttl = DefaultSignedURLTTL
	}
	s := &storage{key: key, ttl: ttl, objects: map[string]*servedModule{}}
	s.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &standin.StatusWriter{ResponseWriter: w, Head: r.Method == http.MethodHead}
		entry := Request{Time: start, Method: r.Method, Path: r.URL.Path, Kind: KindStorageZip}
		entry.AuthScheme, _, _ = strings.Cut(r.Header.Get("Authorization"), " ")
		if m := s.serve(rec, r); m != nil {
			entry.Module, entry.Version = m.Path, m.Version
		}
		entry.Status, entry.Bytes, entry.Duration = rec.Status(), rec.Bytes(), time.Since(start)
		record(entry)
	}))
	s.server.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		// httptest's TLS servers share one certificate, so CertFile
		// serves both listeners.
		s.server.StartTLS()
	} else {
		s.server.Start()
	}
	return s, nil
}

// objectName is where m's zip lives in the bucket, shaped like the public
// proxy's: a hash, then the module path with '/' as ':', then the version.
func objectName(m *servedModule) string {
	sum := sha256.Sum256([]byte(m.Path + "@" + m.Version))
	return storageBucket + "/" + hex.EncodeToString(sum[:8]) + "-" + strings.ReplaceAll(m.Path, "/", ":") + "-" + m.Version + ".zip"
}

// signedURL is the storage URL of m's zip, valid for the TTL from now.
func (s *storage) signedURL(m *servedModule) string {
	name := objectName(m)
	s.mu.Lock()
	s.objects[name] = m
	s.mu.Unlock()
	expires := strconv.FormatInt(time.Now().Add(s.ttl).Unix(), 10)
	q := url.Values{"Expires": {expires}, "GoogleAccessId": {storageSigner}, "Signature": {s.sign(expires, name)}}
	return s.server.URL + "/" + name + "?" + q.Encode()
}

func (s *storage) sign(expires, name string) string {
	mac := hmac.New(sha256.New, s.key)
	_, _ = io.WriteString(mac, "GET\n\n\n"+expires+"\n/"+name) // a hash's Write never fails
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// serve answers one storage request: the object, when its URL is signed
// and has not expired; the module it named, for the log.
func (s *storage) serve(w http.ResponseWriter, r *http.Request) *servedModule {
	name := strings.TrimPrefix(r.URL.Path, "/")
	s.mu.Lock()
	m := s.objects[name]
	s.mu.Unlock()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		storageError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.")
		return m
	}
	q := r.URL.Query()
	expires, signature := q.Get("Expires"), q.Get("Signature")
	want := s.sign(expires, name)
	if signature == "" || q.Get("GoogleAccessId") != storageSigner || subtle.ConstantTimeCompare([]byte(signature), []byte(want)) != 1 {
		storageError(w, http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.")
		return m
	}
	at, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || !time.Now().Before(time.Unix(at, 0)) {
		storageError(w, http.StatusBadRequest, "ExpiredToken", "The provided token has expired.")
		return m
	}
	if m == nil {
		storageError(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return nil
	}
	text(w, "application/zip", m.zip)
	return m
}

// storageError is Cloud Storage's XML error body.
func storageError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "<?xml version='1.0' encoding='UTF-8'?><Error><Code>%s</Code><Message>%s</Message></Error>", code, message) // as in text
}

// redirectZip answers a zip request the public proxy's way: a 302 to its
// signed storage URL, with the headers proxy.golang.org sends beside it.
func (p *Proxy) redirectZip(m *servedModule) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=10800")
		w.Header().Set("Content-Type", "application/zip")
		http.Redirect(w, r, p.storage.signedURL(m), http.StatusFound)
	}
}

// StorageURL is the storage listener's base URL ("" without
// Options.RedirectZips): the host a registry's redirect_hosts must name.
func (p *Proxy) StorageURL() string {
	if p.storage == nil {
		return ""
	}
	return p.storage.server.URL
}

// SignedZipURL is the signed storage URL of path@version's zip, as a 302
// would name it ("" when it is not served or zips are not redirected).
func (p *Proxy) SignedZipURL(path, version string) string {
	m := p.find(path, version)
	if m == nil || p.storage == nil {
		return ""
	}
	return p.storage.signedURL(m)
}

package contract

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
)

// WriteJSON writes v as a channel response with status (200 when 0).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, ErrorInvalid, "could not encode the response")
		return
	}
	w.Header().Set("Content-Type", ContentTypeJSON)
	if status != 0 {
		w.WriteHeader(status)
	}
	_, _ = w.Write(append(b, '\n')) // the peer may be gone; nothing to do
}

// WriteError writes a channel error. The message is cleaned as progress
// messages are (one line, bounded), since it may quote what the peer sent.
func WriteError(w http.ResponseWriter, status int, code ErrorCode, msg string) {
	w.Header().Set("Content-Type", ContentTypeJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ErrorResponse{Code: code, Message: CleanProgressMessage(msg)}) // as above
}

// NewSecret returns a fresh credential for the channel (a claim code or a
// session token): 256 random bits, hex-encoded.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go ≥1.24 documents it)
	return hex.EncodeToString(b[:])
}

// Stream copies body to w as it arrives, flushing after each chunk, so a
// streamed model answer (server-sent events) is never held in a buffer;
// each, when set, sees every chunk first and returns what to write. It ends
// at the body's end or the first read or write error: either way the other
// side sees the stream end.
func Stream(w http.ResponseWriter, body io.Reader, each func([]byte) []byte) {
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if each != nil {
				chunk = each(chunk)
			}
			if _, werr := w.Write(chunk); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// ModelRequestHeaders are the request headers a model client's request
// keeps on its way through the egress proxy (the supervisor, then the app);
// anything else is dropped, above all any Authorization the agent made up:
// the app sets the provider's key itself.
var ModelRequestHeaders = []string{
	"Content-Type", "Accept", "OpenAI-Beta", "Anthropic-Version", "Anthropic-Beta",
	"Idempotency-Key", "Session_id", "Conversation_id", "Originator", "Version",
}

// ModelResponseHeaders are the provider's response headers passed back to
// the agent.
var ModelResponseHeaders = []string{"Content-Type", "Cache-Control", "Retry-After", "X-Request-Id", "Request-Id"}

// RegistryRequestHeaders are the request headers a package manager's
// request keeps on its way through the registry egress (the supervisor,
// then the app): content negotiation (npm's abbreviated packuments, PEP
// 691's JSON index), revalidation and the client's name. Anything else is
// dropped, above all any Authorization or npm token the sandbox made up:
// the app adds the upstream's credential itself.
var RegistryRequestHeaders = []string{"Accept", "If-None-Match", "If-Modified-Since", "User-Agent"}

// RegistryResponseHeaders are the upstream's response headers passed back
// to the package manager: what it needs to read the body and to cache it.
var RegistryResponseHeaders = []string{"Content-Type", "Content-Length", "ETag", "Last-Modified", "Cache-Control"}

// CopyHeaders adds to dst the values src has for names.
func CopyHeaders(dst, src http.Header, names []string) {
	for _, k := range names {
		for _, v := range src.Values(k) {
			dst.Add(k, v)
		}
	}
}

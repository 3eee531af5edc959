package contract

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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

package channel

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// handleArtifact stores one artifact the supervisor collected after
// verify (contract.PathArtifact). The app trusts nothing of the upload but
// its bytes: the name must be one the spec's globs match, the body within
// the per-file cap (read no further), the session's total within its cap;
// the type is sniffed and the digest computed here.
func (c *Channel) handleArtifact(w http.ResponseWriter, r *http.Request) {
	a := attemptOf(r)
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		contract.WriteError(w, http.StatusInternalServerError, contract.ErrorInvalid, "stored spec unreadable")
		return
	}
	name := r.URL.Query().Get("name")
	caps := spec.Artifacts
	switch {
	case caps == nil:
		contract.WriteError(w, http.StatusForbidden, contract.ErrorNotAllowed, "this session collects no artifacts")
		return
	case contract.ValidatePath(name) != nil || !contract.MatchArtifact(caps.Patterns, name):
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "the name is not one the repository's artifacts: globs match")
		return
	}
	content, err := io.ReadAll(io.LimitReader(r.Body, caps.MaxFileBytes+1))
	switch {
	case err != nil:
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "reading the artifact")
		return
	case int64(len(content)) > caps.MaxFileBytes:
		contract.WriteError(w, http.StatusRequestEntityTooLarge, contract.ErrorTooLarge, "the artifact is over the per-file cap")
		return
	}
	sum := sha256.Sum256(content)
	err = c.store.PutArtifact(r.Context(), store.Artifact{
		AttemptID: a.ID, SessionID: a.SessionID, Name: name,
		ContentType: http.DetectContentType(content), Size: int64(len(content)),
		SHA256: hex.EncodeToString(sum[:]), Content: content, CreatedAt: c.clock.Now(),
	}, caps.MaxSessionBytes)
	switch {
	case errors.Is(err, store.ErrArtifactsFull):
		contract.WriteError(w, http.StatusRequestEntityTooLarge, contract.ErrorTooLarge, "the session's artifacts are over their cap")
		return
	case err != nil:
		c.channelLog(r).Warn().Err(err).Msg("storing an artifact")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

package channel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// Artifact stores one artifact the supervisor collected after verify
// (contract.PathArtifact), whose name and size contract.ChannelServer
// checked against the spec. The app trusts nothing of the upload but its
// bytes: the session's total must stay within its cap, and the type is
// sniffed and the digest computed here.
func (c *Channel) Artifact(ctx context.Context, a store.Attempt, name string, content []byte) error {
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil || spec.Artifacts == nil {
		return contract.Refusal(http.StatusInternalServerError, contract.ErrorInvalid, "stored spec unreadable")
	}
	sum := sha256.Sum256(content)
	err := c.store.PutArtifact(ctx, store.Artifact{
		AttemptID: a.ID, SessionID: a.SessionID, Name: name,
		ContentType: http.DetectContentType(content), Size: int64(len(content)),
		SHA256: hex.EncodeToString(sum[:]), Content: content, CreatedAt: c.clock.Now(),
	}, spec.Artifacts.MaxSessionBytes)
	switch {
	case errors.Is(err, store.ErrArtifactsFull):
		return contract.Refusal(http.StatusRequestEntityTooLarge, contract.ErrorTooLarge, "the session's artifacts are over their cap")
	case err != nil:
		c.attemptLog(ctx, a).Warn().Err(err).Msg("storing an artifact")
		return err
	}
	return nil
}

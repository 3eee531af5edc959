package provenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// Sign puts the statement, as protojson, into a DSSE envelope signed with
// the keyring's signing key.
func (k *Keyring) Sign(ctx context.Context, st *intoto.Statement) (*dsse.Envelope, error) {
	payload, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	es, err := k.envelopeSigner()
	if err != nil {
		return nil, err
	}
	return es.SignPayload(ctx, PayloadType, payload)
}

// Store is what an Attester reads and keeps.
type Store interface {
	AttemptDiff(ctx context.Context, attemptID string) (store.Diff, error)
	PutAttestation(ctx context.Context, a store.Attestation) error
	GetAttestation(ctx context.Context, attemptID string) (store.Attestation, error)
}

// Attester signs and keeps the attestation of an attempt whose change
// was committed.
type Attester struct {
	Keys  *Keyring
	Store Store
	Now   func() time.Time
	// PublicURL is web.public_url: the attestations are served on the
	// dashboard under it, and the keys at KeysPath.
	PublicURL string
}

// AttestSession attests the session's current attempt, whose change is
// sess.CommitSHA (report.Handler's Attest).
func (a *Attester) AttestSession(ctx context.Context, sess store.Session, spec contract.Spec, ev contract.Evidence) error {
	return a.Attest(ctx, FactsOf(sess.RepoOwner+"/"+sess.RepoName, sess.ID, sess.CommitSHA, spec, ev))
}

// Link is the session's current attempt's attestation on the dashboard
// and the keys' URL, or "", "" when that attempt has none (report and
// sync's Provenance). A store failure links nothing: the check run is
// written again at the next sync.
func (a *Attester) Link(ctx context.Context, sess store.Session) (link, keysURL string) {
	if sess.AttemptID == "" {
		return "", ""
	}
	if _, err := a.Store.GetAttestation(ctx, sess.AttemptID); err != nil {
		return "", ""
	}
	base := strings.TrimSuffix(a.PublicURL, "/")
	return base + AttestationPath(sess.ID, sess.AttemptID), base + KeysPath
}

// AttestationPath is where the dashboard serves an attempt's attestation
// (the DSSE envelope as JSON) to the readers of its repository.
func AttestationPath(sessionID, attemptID string) string {
	return "/sessions/" + url.PathEscape(sessionID) + "/attempts/" + url.PathEscape(attemptID) + "/provenance"
}

// Attest signs the attempt's statement (Statement over its evidence, the
// commit, and the patch as stored) and keeps it with the session. An
// attempt already attested (a replay of the report step) is left as it
// is.
func (a *Attester) Attest(ctx context.Context, f Facts) error {
	if _, err := a.Store.GetAttestation(ctx, f.AttemptID); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	d, err := a.Store.AttemptDiff(ctx, f.AttemptID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// A change without a stored patch (an older supervisor sent no
		// diff): the patch subject is the empty patch's digest.
	case err != nil:
		return err
	default:
		f.Patch, f.PatchTruncated = d.Patch, d.Truncated
	}
	f.SignedAt = a.Now()
	st, err := Statement(f)
	if err != nil {
		return err
	}
	env, err := a.Keys.Sign(ctx, st)
	if err != nil {
		return fmt.Errorf("provenance: signing: %w", err)
	}
	body, err := json.Marshal(env)
	if err != nil {
		return err
	}
	return a.Store.PutAttestation(ctx, store.Attestation{AttemptID: f.AttemptID, SessionID: f.SessionID,
		KeyID: a.Keys.SigningKeyID(), Envelope: string(body), CreatedAt: f.SignedAt})
}

// FactsOf are the facts of an attempt of the session in repository
// (owner/name) whose change is the commit sha.
func FactsOf(repository, sessionID, sha string, spec contract.Spec, ev contract.Evidence) Facts {
	return Facts{Repository: repository, SessionID: sessionID, AttemptID: spec.AttemptID, CommitSHA: sha,
		AgentPreset: string(spec.Agent.Preset), Model: spec.Agent.Model, Evidence: ev}
}

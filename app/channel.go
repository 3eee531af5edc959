package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner/contract"
)

// The session channel: what `inspect runner` (the supervisor) calls, with
// the paths, messages and rules runner/contract owns. Claim codes and
// session tokens are stored only as hashes.

// sessionTokenTTLGrace is how long after its deadline an attempt's token
// still works, for the result upload.
const sessionTokenTTLGrace = 10 * time.Minute

func (s *Service) channelRoutes(mux *http.ServeMux) {
	mux.HandleFunc(contract.RouteClaim, s.handleClaim)
	mux.HandleFunc(contract.RouteSpec, s.authed(s.handleSpec))
	mux.HandleFunc(contract.RouteRepoToken, s.authed(s.handleRepoToken))
	mux.HandleFunc(contract.RouteProgress, s.authed(s.handleProgress))
	mux.HandleFunc(contract.RouteResult, s.authed(s.handleResult))
	mux.HandleFunc(contract.RouteSnapshotJob, s.authed(s.handleSnapshotJob))
	mux.HandleFunc(contract.RouteSnapshotResult, s.authed(s.handleSnapshotResult))
	mux.HandleFunc(contract.PathEgressModel, s.authed(s.handleEgressModel))
}

func (s *Service) channelLog(r *http.Request) *zerolog.Logger {
	l := s.log.With().Str("attempt_id", r.PathValue(contract.PathValueAttempt)).Str("channel", r.URL.Path).Logger()
	return &l
}

func (s *Service) handleClaim(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue(contract.PathValueAttempt)
	req, err := contract.DecodeClaimRequest(r.Body)
	if err != nil {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "invalid claim request")
		return
	}
	if req.SpecVersion != contract.SpecVersion {
		contract.WriteError(w, http.StatusConflict, contract.ErrorVersionMismatch, "this server sends "+contract.SpecVersion)
		return
	}
	if req.AttemptID != id {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "attempt id mismatch")
		return
	}
	token := contract.NewSecret()
	now := s.clock.Now()
	a, err := s.store.ClaimAttempt(r.Context(), id, req.ClaimCode, token, now)
	switch {
	case errors.Is(err, store.ErrClaimRefused):
		s.channelLog(r).Warn().Msg("claim refused")
		contract.WriteError(w, http.StatusUnauthorized, contract.ErrorClaimUsed, "claim refused")
		return
	case err != nil:
		// Nothing was spent: the transaction rolled back. Try again.
		s.channelLog(r).Error().Err(err).Msg("claim failed")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	s.wakeWorkers()
	contract.WriteJSON(w, 0, contract.ClaimResponse{SessionToken: token, ExpiresAt: a.Deadline.Add(sessionTokenTTLGrace), Kind: contract.AttemptKind(a.Kind)})
}

type attemptKey struct{}

// authed checks the session token of a claimed attempt and refuses it once
// the attempt has ended (cancelled, timed out, reported).
func (s *Service) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := s.store.AuthenticateAttempt(r.Context(), r.PathValue(contract.PathValueAttempt), r.Header.Get(contract.HeaderSessionToken))
		if err != nil {
			contract.WriteError(w, http.StatusUnauthorized, contract.ErrorUnauthorized, "bad session token")
			return
		}
		// A session's routes serve sessions, a snapshot build's serve
		// snapshot builds: a token of one kind is no key to the other.
		snapshotRoute := r.Pattern == contract.RouteSnapshotJob || r.Pattern == contract.RouteSnapshotResult
		if snapshotRoute != (a.Kind == string(contract.KindSnapshot)) && r.Pattern != contract.RouteRepoToken {
			contract.WriteError(w, http.StatusConflict, contract.ErrorInvalid, "not a route for this kind of attempt")
			return
		}
		if a.State == store.AttemptEnded && r.Pattern != contract.RouteResult && r.Pattern != contract.RouteSnapshotResult {
			contract.WriteError(w, http.StatusGone, contract.ErrorAttemptEnded, "the attempt has ended")
			return
		}
		if s.clock.Now().After(a.Deadline.Add(sessionTokenTTLGrace)) {
			contract.WriteError(w, http.StatusGone, contract.ErrorAttemptEnded, "the attempt's token has expired")
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), attemptKey{}, a)))
	}
}

func attemptOf(r *http.Request) store.Attempt { return r.Context().Value(attemptKey{}).(store.Attempt) }

func (s *Service) handleSpec(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", contract.ContentTypeJSON)
	_, _ = w.Write([]byte(attemptOf(r).Spec)) // stored already encoded and validated at dispatch
}

// handleRepoToken mints a read-only token for the one repository, for the
// supervisor's own fetch. It is never given to the sandbox.
func (s *Service) handleRepoToken(w http.ResponseWriter, r *http.Request) {
	a := attemptOf(r)
	var installationID, repoID int64
	if a.Kind == string(contract.KindSnapshot) {
		sr, err := s.store.GetSnapshotRepo(r.Context(), a.RepoID)
		if err != nil {
			contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
			return
		}
		installationID, repoID = sr.InstallationID, sr.RepoID
	} else {
		sess, err := s.store.GetSession(r.Context(), a.SessionID)
		if err != nil {
			contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
			return
		}
		installationID, repoID = sess.InstallationID, sess.RepoID
	}
	tok, expires, err := s.mintRepoTokenUntil(r.Context(), installationID, repoID)
	if err != nil {
		s.channelLog(r).Error().Err(err).Msg("minting the repo token failed")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "could not mint a repository token")
		return
	}
	s.rememberToken(a.ID, mintedToken{installationID: installationID, value: tok, expiresAt: expires})
	contract.WriteJSON(w, 0, contract.RepoTokenResponse{Token: tok, ExpiresAt: expires})
}

// mintRepoTokenUntil mints a read-only installation token for one
// repository, for a supervisor's fetch or a snapshot build's clone, and
// says when it expires. Callers revoke it.
func (s *Service) mintRepoTokenUntil(ctx context.Context, installationID, repoID int64) (string, time.Time, error) {
	appClient, err := s.gh.App(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	tok, _, err := appClient.Apps.CreateInstallationToken(ctx, installationID, &github.InstallationTokenOptions{
		RepositoryIDs: []int64{repoID},
		Permissions:   &github.InstallationPermissions{Contents: github.String("read")},
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("minting a read token: %w", err)
	}
	return tok.GetToken(), tok.GetExpiresAt().Time, nil
}

func (s *Service) handleProgress(w http.ResponseWriter, r *http.Request) {
	ev, err := contract.DecodeProgressEvent(r.Body)
	if err != nil {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "invalid progress event")
		return
	}
	if _, err := s.store.RecordProgress(r.Context(), attemptOf(r).ID, ev.Seq, contract.CleanProgressMessage(ev.Message), s.clock.Now()); err != nil {
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) handleResult(w http.ResponseWriter, r *http.Request) {
	a := attemptOf(r)
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		contract.WriteError(w, http.StatusInternalServerError, contract.ErrorInvalid, "stored spec unreadable")
		return
	}
	up, err := contract.DecodeResultUpload(r.Body, spec.Limits.Manifest())
	var tooLarge *contract.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		contract.WriteError(w, http.StatusRequestEntityTooLarge, contract.ErrorTooLarge, "result too large")
		return
	case err != nil:
		s.channelLog(r).Warn().Err(err).Msg("invalid result")
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "invalid result: "+err.Error())
		return
	}
	body, err := json.Marshal(up)
	if err != nil {
		contract.WriteError(w, http.StatusInternalServerError, contract.ErrorInvalid, "could not store the result")
		return
	}
	if _, err := s.store.RecordResult(r.Context(), a.ID, string(body), s.clock.Now()); err != nil {
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	s.wakeWorkers()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) handleSnapshotJob(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", contract.ContentTypeJSON)
	_, _ = w.Write([]byte(attemptOf(r).Spec)) // the job, stored encoded and validated at dispatch
}

// handleSnapshotResult records a snapshot build's outcome on the repo's
// schedule, once, and collects old snapshots after a new one.
func (s *Service) handleSnapshotResult(w http.ResponseWriter, r *http.Request) {
	a := attemptOf(r)
	res, err := contract.DecodeSnapshotResult(r.Body)
	if err != nil {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "invalid snapshot result: "+err.Error())
		return
	}
	var job contract.SnapshotJob
	if err := json.Unmarshal([]byte(a.Spec), &job); err != nil || (res.Digest != "" && res.SHA != job.SHA) {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "the result is not for this job's commit")
		return
	}
	body, err := json.Marshal(res)
	if err != nil {
		contract.WriteError(w, http.StatusInternalServerError, contract.ErrorInvalid, "could not store the result")
		return
	}
	first, err := s.store.RecordSnapshotResult(r.Context(), a.ID, string(body), res.Digest, res.Error, s.clock.Now())
	if err != nil {
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	if first {
		log := s.channelLog(r).With().Int64("repo_id", a.RepoID).Logger()
		s.revokeTokens(log.WithContext(r.Context()), a.ID)
		if res.Digest == "" {
			log.Error().Str("error", res.Error).Msg("snapshot build failed; the previous snapshot stays")
		} else {
			log.Info().Str("digest", res.Digest).Str("sha", res.SHA).Msg("snapshot built")
			s.wakeWorkers() // to collect the old ones
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

package channel

import (
	"encoding/json"
	"net/http"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// The channel's registry route: the attempt's token is checked (authed),
// its registries read from what it was given (a session's spec, a snapshot
// build's job), and app/registryproxy does the rest (decision 0018).

func (c *Channel) handleEgressRegistry(rw http.ResponseWriter, r *http.Request, a store.Attempt) {
	w := liftTimeouts(rw, c.egressIdle)
	// A registry request (GET or HEAD) has no body: it has been read. Its
	// read deadline goes, or, on HTTP/1.1, net/http cancels the request's
	// context when it passes, however the answer is going (decision
	// 0059); the write deadline, renewed at each write, still ends a
	// silent answer.
	w.requestRead()
	allowed, err := attemptRegistries(a.Kind, a.Spec)
	if err != nil {
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "the attempt's spec is unreadable")
		return
	}
	c.registryProxy.Serve(w, r, a.ID, allowed, *c.attemptLog(r.Context(), a))
}

// attemptRegistries are the registries an attempt of kind was given, from
// its stored spec or snapshot job.
func attemptRegistries(kind, stored string) ([]contract.Registry, error) {
	if kind == string(contract.KindSnapshot) {
		var job contract.SnapshotJob
		if err := json.Unmarshal([]byte(stored), &job); err != nil {
			return nil, err
		}
		return job.Registries, nil
	}
	var spec contract.Spec
	if err := json.Unmarshal([]byte(stored), &spec); err != nil {
		return nil, err
	}
	return spec.Registries, nil
}

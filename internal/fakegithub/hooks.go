package fakegithub

import "slices"

// RefUpdate is a ref the Git Data API created or moved.
type RefUpdate struct {
	Owner, Repo string // as the repository was added
	Ref         string // the full ref name, e.g. "refs/heads/main"
	SHA         string // what the ref points at now
}

// OnRefUpdate registers fn to be called after each ref the Git Data API
// creates (POST .../git/refs) or moves (PATCH .../git/refs/{ref}, when the
// SHA changes). It is called with the server's lock released, so fn may
// call the Server's methods (AddForeignCheckRun, say, to have "CI" report
// on a commit the App pushed), and before the response is written, so the
// client sees fn's effects once its request returns. Several functions
// may be registered; they run in the order they were. Refs moved by the
// seeding helpers or by git over HTTP do not call them.
func (s *Server) OnRefUpdate(fn func(RefUpdate)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refHooks = append(s.refHooks, fn)
}

// refUpdated arranges for the OnRefUpdate functions to run once the call
// is done. Callers hold s.mu.
func (s *Server) refUpdated(c *call, r *repoState, ref, sha string) {
	u := RefUpdate{Owner: r.Owner, Repo: r.Name, Ref: ref, SHA: sha}
	c.after = append(c.after, func() {
		s.mu.Lock()
		hooks := slices.Clone(s.refHooks)
		s.mu.Unlock()
		for _, fn := range hooks {
			fn(u)
		}
	})
}

package handlers_test

import (
	"slices"
	"testing"

	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/session"
)

const (
	pushEvent = "push"
	// pushFixture is the deletion of tag simple-tag in
	// Codertocat/Hello-World (default branch master), with no installation.
	pushFixture = "push.payload.json"
)

// commit is one entry of a push payload's commits.
func commit(added, modified, removed []string) map[string]any {
	list := func(s []string) []any {
		out := []any{}
		for _, f := range s {
			out = append(out, f)
		}
		return out
	}
	return map[string]any{
		"id":       "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
		"message":  "Update files",
		"added":    list(added),
		"modified": list(modified),
		"removed":  list(removed),
	}
}

func commits(cs ...map[string]any) edit {
	list := []any{}
	for _, c := range cs {
		list = append(list, c)
	}
	return set("commits", list)
}

func modified(files ...string) edit { return commits(commit(nil, files, nil)) }

// orgRepo turns the fixture's repository into the owner's `.github` repo.
var orgRepo = []edit{
	set("repository.name", ".github"),
	set("repository.full_name", "Codertocat/.github"),
}

// fixturePush is the ConfigPush for pushFixture turned into a push to
// master from installation 1.
func fixturePush() session.ConfigPush {
	return session.ConfigPush{
		DeliveryID: testDelivery,
		Repo: session.Repo{
			ID:            186853002,
			Owner:         "Codertocat",
			Name:          "Hello-World",
			DefaultBranch: "master",
		},
		InstallationID: 1,
		OrgWide:        false,
	}
}

func TestPushHandles(t *testing.T) {
	h := &handlers.Push{}
	if got := h.Handles(); !slices.Equal(got, []string{"push"}) {
		t.Errorf("Handles() = %q, want [push]", got)
	}
}

func TestPush(t *testing.T) {
	same := func(*session.ConfigPush) {}
	orgWide := func(p *session.ConfigPush) { p.Repo.Name = ".github"; p.OrgWide = true }

	tests := []struct {
		name string
		// asIs sends the fixture unchanged; otherwise it is first made a
		// push of one commit to refs/heads/master from installation 1,
		// modifying README.md, and then edits apply.
		asIs    bool
		edits   []edit
		raw     []byte // when non-nil, the payload instead of the fixture
		noID    bool   // no X-GitHub-Delivery
		sinkErr error
		// want edits fixturePush into the one ConfigPush expected; nil
		// means the sink must not be called.
		want func(*session.ConfigPush)
		err  wantErr
	}{
		// Config changes on the default branch.
		{name: "modifies .github/inspect.yml", edits: []edit{modified(".github/inspect.yml")}, want: same},
		{name: "adds .github/inspect.yaml", edits: []edit{commits(commit([]string{".github/inspect.yaml"}, nil, nil))}, want: same},
		{name: "removes .github/inspect.yml", edits: []edit{commits(commit(nil, nil, []string{".github/inspect.yml"}))}, want: same},
		{
			name: "config changed in a later commit",
			edits: []edit{commits(
				commit([]string{"main.go"}, []string{"README.md"}, nil),
				commit(nil, []string{"go.mod", ".github/inspect.yml"}, nil),
			)},
			want: same,
		},
		{
			name:  "another default branch",
			edits: []edit{set("repository.default_branch", "main"), set("ref", "refs/heads/main"), modified(".github/inspect.yml")},
			want:  func(p *session.ConfigPush) { p.Repo.DefaultBranch = "main" },
		},
		// touchesConfig: "A push whose payload lists no commits (GitHub omits
		// them for very large pushes) is assumed to touch it: a needless
		// refresh is cheap, a stale cache is not."
		{name: "empty commits are assumed to touch the config", edits: []edit{set("commits", []any{})}, want: same},
		// A force-push may have dropped a commit that changed the config.
		{name: "force-push is assumed to touch the config", edits: []edit{set("forced", true), modified("README.md")}, want: same},
		{name: "null commits are assumed to touch the config", edits: []edit{set("commits", nil)}, want: same},
		{name: "missing commits are assumed to touch the config", edits: []edit{del("commits")}, want: same},
		{
			name:  "owner named only by name",
			edits: []edit{del("repository.owner.login"), set("repository.owner.name", "Codertocat"), modified(".github/inspect.yml")},
			want:  same,
		},
		{
			name:  "owner login preferred over name",
			edits: []edit{set("repository.owner.name", "Codertocat Inc."), modified(".github/inspect.yml")},
			want:  same,
		},

		// The owner's `.github` repo holds the org-wide config at its root.
		{name: "org repo, root inspect.yml", edits: append(slices.Clone(orgRepo), modified("inspect.yml")), want: orgWide},
		{name: "org repo, root inspect.yaml added", edits: append(slices.Clone(orgRepo), commits(commit([]string{"inspect.yaml"}, nil, nil))), want: orgWide},
		{name: "org repo, root inspect.yml removed", edits: append(slices.Clone(orgRepo), commits(commit(nil, nil, []string{"inspect.yml"}))), want: orgWide},
		// The .github repo's own config is still reported as org-wide: the
		// handler does not tell the two apart.
		{name: "org repo, its own .github/inspect.yml", edits: append(slices.Clone(orgRepo), modified(".github/inspect.yml")), want: orgWide},
		{name: "org repo, empty commits", edits: append(slices.Clone(orgRepo), set("commits", []any{})), want: orgWide},
		{name: "org repo, README only", edits: append(slices.Clone(orgRepo), modified("README.md"))},
		{name: "org repo, another branch", edits: append(slices.Clone(orgRepo), set("ref", "refs/heads/feature"), modified("inspect.yml"))},

		// Nothing to refresh.
		{name: "README only", edits: []edit{modified("README.md")}},
		{name: "root inspect.yml outside the org repo", edits: []edit{modified("inspect.yml")}},
		{name: "look-alike paths", edits: []edit{modified(".github/inspect.yml.bak", "docs/.github/inspect.yml", ".github/Inspect.yml", ".github/inspect.json", ".github/workflows/inspect.yml")}},
		{name: "commit with no files", edits: []edit{commits(commit(nil, nil, nil))}},
		{name: "another branch", edits: []edit{set("ref", "refs/heads/feature"), modified(".github/inspect.yml")}},
		{name: "branch with the default as prefix", edits: []edit{set("ref", "refs/heads/master-2"), modified(".github/inspect.yml")}},
		{name: "ref without refs/heads/", edits: []edit{set("ref", "master"), modified(".github/inspect.yml")}},
		{name: "tag push", edits: []edit{set("ref", "refs/tags/v1.0.0"), modified(".github/inspect.yml")}},
		{name: "tag named like the default branch", edits: []edit{set("ref", "refs/tags/master"), modified(".github/inspect.yml")}},
		{name: "default branch deleted", edits: []edit{set("deleted", true), set("after", "0000000000000000000000000000000000000000"), set("commits", []any{})}},
		{name: "tag deletion fixture as is", asIs: true},
		{name: "no default branch in the payload", edits: []edit{del("repository.default_branch"), modified(".github/inspect.yml")}},
		// Irrelevant pushes are ignored before the payload is validated.
		{name: "README only without installation", edits: []edit{del("installation"), modified("README.md")}},

		// Incomplete payloads.
		{name: "missing installation", edits: []edit{del("installation"), modified(".github/inspect.yml")}, err: payloadErr},
		{name: "installation id 0", edits: []edit{set("installation.id", 0), modified(".github/inspect.yml")}, err: payloadErr},
		{name: "missing installation, empty commits", edits: []edit{del("installation"), set("commits", []any{})}, err: payloadErr},
		{name: "missing repository id", edits: []edit{del("repository.id"), modified(".github/inspect.yml")}, err: payloadErr},
		{name: "owner with neither login nor name", edits: []edit{del("repository.owner.login"), del("repository.owner.name"), modified(".github/inspect.yml")}, err: payloadErr},
		{name: "missing delivery id", noID: true, edits: []edit{modified(".github/inspect.yml")}, err: payloadErr},

		// Undecodable payloads.
		{name: "malformed JSON", raw: []byte(`{"ref":"refs/heads/master",`), err: payloadErr},
		{name: "empty body", raw: []byte{}, err: payloadErr},
		{name: "commits as an object", edits: []edit{set("commits", map[string]any{"added": []any{}})}, err: payloadErr},
		{name: "file list as a string", edits: []edit{set("commits", []any{map[string]any{"modified": ".github/inspect.yml"}})}, err: payloadErr},
		{name: "deleted as a string", edits: []edit{set("deleted", "false")}, err: payloadErr},
		{name: "repository id as a string", edits: []edit{set("repository.id", "186853002")}, err: payloadErr},

		// The sink's answer.
		{name: "sink error", sinkErr: errSinkDown, edits: []edit{modified(".github/inspect.yml")}, want: same, err: sinkErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			payload := tc.raw
			if payload == nil {
				m := loadFixture(t, pushFixture)
				if !tc.asIs {
					for _, e := range []edit{
						set("ref", "refs/heads/master"),
						set("deleted", false),
						set("after", "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"),
						set("installation", map[string]any{"id": 1}),
						modified("README.md"),
					} {
						e(t, m)
					}
					for _, e := range tc.edits {
						e(t, m)
					}
				}
				payload = encode(t, m)
			}
			delivery := testDelivery
			if tc.noID {
				delivery = ""
			}
			sink := &fakeSink{err: tc.sinkErr}
			h := &handlers.Push{Sink: sink}

			err := h.Handle(testContext(), pushEvent, delivery, payload)
			checkErr(t, err, tc.err)

			triggers, pushes := sink.recorded()
			expectCalls(t, "AcceptTrigger", triggers, nil)
			expectCalls(t, "AcceptConfigPush", pushes, edited(fixturePush, tc.want))
		})
	}
}

// Every push to the default branch tells the sink its branch moved (for
// snapshot rebuilds), config or not; other refs, tags and deletions do not.
func TestPushReportsTheDefaultBranchMoving(t *testing.T) {
	for name, c := range map[string]struct {
		edits []edit
		moved bool
	}{
		"README on the default branch": {edits: []edit{modified("README.md")}, moved: true},
		"config on the default branch": {edits: []edit{modified(".github/inspect.yml")}, moved: true},
		"another branch":               {edits: []edit{set("ref", "refs/heads/feature"), modified("README.md")}},
		"a tag":                        {edits: []edit{set("ref", "refs/tags/master"), modified("README.md")}},
		"default branch deleted":       {edits: []edit{set("deleted", true), set("commits", []any{})}},
	} {
		t.Run(name, func(t *testing.T) {
			m := loadFixture(t, pushFixture)
			for _, e := range append([]edit{
				set("ref", "refs/heads/master"), set("deleted", false),
				set("after", "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"), set("installation", map[string]any{"id": 1}),
			}, c.edits...) {
				e(t, m)
			}
			sink := &fakeSink{}
			if err := (&handlers.Push{Sink: sink}).Handle(testContext(), pushEvent, testDelivery, encode(t, m)); err != nil {
				t.Fatal(err)
			}
			sink.mu.Lock()
			moved := append([]session.Repo(nil), sink.moved...)
			sink.mu.Unlock()
			if c.moved != (len(moved) == 1) || (c.moved && (moved[0].ID != 186853002 || moved[0].FullName() != "Codertocat/Hello-World")) {
				t.Errorf("moved = %+v, want moved=%v", moved, c.moved)
			}
		})
	}
}

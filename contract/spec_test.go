package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSpecValidate(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name   string
		mutate func(*Spec)
		faults []string
	}{
		{"valid", func(*Spec) {}, nil},
		{"valid issue", func(s *Spec) { s.Target = Target{Kind: TargetIssue, Number: 7, BaseBranch: "main"} }, nil},
		{"valid branch", func(s *Spec) { s.Target = Target{Kind: TargetBranch, BaseBranch: "feature/login"} }, nil},
		{"branch with a number", func(s *Spec) { s.Target = Target{Kind: TargetBranch, Number: 3, BaseBranch: "x"} }, []string{"target.number"}},
		{"branch with head branch", func(s *Spec) { s.Target = Target{Kind: TargetBranch, BaseBranch: "x", HeadBranch: "y"} }, []string{"target.head_branch"}},
		{"branch named as an option", func(s *Spec) { s.Target = Target{Kind: TargetBranch, BaseBranch: "--upload-pack=evil"} }, []string{"target.base_branch"}},
		{"valid without optional parts", func(s *Spec) {
			s.Snapshot, s.Env, s.Context, s.Setup, s.Verify, s.Agent.Model = nil, nil, nil, nil, nil, ""
		}, nil},
		{"valid bot requester", func(s *Spec) { s.Requester.Login = "dependabot[bot]" }, nil},
		{"valid http stand-in URL", func(s *Spec) { s.Repo.CloneURL = "http://127.0.0.1:8080/o/r.git" }, nil},

		{"version missing", func(s *Spec) { s.Version = "" }, []string{"version"}},
		{"version other", func(s *Spec) { s.Version = "inspect.session-spec/v1" }, []string{"version"}},
		{"session id missing", func(s *Spec) { s.SessionID = "" }, []string{"session_id"}},
		{"agent state's attempt", func(s *Spec) { s.AgentState = &AgentStateRef{AttemptID: "a/b"} }, []string{"agent_state.attempt_id"}},
		{"session id with slash", func(s *Spec) { s.SessionID = "a/b" }, []string{"session_id"}},
		{"session id leading dash", func(s *Spec) { s.SessionID = "-x" }, []string{"session_id"}},
		{"attempt id too long", func(s *Spec) { s.AttemptID = long(MaxIDBytes + 1) }, []string{"attempt_id"}},

		{"owner missing", func(s *Spec) { s.Repo.Owner = "" }, []string{"repo.owner"}},
		{"owner bad", func(s *Spec) { s.Repo.Owner = "octo_org" }, []string{"repo.owner"}},
		{"owner bot", func(s *Spec) { s.Repo.Owner = "x[bot]" }, []string{"repo.owner"}},
		{"name missing", func(s *Spec) { s.Repo.Name = "" }, []string{"repo.name"}},
		{"name dotdot", func(s *Spec) { s.Repo.Name = ".." }, []string{"repo.name"}},
		{"name slash", func(s *Spec) { s.Repo.Name = "a/b" }, []string{"repo.name"}},
		{"repo id zero", func(s *Spec) { s.Repo.ID = 0 }, []string{"repo.id"}},
		{"clone URL missing", func(s *Spec) { s.Repo.CloneURL = "" }, []string{"repo.clone_url"}},
		{"clone URL with user", func(s *Spec) { s.Repo.CloneURL = "https://someone@github.com/o/r.git" }, []string{"repo.clone_url"}},
		{"clone URL with password", func(s *Spec) { s.Repo.CloneURL = "https://x:y@github.com/o/r.git" }, []string{"repo.clone_url"}},
		{"clone URL ssh", func(s *Spec) { s.Repo.CloneURL = "ssh://git@github.com/o/r.git" }, []string{"repo.clone_url"}},
		{"clone URL scp form", func(s *Spec) { s.Repo.CloneURL = "git@github.com:o/r.git" }, []string{"repo.clone_url"}},
		{"clone URL file", func(s *Spec) { s.Repo.CloneURL = "file:///srv/r.git" }, []string{"repo.clone_url"}},
		{"clone URL no host", func(s *Spec) { s.Repo.CloneURL = "https:///o/r.git" }, []string{"repo.clone_url"}},
		{"clone URL query", func(s *Spec) { s.Repo.CloneURL = "https://github.com/o/r.git?access=1" }, []string{"repo.clone_url"}},
		{"clone URL fragment", func(s *Spec) { s.Repo.CloneURL = "https://github.com/o/r.git#x" }, []string{"repo.clone_url"}},
		{"clone URL unparsable", func(s *Spec) { s.Repo.CloneURL = "https://github.com/%zz" }, []string{"repo.clone_url"}},
		{"default branch missing", func(s *Spec) { s.Repo.DefaultBranch = "" }, []string{"repo.default_branch"}},

		{"sha missing", func(s *Spec) { s.PinnedSHA = "" }, []string{"pinned_sha"}},
		{"sha short", func(s *Spec) { s.PinnedSHA = sha1[:12] }, []string{"pinned_sha"}},
		{"sha upper", func(s *Spec) { s.PinnedSHA = strings.ToUpper(sha1) }, []string{"pinned_sha"}},
		{"sha not hex", func(s *Spec) { s.PinnedSHA = strings.Repeat("g", 40) }, []string{"pinned_sha"}},

		{"target kind missing", func(s *Spec) { s.Target.Kind = "" }, []string{"target.kind"}},
		{"target kind other", func(s *Spec) { s.Target.Kind = "discussion" }, []string{"target.kind"}},
		{"target number zero", func(s *Spec) { s.Target.Number = 0 }, []string{"target.number"}},
		{"base branch missing", func(s *Spec) { s.Target.BaseBranch = "" }, []string{"target.base_branch"}},
		{"PR without head branch", func(s *Spec) { s.Target.HeadBranch = "" }, []string{"target.head_branch"}},
		{"issue with head branch", func(s *Spec) { s.Target.Kind = TargetIssue }, []string{"target.head_branch"}},
		{"head branch option", func(s *Spec) { s.Target.HeadBranch = "--upload-pack=evil" }, []string{"target.head_branch"}},
		{"head branch dotdot", func(s *Spec) { s.Target.HeadBranch = "a..b" }, []string{"target.head_branch"}},
		{"head branch space", func(s *Spec) { s.Target.HeadBranch = "a b" }, []string{"target.head_branch"}},
		{"head branch colon", func(s *Spec) { s.Target.HeadBranch = "a:b" }, []string{"target.head_branch"}},
		{"head branch reflog", func(s *Spec) { s.Target.HeadBranch = "a@{1}" }, []string{"target.head_branch"}},
		{"head branch lock", func(s *Spec) { s.Target.HeadBranch = "a.lock" }, []string{"target.head_branch"}},
		{"head branch trailing slash", func(s *Spec) { s.Target.HeadBranch = "a/" }, []string{"target.head_branch"}},
		{"head branch dot component", func(s *Spec) { s.Target.HeadBranch = "a/.b" }, []string{"target.head_branch"}},
		{"head branch newline", func(s *Spec) { s.Target.HeadBranch = "a\nb" }, []string{"target.head_branch"}},
		{"head branch bidi", func(s *Spec) { s.Target.HeadBranch = "fix\u202etxt.exe" }, []string{"target.head_branch"}},
		{"head branch too long", func(s *Spec) { s.Target.HeadBranch = long(MaxNameBytes + 1) }, []string{"target.head_branch"}},

		{"snapshot digest bad", func(s *Spec) { s.Snapshot.Digest = "sha256:abc" }, []string{"snapshot.digest"}},
		{"snapshot digest other algorithm", func(s *Spec) { s.Snapshot.Digest = "sha512:" + strings.Repeat("ab", 32) }, []string{"snapshot.digest"}},
		{"snapshot store with a scheme", func(s *Spec) { s.Snapshot.Store = "https://registry.example.com/x" }, []string{"snapshot.store"}},
		{"snapshot store relative layout", func(s *Spec) { s.Snapshot.Store = "oci:snapshots" }, []string{"snapshot.store"}},
		{"cache at the root", func(s *Spec) { s.Snapshot.Caches[0].Path = "/" }, []string{"snapshot.caches[0].path"}},
		{"cache in the workspace's .git", func(s *Spec) { s.Snapshot.Caches[0].Path = "/workspace/.git/hooks" }, []string{"snapshot.caches[0].path"}},
		{"cache under a .git", func(s *Spec) { s.Snapshot.Caches[0].Path = "/cache/.git" }, []string{"snapshot.caches[0].path"}},
		{"cache in Inspect's reserved dir", func(s *Spec) { s.Snapshot.Caches[0].Path = "/workspace/.inspect/x" }, []string{"snapshot.caches[0].path"}},
		{"caches nest", func(s *Spec) {
			s.Snapshot.Caches = append(s.Snapshot.Caches, Cache{Path: "/cache/go/mod", Lockfiles: []string{"go.sum"}})
		}, []string{"snapshot.caches[1].path"}},
		{"store without a digest", func(s *Spec) { s.Snapshot.Digest = "" }, []string{"snapshot.digest"}},
		{"no snapshot built yet", func(s *Spec) { s.Snapshot.Store, s.Snapshot.Digest = "", "" }, nil},
		{"cache lockfile escapes", func(s *Spec) { s.Snapshot.Caches[0].Lockfiles = []string{"../go.sum"} }, []string{"snapshot.caches[0].lockfiles[0]"}},
		{"env overrides HOME", func(s *Spec) { s.Env["HOME"] = "/root" }, []string{"env.HOME"}},
		{"env bad name", func(s *Spec) { s.Env["A-B"] = "x" }, []string{"env"}},
		{"env carries a token", func(s *Spec) { s.Env["GH"] = "ghp_" + strings.Repeat("a", 36) }, []string{"env.GH"}},
		{"env path under the toolchain", func(s *Spec) { s.Env["GOCACHE"] = "/usr/local/go-cache" }, []string{"env.GOCACHE"}},
		{"env path outside the caches", func(s *Spec) { s.Env["PIP_CACHE_DIR"] = "/var/cache/pip" }, nil},

		{"instructions missing", func(s *Spec) { s.Instructions = "" }, []string{"instructions"}},
		{"instructions too long", func(s *Spec) { s.Instructions = long(MaxInstructionsBytes + 1) }, []string{"instructions"}},
		{"instructions invalid UTF-8", func(s *Spec) { s.Instructions = "a\xffb" }, []string{"instructions"}},
		{"instructions NUL", func(s *Spec) { s.Instructions = "a\x00b" }, []string{"instructions"}},

		{"requester login missing", func(s *Spec) { s.Requester.Login = "" }, []string{"requester.login"}},
		{"requester login bad", func(s *Spec) { s.Requester.Login = "a b" }, []string{"requester.login"}},
		{"requester login too long", func(s *Spec) { s.Requester.Login = long(40) }, []string{"requester.login"}},
		{"requester id zero", func(s *Spec) { s.Requester.ID = 0 }, []string{"requester.id"}},

		{"too many context items", func(s *Spec) { s.Context = make([]ContextItem, MaxContextItems+1); fillContext(s.Context) }, []string{"context"}},
		{"context kind missing", func(s *Spec) { s.Context[0].Kind = "" }, []string{"context[0].kind"}},
		{"context kind unknown", func(s *Spec) { s.Context[1].Kind = "review" }, []string{"context[1].kind"}},
		{"context author bad", func(s *Spec) { s.Context[1].Author = "not a login" }, []string{"context[1].author"}},
		{"context source newline", func(s *Spec) { s.Context[2].Source = "a\nb" }, []string{"context[2].source"}},
		{"context text too long", func(s *Spec) { s.Context[2].Text = long(MaxContextTextBytes + 1) }, []string{"context[2].text"}},
		{"context text invalid UTF-8", func(s *Spec) { s.Context[3].Text = "\xc3" }, []string{"context[3].text"}},
		{"check output trusted", func(s *Spec) { s.Context[2].Untrusted = false }, []string{"context[2].untrusted"}},

		{"preset missing", func(s *Spec) { s.Agent.Preset = "" }, []string{"agent.preset"}},
		{"preset unknown", func(s *Spec) { s.Agent.Preset = "aider" }, []string{"agent.preset"}},
		{"command preset without argv", func(s *Spec) { s.Agent.Command = nil }, []string{"agent.command"}},
		{"command preset empty program", func(s *Spec) { s.Agent.Command = []string{"", "x"} }, []string{"agent.command[0]"}},
		{"command argv NUL", func(s *Spec) { s.Agent.Command = []string{"a", "b\x00"} }, []string{"agent.command[1]"}},
		{"command argv too many", func(s *Spec) { s.Agent.Command = make([]string, MaxArgs+1); s.Agent.Command[0] = "a" }, []string{"agent.command"}},
		{"model newline", func(s *Spec) { s.Agent.Model = "a\nb" }, []string{"agent.model"}},
		{"tools image by tag", func(s *Spec) { s.Agent.ToolsImage = "registry.example.com/tools:latest" }, []string{"agent.tools_image"}},
		{"base image newline", func(s *Spec) { s.BaseImage = "oci:/x@sha256:" + strings.Repeat("a", 64) + "\n" }, []string{"base_image"}},
		{"base image too long", func(s *Spec) { s.BaseImage = strings.Repeat("a", 513) }, []string{"base_image"}},
		{"tools image layout relative", func(s *Spec) { s.Agent.ToolsImage = "oci:tools@sha256:" + strings.Repeat("a", 64) }, []string{"agent.tools_image"}},

		{"setup name missing", func(s *Spec) { s.Setup[0].Name = "" }, []string{"setup[0].name"}},
		{"setup argv empty", func(s *Spec) { s.Setup[0].Argv = nil }, []string{"setup[0].argv"}},
		{"setup timeout zero", func(s *Spec) { s.Setup[0].Timeout = 0 }, []string{"setup[0].timeout"}},
		{"verify timeout negative", func(s *Spec) { s.Verify[1].Timeout = Duration(-time.Second) }, []string{"verify[1].timeout"}},
		{"verify duplicate name", func(s *Spec) { s.Verify[1].Name = "test" }, []string{"verify[1].name"}},
		{"same name across phases is fine", func(s *Spec) { s.Setup[0].Name = "test" }, nil},
		{"too many verify commands", func(s *Spec) {
			s.Verify = nil
			for i := range MaxCommandsPerPhase + 1 {
				s.Verify = append(s.Verify, Command{Name: string(rune('a' + i)), Argv: []string{"true"}, Timeout: Duration(time.Second)})
			}
		}, []string{"verify"}},

		{"deadline missing", func(s *Spec) { s.Limits.Deadline = time.Time{} }, []string{"limits.deadline"}},
		{"timeout missing", func(s *Spec) { s.Limits.Timeout = 0 }, []string{"limits.timeout"}},
		{"max output zero", func(s *Spec) { s.Limits.MaxOutputBytes = 0 }, []string{"limits.max_output_bytes"}},
		{"max output above hard cap", func(s *Spec) { s.Limits.MaxOutputBytes = HardMaxOutputBytes + 1 }, []string{"limits.max_output_bytes"}},
		{"max files zero", func(s *Spec) { s.Limits.MaxChangedFiles = 0 }, []string{"limits.max_changed_files"}},
		{"max files above hard cap", func(s *Spec) { s.Limits.MaxChangedFiles = HardMaxChangedFiles + 1 }, []string{"limits.max_changed_files"}},
		{"max bytes negative", func(s *Spec) { s.Limits.MaxChangeBytes = -1 }, []string{"limits.max_change_bytes"}},
		{"max bytes above hard cap", func(s *Spec) { s.Limits.MaxChangeBytes = HardMaxChangeBytes + 1 }, []string{"limits.max_change_bytes"}},

		{"several faults at once", func(s *Spec) { s.PinnedSHA, s.Requester.ID, s.Verify[0].Argv = "", 0, nil },
			[]string{"pinned_sha", "requester.id", "verify[0].argv"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.mutate(&s)
			wantFaults(t, s.Validate(), tc.faults...)
		})
	}
}

func fillContext(items []ContextItem) {
	for i := range items {
		items[i] = ContextItem{Kind: ContextComment, Text: "x", Untrusted: true}
	}
}

func TestSpecErrorNamesFieldAndFault(t *testing.T) {
	s := validSpec()
	s.Repo.CloneURL = "https://user:hunter2hunter2@github.com/o/r.git"
	err := s.Validate()
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for _, want := range []string{"session spec", "repo.clone_url", "credentials"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "hunter2") {
		t.Errorf("error echoes the URL's password: %q", msg)
	}
}

// TestSpecRefusesSecretsEverywhere puts each known token format into every
// string of a spec in turn: the spec must be refused at that field, and the
// error must not echo the token.
func TestSpecRefusesSecretsEverywhere(t *testing.T) {
	var paths []string
	base := validSpec()
	walkStrings(reflect.ValueOf(&base).Elem(), "", func(p string, _ reflect.Value) { paths = append(paths, p) })
	if len(paths) < 25 {
		t.Fatalf("walked only %d strings: %v", len(paths), paths)
	}
	for name, tok := range fakeTokens() {
		for _, target := range paths {
			s := validSpec()
			walkStrings(reflect.ValueOf(&s).Elem(), "", func(p string, v reflect.Value) {
				if p == target {
					v.SetString("see " + tok + " here")
				}
			})
			err := s.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || !ve.Has(target) {
				t.Errorf("%s in %s: not refused at that field: %v", name, target, err)
				continue
			}
			found := false
			for _, f := range ve.Faults {
				found = found || f.Field == target && strings.Contains(f.Fault, "looks like")
			}
			if !found {
				t.Errorf("%s in %s: no secret fault: %v", name, target, err)
			}
			if msg := err.Error(); strings.Contains(msg, tok) || strings.Contains(msg, tok[:min(len(tok), 24)]) {
				t.Errorf("%s in %s: error echoes the secret: %q", name, target, msg)
			}
		}
	}
}

func TestSpecAllowsTokenLookalikes(t *testing.T) {
	for _, text := range []string{
		"installation tokens start with ghs_ and are short-lived",
		"see the task-runner-configuration-file-name option",
		"disk-image-builder-for-ubuntu-noble-numbat",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		"-----BEGIN PUBLIC KEY-----",
		"a sk-short key",
	} {
		s := validSpec()
		s.Context[1].Text = text
		if err := s.Validate(); err != nil {
			t.Errorf("%q refused: %v", text, err)
		}
	}
}

// TestSpecFieldNamesHoldNoCredentials fails when someone adds a field to a
// document that must never carry credentials and names it like one: the
// spec, the evidence, the manifest and progress events are stored, logged
// and uploaded as artifacts.
func TestSpecFieldNamesHoldNoCredentials(t *testing.T) {
	suspicious := regexp.MustCompile(`(?i)^(token|tokens|key|keys|apikey|password|passwd|secret|secrets|credential|credentials|auth|authorization|bearer|cookie|private|pat|pem|jwt|session_token|claim_code)$`)
	for _, doc := range []any{Spec{}, Evidence{}, Manifest{}, ProgressEvent{}} {
		var visit func(t reflect.Type, path string, seen map[reflect.Type]bool)
		visit = func(typ reflect.Type, path string, seen map[reflect.Type]bool) {
			for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array {
				typ = typ.Elem()
			}
			if typ.Kind() != reflect.Struct || seen[typ] || typ.PkgPath() != reflect.TypeFor[Spec]().PkgPath() {
				return
			}
			seen[typ] = true
			for i := range typ.NumField() {
				f := typ.Field(i)
				jn, _ := jsonName(f)
				for _, word := range append(splitWords(f.Name), strings.Split(jn, "_")...) {
					if suspicious.MatchString(word) {
						t.Errorf("%s.%s (json %q): the name suggests a credential; these documents carry none", path, f.Name, jn)
					}
				}
				visit(f.Type, path+"."+f.Name, seen)
			}
		}
		typ := reflect.TypeOf(doc)
		visit(typ, typ.Name(), map[reflect.Type]bool{})
	}
}

// splitWords splits a Go identifier at case changes: "SessionToken" →
// ["Session", "Token"], "PinnedSHA" → ["Pinned", "SHA"].
func splitWords(s string) []string {
	var words []string
	start := 0
	for i := 1; i < len(s); i++ {
		lower := func(c byte) bool { return c >= 'a' && c <= 'z' }
		upper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
		if upper(s[i]) && (lower(s[i-1]) || i+1 < len(s) && lower(s[i+1]) && upper(s[i-1])) {
			words = append(words, s[start:i])
			start = i
		}
	}
	return append(words, s[start:])
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string]string{
		"SessionToken": "Session Token", "PinnedSHA": "Pinned SHA", "CloneURL": "Clone URL",
		"APIKey": "API Key", "ID": "ID", "Author": "Author",
	} {
		if got := strings.Join(splitWords(in), " "); got != want {
			t.Errorf("splitWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSpecRoundTrip(t *testing.T) {
	s := validSpec()
	data, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSpec(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip changed the spec:\n got %+v\nwant %+v", got, s)
	}
	if !bytes.Contains(data, []byte(`"timeout":"45m0s"`)) || !bytes.Contains(data, []byte(`"deadline":"2025-03-04T11:00:00Z"`)) {
		t.Errorf("durations and times are not in their readable forms: %s", data)
	}
}

func TestDecodeSpecStrict(t *testing.T) {
	s := validSpec()
	good, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	withField := func(key, raw string) []byte {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		if raw == "" {
			delete(m, key)
		} else {
			m[key] = json.RawMessage(raw)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name  string
		data  []byte
		check func(error) bool
	}{
		{"unknown top-level field", withField("repo_token", `"x"`), contains(`unknown field "repo_token"`)},
		{"unknown nested field", bytes.Replace(good, []byte(`"owner":`), []byte(`"password":"x","owner":`), 1), contains(`unknown field "password"`)},
		{"trailing data", append(slicesClone(good), []byte(` {}`)...), contains("after the JSON value")},
		{"not JSON", []byte(`{"version":`), contains("decoding session spec")},
		{"missing version", withField("version", ""), func(err error) bool { return errors.Is(err, ErrVersion) }},
		{"other version with new fields", []byte(`{"version":"inspect.session-spec/v99","shiny":true}`), func(err error) bool {
			var ve *VersionError
			return errors.As(err, &ve) && ve.Got == "inspect.session-spec/v99" && strings.Contains(err.Error(), "v99")
		}},
		{"numeric duration", withField("limits", `{"deadline":"2025-03-04T11:00:00Z","timeout":60,"max_output_bytes":1,"max_changed_files":1,"max_change_bytes":1}`), contains("duration must be a string")},
		{"bad duration", withField("limits", `{"deadline":"2025-03-04T11:00:00Z","timeout":"soon","max_output_bytes":1,"max_changed_files":1,"max_change_bytes":1}`), contains("duration must be a string")},
		{"decodes but invalid", withField("pinned_sha", `"abc"`), func(err error) bool {
			var ve *ValidationError
			return errors.As(err, &ve) && ve.Has("pinned_sha")
		}},
		{"oversize", append(slicesClone(good[:len(good)-1]), []byte(`,"x":"`+strings.Repeat("a", MaxSpecBytes)+`"}`)...), func(err error) bool {
			var tl *TooLargeError
			return errors.Is(err, ErrTooLarge) && errors.As(err, &tl) && tl.Limit == MaxSpecBytes
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeSpec(bytes.NewReader(tc.data))
			if err == nil || !tc.check(err) {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, Spec{}) {
				t.Errorf("a refused spec was returned: %+v", got)
			}
		})
	}
}

func TestDecodeSpecReadsNoFurtherThanTheCap(t *testing.T) {
	r := &countingReader{}
	if _, err := DecodeSpec(r); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
	if r.n > MaxSpecBytes+1 {
		t.Errorf("read %d bytes, more than the cap + 1", r.n)
	}
}

// countingReader is an endless stream of spaces.
type countingReader struct{ n int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	c.n += int64(len(p))
	return len(p), nil
}

func TestKnownPresets(t *testing.T) {
	want := []Preset{PresetClaudeCode, PresetCodex, PresetCommand, PresetOpenCode}
	if got := KnownPresets(); !reflect.DeepEqual(got, want) {
		t.Fatalf("KnownPresets() = %v, want %v", got, want)
	}
	for _, p := range want {
		if !p.Known() {
			t.Errorf("%s.Known() = false", p)
		}
		if p != PresetCommand && len(presetProviderKinds[p]) == 0 {
			t.Errorf("preset %s speaks no provider kind", p)
		}
	}
	if Preset("aider").Known() || Preset("").Known() {
		t.Error("an unknown preset is Known")
	}
}

func TestPresetSpeaks(t *testing.T) {
	for _, c := range []struct {
		preset Preset
		kind   string
		want   bool
	}{
		{PresetCodex, ProviderKindOpenAI, true},
		{PresetCodex, ProviderKindAnthropic, false},
		{PresetClaudeCode, ProviderKindAnthropic, true},
		{PresetClaudeCode, ProviderKindOpenAI, false},
		{PresetOpenCode, ProviderKindOpenAI, true},
		{PresetOpenCode, ProviderKindAnthropic, true},
		{PresetCommand, ProviderKindOpenAI, true},
		{PresetCommand, ProviderKindAnthropic, true},
		{PresetCommand, "gemini", false},
		{PresetOpenCode, "", false},
		{"aider", ProviderKindOpenAI, false},
	} {
		if got := c.preset.Speaks(c.kind); got != c.want {
			t.Errorf("%s.Speaks(%q) = %v, want %v", c.preset, c.kind, got, c.want)
		}
	}
}

// TestAgentValidate checks each preset's shape: command needs its argv,
// the CLI presets a model served by a provider of a kind they speak and no
// argv, and no agent carries a URL-ish or credential-ish name.
func TestAgentValidate(t *testing.T) {
	codex := Agent{Preset: PresetCodex, Model: "gpt-5-codex", Provider: "openai", ProviderKind: ProviderKindOpenAI}
	with := func(a Agent, f func(*Agent)) Agent { f(&a); return a }
	cases := []struct {
		name   string
		agent  Agent
		faults []string
	}{
		{"command", Agent{Preset: PresetCommand, Command: []string{"./agent"}}, nil},
		{"command with a model only", Agent{Preset: PresetCommand, Command: []string{"./agent"}, Model: "gpt-5"}, nil},
		{"command with a provider", Agent{Preset: PresetCommand, Command: []string{"./agent"}, Model: "gpt-5", Provider: "openai", ProviderKind: ProviderKindOpenAI}, nil},
		{"command with a provider but no model", Agent{Preset: PresetCommand, Command: []string{"./agent"}, Provider: "openai", ProviderKind: ProviderKindOpenAI}, []string{"agent.model"}},
		{"command with a provider but no kind", Agent{Preset: PresetCommand, Command: []string{"./agent"}, Model: "m", Provider: "openai"}, []string{"agent.provider_kind"}},
		{"command with a kind but no provider", Agent{Preset: PresetCommand, Command: []string{"./agent"}, ProviderKind: ProviderKindOpenAI}, []string{"agent.provider_kind"}},
		{"command without argv", Agent{Preset: PresetCommand}, []string{"agent.command"}},

		{"codex", codex, nil},
		{"opencode on openai", with(codex, func(a *Agent) { a.Preset = PresetOpenCode }), nil},
		{"opencode on anthropic", Agent{Preset: PresetOpenCode, Model: "claude-opus-4-1", Provider: "anthropic", ProviderKind: ProviderKindAnthropic}, nil},
		{"claude-code", Agent{Preset: PresetClaudeCode, Model: "claude-opus-4-1@20250805", Provider: "vertex-claude", ProviderKind: ProviderKindAnthropic}, nil},
		{"model with a slash", with(codex, func(a *Agent) { a.Preset, a.Model = PresetOpenCode, "openai/gpt-oss-120b" }), nil},

		{"codex with a command", with(codex, func(a *Agent) { a.Command = []string{"codex"} }), []string{"agent.command"}},
		{"codex without a model", with(codex, func(a *Agent) { a.Model = "" }), []string{"agent.model"}},
		{"codex without a provider", with(codex, func(a *Agent) { a.Provider = "" }), []string{"agent.provider"}},
		{"codex without a kind", with(codex, func(a *Agent) { a.ProviderKind = "" }), []string{"agent.provider_kind"}},
		{"codex on anthropic", with(codex, func(a *Agent) { a.ProviderKind = ProviderKindAnthropic }), []string{"agent.provider_kind"}},
		{"claude-code on openai", Agent{Preset: PresetClaudeCode, Model: "m", Provider: "openai", ProviderKind: ProviderKindOpenAI}, []string{"agent.provider_kind"}},
		{"unknown kind", with(codex, func(a *Agent) { a.ProviderKind = "gemini" }), []string{"agent.provider_kind"}},
		{"nothing at all", Agent{Preset: PresetClaudeCode}, []string{"agent.model", "agent.provider", "agent.provider_kind"}},

		{"model is an option", with(codex, func(a *Agent) { a.Model = "--dangerous" }), []string{"agent.model"}},
		{"model with a space", with(codex, func(a *Agent) { a.Model = "gpt 5" }), []string{"agent.model"}},
		{"model with a quote", with(codex, func(a *Agent) { a.Model = `gpt"5` }), []string{"agent.model"}},
		{"model newline", with(codex, func(a *Agent) { a.Model = "a\nb" }), []string{"agent.model"}},
		{"model too long", with(codex, func(a *Agent) { a.Model = strings.Repeat("m", 129) }), []string{"agent.model"}},
		{"model longest", with(codex, func(a *Agent) { a.Model = strings.Repeat("m", 128) }), nil},
		{"provider is a URL", with(codex, func(a *Agent) { a.Provider = "https://api.openai.com/v1" }), []string{"agent.provider"}},
		{"provider upper case", with(codex, func(a *Agent) { a.Provider = "OpenAI" }), []string{"agent.provider"}},
		{"provider path", with(codex, func(a *Agent) { a.Provider = "openai/../x" }), []string{"agent.provider"}},
		{"provider too long", with(codex, func(a *Agent) { a.Provider = strings.Repeat("p", 64) }), []string{"agent.provider"}},
		{"model is a key", with(codex, func(a *Agent) { a.Model = fakeToken("sk-", 40) }), []string{"agent.model"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.agent.Validate()
			wantFaults(t, err, tc.faults...)
			s := validSpec()
			s.Agent = tc.agent
			wantFaults(t, s.Validate(), tc.faults...)
			// Faults name the field, never echo a long value (a key in
			// the wrong place must not reach a log).
			if err != nil && len(tc.agent.Model) > 20 && strings.Contains(err.Error(), tc.agent.Model) {
				t.Errorf("the fault echoes the model: %v", err)
			}
		})
	}
}

func TestValidNames(t *testing.T) {
	for _, ok := range []string{"openai", "anthropic", "azure-east_2", "0"} {
		if err := ValidProviderName(ok); err != nil {
			t.Errorf("ValidProviderName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "_x", "Open", "a.b", "a/b", "a b", strings.Repeat("a", 64)} {
		if ValidProviderName(bad) == nil {
			t.Errorf("ValidProviderName(%q) = nil", bad)
		}
	}
	for _, ok := range []string{"gpt-5-codex", "o3", "claude-opus-4-1@20250805", "openai/gpt-oss-120b", "us.anthropic.claude-sonnet-4:0", "GPT_5"} {
		if err := ValidModelName(ok); err != nil {
			t.Errorf("ValidModelName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-m", ".m", "/m", "m m", "m\tx", `m"`, "m'", "m\\x", "m=x", "m$x", "m;x", "m]", strings.Repeat("m", 129)} {
		if ValidModelName(bad) == nil {
			t.Errorf("ValidModelName(%q) = nil", bad)
		}
	}
}

func TestLimitsManifest(t *testing.T) {
	l := validSpec().Limits
	if got := l.Manifest(); got != (ManifestLimits{MaxFiles: 100, MaxBytes: 1 << 20}) {
		t.Fatalf("Manifest() = %+v", got)
	}
}

func TestDurationJSON(t *testing.T) {
	var d Duration
	if err := json.Unmarshal([]byte(`"1h30m"`), &d); err != nil || d.Std() != 90*time.Minute {
		t.Fatalf("got %v, %v", d, err)
	}
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d.Std() != 90*time.Minute {
		t.Fatalf("null changed the duration: %v, %v", d, err)
	}
	out, err := json.Marshal(Duration(1500 * time.Millisecond))
	if err != nil || string(out) != `"1.5s"` {
		t.Fatalf("got %s, %v", out, err)
	}
	if Duration(time.Second).String() != "1s" {
		t.Fatal("String")
	}
}

func contains(s string) func(error) bool {
	return func(err error) bool { return strings.Contains(err.Error(), s) }
}

func slicesClone(b []byte) []byte { return append([]byte(nil), b...) }

package dockerfile

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParseJoinsContinuationsAndDropsComments(t *testing.T) {
	f, err := Parse(`# syntax=docker/dockerfile:1
# a comment, not a directive: directives end here
ARG V=1
FROM golang:1.26@sha256:` + strings.Repeat("a", 64) + ` AS Build
RUN a \
# a comment inside the continuation
    b \
    c
from build as final
user 1000:1000
`)
	if err != nil {
		t.Fatal(err)
	}
	if f.Directives["syntax"] != "docker/dockerfile:1" || len(f.Stages) != 2 {
		t.Fatalf("%+v", f)
	}
	if run := f.Stages[0].Body[0]; run.Cmd != "RUN" || run.Args != "a b c" || run.Line != 5 {
		t.Errorf("RUN = %+v", run)
	}
	if f.Stages[0].Name != "build" || f.Stages[1].Image != "build" || !f.Pinned(0) || !f.Pinned(1) {
		t.Errorf("stages = %+v", f.Stages)
	}
	if u, ok := f.Stages[1].Last("USER"); !ok || !NonRoot(u.Args) {
		t.Errorf("USER = %+v", u)
	}
}

func TestParseRefusesWhatItCannotRead(t *testing.T) {
	for _, src := range []string{
		"",
		"RUN x\n",
		"FROM a b c d\n",
		"FROM --network=none a\n",
		"FROM a\nRUN x \\\n",
		"FROM a\nRUN <<EOF\nx\nEOF\n",
	} {
		if _, err := Parse(src); err == nil {
			t.Errorf("%q parsed", src)
		}
	}
}

func TestPinnedAndNonRoot(t *testing.T) {
	f, err := Parse("FROM golang:1.26\nFROM scratch\nFROM debian@sha256:abc\nFROM 0\n")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, false, true} {
		if f.Pinned(i) != want {
			t.Errorf("stage %d (%s): pinned %v", i, f.Stages[i].Image, !want)
		}
	}
	for u, want := range map[string]bool{"root": false, "0": false, "0:0": false, "00": false, "65532:65532": true, "inspect": true, "": false} {
		if NonRoot(u) != want {
			t.Errorf("NonRoot(%q) = %v", u, !want)
		}
	}
}

// The repository's Dockerfile, checked without a daemon or a registry.
func TestRepositoryDockerfile(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range f.Stages {
		if !f.Pinned(i) {
			t.Errorf("line %d: FROM %s is not pinned by digest", s.Line, s.Image)
		}
	}
	final := f.Stages[len(f.Stages)-1]
	local, ok := f.Stage("local")
	if !ok {
		t.Fatal("no local stage (the bubblewrap and git variant)")
	}
	for _, s := range []Stage{final, local} {
		u, ok := s.Last("USER")
		if !ok || !NonRoot(u.Args) {
			t.Errorf("stage %s runs as root (USER %q)", s.Name, u.Args)
		}
	}
	if run := strings.Join(runs(local), " "); !strings.Contains(run, "bubblewrap") || !strings.Contains(run, " git ") {
		t.Errorf("the local stage does not install bubblewrap and git: %s", run)
	}

	// The binary the final stage copies is built with README's flags.
	src := copiedFrom(t, final, "/inspect")
	build, ok := f.Stage(src.stage)
	if !ok {
		t.Fatalf("the final stage copies from %q, which is not a stage", src.stage)
	}
	var built string
	for _, r := range runs(build) {
		if strings.Contains(r, "go build") && strings.Contains(r, "-o "+src.path) {
			built = r
		}
	}
	if built == "" {
		t.Fatalf("no RUN in stage %s builds %s", src.stage, src.path)
	}
	want, got := buildFlags(readmeBuildCommand(t)), buildFlags(built)
	if !slices.Equal(want, got) {
		t.Errorf("the image builds with %v; README.md says %v", got, want)
	}
	if !slices.Contains(got, "CGO_ENABLED=0") {
		t.Errorf("the image's inspect is not static: %v", got)
	}
}

// readmeBuildCommand is README.md's command for building the binary
// ("Building the binary"), which the image and the container test use.
func readmeBuildCommand(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^(CGO_ENABLED=\S+ .*go build .*)$`).FindStringSubmatch(string(readme))
	if m == nil {
		t.Fatal("README.md gives no build command (CGO_ENABLED=... go build ...)")
	}
	return m[1]
}

func runs(s Stage) []string {
	var out []string
	for _, in := range s.Body {
		if in.Cmd == "RUN" {
			out = append(out, in.Args)
		}
	}
	return out
}

type copySource struct{ stage, path string }

// copiedFrom finds the COPY [--from=STAGE] SRC DEST that writes dest
// (stage "": from the build context).
func copiedFrom(t *testing.T, s Stage, dest string) copySource {
	t.Helper()
	for _, in := range s.Body {
		if in.Cmd != "COPY" {
			continue
		}
		var from string
		var args []string
		for _, a := range strings.Fields(in.Args) {
			if v, ok := strings.CutPrefix(a, "--from="); ok {
				from = v
			} else if !strings.HasPrefix(a, "--") {
				args = append(args, a)
			}
		}
		if len(args) == 2 && args[1] == dest {
			return copySource{stage: strings.ToLower(from), path: args[0]}
		}
	}
	t.Fatalf("stage %s copies nothing to %s", s.Name, dest)
	return copySource{}
}

// buildFlags is a go build command's environment and flags, without the
// output path: what makes two builds of the same package the same.
func buildFlags(cmd string) []string {
	var out []string
	fields := strings.Fields(cmd)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "-o":
			i++ // the output path may differ
		case strings.Contains(f, "=") && !strings.HasPrefix(f, "-"), strings.HasPrefix(f, "-"), strings.HasPrefix(f, "./"):
			out = append(out, f)
		}
	}
	return out
}

// testContainerfile is the Containerfile TestImageServes builds with podman:
// the Dockerfile's stages on bases built here (decision 0070).
const testContainerfile = "testdata/Containerfile"

// TestContainerfileTestKeepsTheDockerfilesStages: what the container test
// builds and runs is what ships. The two files have the same stages in the
// same order, and the stages that ship (local and server) are the same
// instruction for instruction, but for the local stage's `apt-get update`
// (the test's root has apt's lists already; its build has no network). The
// build stages differ on purpose: the test copies in the binary it built on
// the host with README.md's flags; both put it at the path the other
// stages copy from.
func TestContainerfileTestKeepsTheDockerfilesStages(t *testing.T) {
	shipped, test := parseFile(t, "../../Dockerfile"), parseFile(t, testContainerfile)
	if got, want := stageNames(test), stageNames(shipped); !slices.Equal(got, want) {
		t.Fatalf("%s has stages %v; the Dockerfile has %v", testContainerfile, got, want)
	}
	for i, s := range test.Stages {
		// Only roots built here, scratch or an earlier stage: podman
		// cannot pull anything on these machines.
		if !strings.HasPrefix(s.Image, "${") && !test.Pinned(i) {
			t.Errorf("%s line %d: FROM %s is neither a build argument, scratch nor an earlier stage", testContainerfile, s.Line, s.Image)
		}
	}
	for _, name := range []string{"local", "server"} {
		a, _ := shipped.Stage(name)
		b, _ := test.Stage(name)
		if a.Image != b.Image && !strings.HasPrefix(b.Image, "${") {
			t.Errorf("stage %s: FROM %s in the Dockerfile, %s in %s", name, a.Image, b.Image, testContainerfile)
		}
		got, want := comparable(b), comparable(a)
		if !slices.Equal(got, want) {
			t.Errorf("stage %s differs:\n%s:\n  %s\nDockerfile:\n  %s", name, testContainerfile,
				strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	local, _ := shipped.Stage("local")
	testLocal, _ := test.Stage("local")
	if got, want := aptInstalls(testLocal), aptInstalls(local); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the local stages install %v (%s) and %v (Dockerfile)", got, testContainerfile, want)
	}

	// Both build stages leave the binary where the other stages copy it from.
	src := copiedFrom(t, shipped.Stages[len(shipped.Stages)-1], "/inspect")
	testSrc := copiedFrom(t, test.Stages[len(test.Stages)-1], "/inspect")
	if src != testSrc {
		t.Errorf("the server stages copy %+v (Dockerfile) and %+v (%s)", src, testSrc, testContainerfile)
	}
	build, _ := test.Stage(testSrc.stage)
	if hostCopy := copiedFrom(t, build, testSrc.path); hostCopy.stage != "" || hostCopy.path != "inspect" {
		t.Errorf("the test's build stage does not copy the host's binary (inspect in the build context) to %s: %+v", testSrc.path, hostCopy)
	}
	for _, r := range runs(build) {
		if strings.Contains(r, "go build") {
			t.Errorf("the test's build stage runs go build (%s): it takes the binary built on the host", r)
		}
	}
	want := runs(mustStage(t, shipped, src.stage))
	for _, r := range runs(build) {
		if !slices.Contains(want, r) {
			t.Errorf("the test's build stage runs %q; the Dockerfile's build stage does not (%v)", r, want)
		}
	}
}

func parseFile(t *testing.T, path string) File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(string(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

func mustStage(t *testing.T, f File, name string) Stage {
	t.Helper()
	s, ok := f.Stage(name)
	if !ok {
		t.Fatalf("no stage %s", name)
	}
	return s
}

func stageNames(f File) []string {
	var out []string
	for _, s := range f.Stages {
		out = append(out, s.Name)
	}
	return out
}

// comparable is a stage's instructions, one string each, with whitespace
// normalised and `apt-get update` dropped from RUN's && chains.
func comparable(s Stage) []string {
	var out []string
	for _, in := range s.Body {
		args := strings.Join(strings.Fields(in.Args), " ")
		if in.Cmd == "RUN" {
			var kept []string
			for _, c := range strings.Split(args, "&&") {
				if c = strings.TrimSpace(c); c != "apt-get update" {
					kept = append(kept, c)
				}
			}
			args = strings.Join(kept, " && ")
		}
		out = append(out, in.Cmd+" "+args)
	}
	return out
}

// aptInstalls is the packages a stage's RUNs give `apt-get install`: the
// words after it that are not flags.
func aptInstalls(s Stage) []string {
	var out []string
	for _, r := range runs(s) {
		for _, c := range strings.Split(r, "&&") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(c), "apt-get install ")
			if !ok {
				continue
			}
			for _, w := range strings.Fields(rest) {
				if !strings.HasPrefix(w, "-") {
					out = append(out, w)
				}
			}
		}
	}
	return out
}

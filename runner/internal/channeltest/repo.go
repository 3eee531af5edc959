package channeltest

import (
	"embed"
	"path"
)

//go:embed testdata/*.sh
var agents embed.FS

// The fixture repository: a Go module whose TestAdd fails, with the
// stand-in agents under agent/.
var goRepo = map[string]string{
	"go.mod": "module example.com/widgets\n\ngo 1.21\n",
	"calc.go": `package widgets

// Add returns a + b.
func Add(a, b int) int { return a + b + 1 }

// Sub returns a - b.
func Sub(a, b int) int { return a - b }
`,
	"calc_test.go": `package widgets

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(1, 1); got != 2 {
		t.Errorf("Add(1, 1) = %d, want 2", got)
	}
}

func TestSub(t *testing.T) {
	if got := Sub(3, 1); got != 2 {
		t.Errorf("Sub(3, 1) = %d, want 2", got)
	}
}
`,
	"obsolete.txt":   "remove me\n",
	"tools/run.sh":   "#!/bin/sh\nexec go test ./...\n",
	"README.md":      "# widgets\n",
	".inspect/x.txt": "a repository's own .inspect/ is reserved\n",
}

// SeedGoRepo commits the fixture repository (with agent/fix.sh,
// agent/hang.sh and agent/idle.sh) onto main and returns the commit.
func (s *Server) SeedGoRepo() string {
	files := map[string]string{}
	for p, c := range goRepo {
		files[p] = c
	}
	ents, err := agents.ReadDir("testdata")
	if err != nil {
		panic(err)
	}
	for _, e := range ents {
		b, err := agents.ReadFile(path.Join("testdata", e.Name()))
		if err != nil {
			panic(err)
		}
		files["agent/"+e.Name()] = string(b)
	}
	return s.Seed(files)
}

// Package examples holds the sample repository (testdata/sample-repo, so
// the go tool does not run its deliberately failing test) that `make demo` and the
// end-to-end tests serve from the GitHub stand-in, and the stand-in agent
// that fixes it. Neither is linked into the production binary.
package examples

import (
	"embed"
	"io/fs"
	"path"
)

//go:embed stand-in-agent.sh all:testdata/sample-repo
var files embed.FS

// SampleRepo returns the sample repository's files (path → content), with
// the stand-in agent at scripts/inspect-stand-in-agent.sh, where its
// .github/inspect.yml expects it.
func SampleRepo() map[string]string {
	out := map[string]string{}
	err := fs.WalkDir(files, "testdata/sample-repo", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		name := p[len("testdata/sample-repo/"):]
		if name == "go.mod.sample" {
			// Stored under another name: a go.mod here would make the sample
			// a separate module, which go:embed refuses.
			name = "go.mod"
		}
		out[name] = string(b)
		return nil
	})
	if err != nil {
		panic(err) // embedded at build time: cannot fail at run time
	}
	agent, err := files.ReadFile("stand-in-agent.sh")
	if err != nil {
		panic(err) // as above
	}
	out[path.Join("scripts", "inspect-stand-in-agent.sh")] = string(agent)
	return out
}

package examples

import (
	"strings"
	"testing"
)

func TestSampleRepo(t *testing.T) {
	repo := SampleRepo()
	for _, name := range []string{"go.mod", "calc.go", "calc_test.go", ".github/inspect.yml", "scripts/inspect-stand-in-agent.sh"} {
		if repo[name] == "" {
			t.Errorf("%s missing from the sample repository", name)
		}
	}
	if !strings.Contains(repo[".github/inspect.yml"], "scripts/inspect-stand-in-agent.sh") {
		t.Error("the config does not run the stand-in agent")
	}
	if !strings.Contains(repo["calc.go"], "a + b + 1") {
		t.Error("the sample's bug is gone: the demo would have nothing to fix")
	}
}

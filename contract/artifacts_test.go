package contract

import "testing"

func TestArtifactPatternsAreCheckedAndMatchWithinComponents(t *testing.T) {
	for _, p := range []string{"screenshots/*.png", "reports/**", "out/[ab]?.txt", "junit.xml"} {
		if err := ValidateArtifactPattern(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"", "/abs/*.png", "../x", "a/../b", ".git/*", "**/x.png", "a/**/b", "bad[", "a\\b", "x/"} {
		if err := ValidateArtifactPattern(p); err == nil {
			t.Errorf("%q was accepted", p)
		}
	}
	patterns := []string{"screenshots/*.png", "reports/**"}
	for name, want := range map[string]bool{
		"screenshots/home.png":     true,
		"screenshots/a/b.png":      false, // * stays within one component
		"reports/run1/trace.zip":   true,
		"reports":                  false,
		"reportsx/a":               false,
		"web/screenshots/home.png": false,
	} {
		if got := MatchArtifact(patterns, name); got != want {
			t.Errorf("MatchArtifact(%q) = %v, want %v", name, got, want)
		}
	}
}

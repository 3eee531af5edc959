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

// A spec's artifact caps may name no globs of their own when a verify
// command names screenshots (decision 0083), whose files they then cap;
// without one they must name some.
func TestArtifactCapsWithoutGlobsServeScreenshotsOnly(t *testing.T) {
	s := validSpec()
	s.Artifacts.Patterns = nil
	if err := s.Validate(); err == nil {
		t.Fatal("artifacts with no globs and no screenshots validated")
	}
	s.Verify[0].Screenshots = []string{"shots/*.png"}
	if err := s.Validate(); err != nil {
		t.Fatalf("screenshots under caps with no globs: %v", err)
	}
	if got := ScreenshotOf(s.Verify, "shots/home.png"); got != s.Verify[0].Name {
		t.Errorf("ScreenshotOf = %q, want %q", got, s.Verify[0].Name)
	}
	if got := ScreenshotOf(s.Verify, "shots/a/home.png"); got != "" {
		t.Errorf("ScreenshotOf a path no glob matches = %q", got)
	}
	s.Setup[0].Screenshots = []string{"x.png"}
	if err := s.Validate(); err == nil {
		t.Error("a setup command's screenshots validated")
	}
}

package supervisor

import (
	"os"
	"path/filepath"
	"testing"
)

// The model proxy's allowlist is modelled on requests recorded from these
// very CLI versions (app/modelproxy/testdata/recorded, decision 0055):
// bumping a pinned version fails here until its requests are recorded
// again, so the allowlist never lags the CLI the sandbox runs.
func TestRecordedRequestsMatchThePinnedCLIs(t *testing.T) {
	for _, dir := range []string{"codex-" + CodexVersion, "opencode-" + OpenCodeVersion + "-openai",
		"opencode-" + OpenCodeVersion + "-anthropic", "claude-code-" + ClaudeCodeVersion} {
		files, err := filepath.Glob(filepath.Join("..", "..", "app", "modelproxy", "testdata", "recorded", dir, "request-*.json"))
		if err != nil || len(files) == 0 {
			t.Errorf("no requests recorded from %s (%v): record them (app/modelproxy/testdata/recorded/README.md)", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join("..", "..", "app", "modelproxy", "testdata", "recorded", "README.md")); err != nil {
		t.Error(err)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inspect tools build needs --out, and refuses a directory that holds
// anything before npm runs.
func TestToolsBuildRefusesBadOutput(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"tools", "build"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--out DIR") {
		t.Errorf("without --out: exit %d\n%s", code, errOut.String())
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	// An npm that is not there: the refusal must come first.
	code := run([]string{"tools", "build", "--out", dir, "--npm", filepath.Join(dir, "no-npm")}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "must be a new or empty directory") {
		t.Errorf("into a used directory: exit %d\n%s", code, errOut.String())
	}
	if code := run([]string{"tools", "frob"}, &out, &errOut); code != 2 {
		t.Errorf("tools frob: exit %d", code)
	}
}

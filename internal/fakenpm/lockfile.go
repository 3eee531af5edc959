package fakenpm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Lockfile runs the real npm once on the host, against reg, to write the
// package-lock.json a repository would commit for packageJSON: the
// lockfile's resolved addresses and integrity hashes are npm's own, not
// ours. token, when not empty, is the registry's bearer token, written to
// a private .npmrc as npm's docs show.
func Lockfile(t testing.TB, reg *Registry, token, packageJSON string) string {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(packageJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "npm_config_registry=" + reg.URL() + "/",
		"npm_config_cache=" + filepath.Join(home, "cache"),
		"npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false"}
	if token != "" {
		npmrc := "//" + strings.TrimPrefix(reg.URL(), "http://") + "/:_authToken=" + token + "\n"
		if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(npmrc), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "npm_config_userconfig="+filepath.Join(home, ".npmrc"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--package-lock-only", "--ignore-scripts")
	cmd.Dir = dir
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install --package-lock-only: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

package appsetup

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

var update = flag.Bool("update", false, "rewrite .github/app-manifest.json from Manifest")

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// .github/app-manifest.json is written from NewManifest(CheckedIn):
// go test ./app/appsetup -run TestCheckedInManifestIsGenerated -update
func TestCheckedInManifestIsGenerated(t *testing.T) {
	m, err := NewManifest(CheckedIn)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repoRoot(t), ".github", "app-manifest.json")
	if *update {
		if err := os.WriteFile(path, m.JSON(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, m.JSON()) {
		t.Errorf("%s differs from NewManifest(CheckedIn); regenerate it with -update:\n%s", path, m.JSON())
	}
}

func TestManifestAsksForNoMoreThanInspectUses(t *testing.T) {
	m, err := NewManifest(ManifestOptions{PublicURL: "https://ci.example/", RedirectURL: "http://127.0.0.1:3000/callback"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.DefaultPermissions["members"]; ok {
		t.Error("the manifest asks for members, which nothing uses")
	}
	for _, p := range []string{"administration", "workflows", "secrets", "organization_administration"} {
		if _, ok := m.DefaultPermissions[p]; ok {
			t.Errorf("the manifest asks for %s", p)
		}
	}
	if m.HookAttributes.URL != "https://ci.example"+HookPath || !m.HookAttributes.Active {
		t.Errorf("hook = %+v", m.HookAttributes)
	}
	if m.Public {
		t.Error("the App must be private: it runs code for whoever installs it")
	}
	// A change to the shared map must not leak into the next manifest.
	m.DefaultPermissions["contents"] = "admin"
	if Permissions["contents"] != "write" {
		t.Error("NewManifest hands out the package's map")
	}
}

func TestManifestRefusesBadOptions(t *testing.T) {
	for _, o := range []ManifestOptions{
		{PublicURL: "", RedirectURL: "http://127.0.0.1/"},
		{PublicURL: "inspect.example.com", RedirectURL: "http://127.0.0.1/"},
		{PublicURL: "https://u:p@inspect.example.com", RedirectURL: "http://127.0.0.1/"},
		{PublicURL: "https://inspect.example.com", RedirectURL: "/callback"},
		{Name: "an App name far longer than GitHub takes", PublicURL: "https://i.example", RedirectURL: "http://127.0.0.1/"},
	} {
		if _, err := NewManifest(o); err == nil {
			t.Errorf("NewManifest(%+v) accepted", o)
		}
	}
}

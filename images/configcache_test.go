package images

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/internal/layertest"
)

// configCountingImage counts how often its config blob is asked for.
type configCountingImage struct {
	v1.Image
	reads atomic.Int32
}

func (c *configCountingImage) RawConfigFile() ([]byte, error) {
	c.reads.Add(1)
	return c.Image.RawConfigFile()
}

func TestConfigCacheFetchesOnceAndRefetchesADamagedEntry(t *testing.T) {
	img := &configCountingImage{Image: layertest.Image(t, []string{"PATH=/x"}, layertest.Layer(t, layertest.File("f", "x", 0o644)))}
	dir := filepath.Join(t.TempDir(), "configs")
	for i := range 2 {
		cfg, err := WithConfigCache(img, dir).ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Config.Env) != 1 || cfg.Config.Env[0] != "PATH=/x" {
			t.Fatalf("session %d read env %v", i, cfg.Config.Env)
		}
	}
	if n := img.reads.Load(); n != 1 {
		t.Fatalf("the config was fetched %d times for two sessions, want 1", n)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "sha256-"+m.Config.Digest.Hex+".json")
	if err := os.WriteFile(file, []byte(`{"config":{"Env":["PATH=/evil"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := WithConfigCache(img, dir).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Env[0] != "PATH=/x" || img.reads.Load() != 2 {
		t.Errorf("a damaged cache entry was used (env %v, %d fetches)", cfg.Config.Env, img.reads.Load())
	}
}

package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// BenchmarkVerifyWorkspace measures what fixing the change before verify
// costs on this repository at HEAD (without vendor/): collecting the change
// (stageChange and the manifest) and writing the verify workspace (the
// pinned commit plus the change, its .git, handed to the sandbox uid), and
// that workspace's two parts on their own.
func BenchmarkVerifyWorkspace(b *testing.B) {
	top := strings.TrimSpace(benchRun(b, "", nil, "git", "rev-parse", "--show-toplevel"))
	root := b.TempDir()
	subject := &benchSubject{tb: b, dir: filepath.Join(root, "subject")}
	if err := os.Mkdir(subject.dir, 0o755); err != nil {
		b.Fatal(err)
	}
	archive := filepath.Join(root, "head.tar")
	benchRun(b, "", nil, "git", "-C", top, "archive", "--format=tar", "-o", archive, "HEAD")
	benchRun(b, "", nil, "tar", "-xf", archive, "-C", subject.dir)
	subject.git("init", "--quiet", "--initial-branch=main")
	subject.git("add", "-A")
	subject.git("commit", "--quiet", "-m", "subject")
	subject.sha = strings.TrimSpace(subject.git("rev-parse", "HEAD"))
	files := strings.Count(subject.git("ls-files"), "\n")
	b.Logf("subject: %d files, %s", files, benchDu(b, subject.dir))

	uid := uint32(os.Geteuid())
	if uid == 0 {
		uid = DefaultSandboxID
	}
	ctx := context.Background()
	var collect, build, checkout, ownGit time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ws, err := newWorkspace(root, "bench")
		if err != nil {
			b.Fatal(err)
		}
		g := &git{bin: "git", home: ws.homeDir, path: os.Getenv("PATH")}
		if err := ws.fetch(ctx, g, subject.dir, subject.sha, ""); err != nil {
			b.Fatal(err)
		}
		// The agent's change: one file edited, one added.
		if err := os.WriteFile(filepath.Join(ws.work, "README.md"), []byte("changed\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws.work, "NEW.md"), []byte("new\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		s := &session{
			cfg:  Config{SandboxUID: uid, SandboxGID: uid},
			spec: contract.Spec{PinnedSHA: subject.sha},
			ws:   ws,
			git:  g,
		}
		b.StartTimer()
		t0 := time.Now()
		c, err := collectChange(ctx, g, ws, subject.sha, contract.ManifestLimits{}, nil, nil, contract.NewRedactor())
		if err != nil || len(c.manifest.Files) != 2 {
			b.Fatalf("collect: %v %+v", err, c.manifest)
		}
		t1 := time.Now()
		if err := s.buildVerifyWorkspace(ctx); err != nil {
			b.Fatal(err)
		}
		collect += t1.Sub(t0)
		build += time.Since(t1)
		b.StopTimer()
		// Its parts, again in a directory of their own: the checkout of
		// the index, and the .git.
		parts := filepath.Join(ws.dir, "parts")
		if err := os.Mkdir(parts, 0o700); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := writeIndexTree(ctx, g, ws, parts); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if err := ws.ownGit(ctx, g, parts, subject.sha); err != nil {
			b.Fatal(err)
		}
		checkout += t3.Sub(t2)
		ownGit += time.Since(t3)
		if err := removeAll(ws.dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(collect.Milliseconds())/float64(b.N), "collect-ms")
	b.ReportMetric(float64(build.Milliseconds())/float64(b.N), "verify-workspace-ms")
	b.ReportMetric(float64(checkout.Milliseconds())/float64(b.N), "checkout-ms")
	b.ReportMetric(float64(ownGit.Milliseconds())/float64(b.N), "own-git-ms")
	b.ReportMetric(float64(files), "files")
}

package images

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFilesystem flushes the filesystem holding dir with one syncfs(2):
// far cheaper than an fsync per extracted file, and enough to make the
// rename that follows publish complete files.
func syncFilesystem(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	// Opened only to name the filesystem; nothing to lose on close.
	defer closeQuietly(f)
	return unix.Syncfs(int(f.Fd()))
}

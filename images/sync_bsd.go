//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package images

import "golang.org/x/sys/unix"

// syncFilesystem flushes all filesystems: these systems have no
// per-filesystem sync, and one full sync is still cheaper than an fsync per
// extracted file.
func syncFilesystem(string) error {
	return unix.Sync()
}

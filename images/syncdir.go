package images

import "os"

// syncDir fsyncs a directory so a rename inside it survives a crash.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		closeQuietly(f)
		return err
	}
	return f.Close()
}

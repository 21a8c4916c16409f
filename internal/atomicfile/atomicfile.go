// Package atomicfile writes a whole file under its final name at once: the
// bytes go to a temporary file that is renamed over the name, so a reader
// sees the old file or the new one, never a part, and an error leaves
// neither a part nor the temporary file.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path with permissions perm through a temporary file
// in path's directory (made if missing), renamed into place.
func Write(path string, data []byte, perm fs.FileMode) error {
	return WriteVia(filepath.Dir(path), path, data, perm)
}

// WriteVia is Write with the temporary file in dir, which must be on
// path's file system (a store's own tmp/, say, where a crash's leftovers
// are found and cleared). Both directories are made if missing.
func WriteVia(dir, path string, data []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // CreateTemp makes it 0600
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

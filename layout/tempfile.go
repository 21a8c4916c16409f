package layout

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A file being written is ".BASE.tmp-PID-RANDOM" beside its destination
// BASE, created with mode 0666 less the umask (what os.Create gives: 0644
// under umask 022) and held under an exclusive flock(2) by the writer until
// it is renamed into place or removed. A writer that was killed (SIGKILL, a
// crash, a power cut) leaves its file behind; the next writer of the same
// destination removes it when its process is gone and its lock is free, so
// that it never races a live writer.

// createTemp creates the temporary file of dest, after removing the ones
// dead writers left.
func createTemp(dest string) (*os.File, error) {
	removeStale(dest)
	dir, base := filepath.Split(dest)
	var rnd [6]byte
	for range 100 {
		rand.Read(rnd[:])
		name := filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d-%s", base, os.Getpid(), hex.EncodeToString(rnd[:])))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, tempErr(dest, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			os.Remove(name)
			return nil, fmt.Errorf("%s: lock: %w", dest, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s: no free temporary name", dest)
}

// legacyAge is how old a temporary file of the older naming (".BASE.tmpNNN",
// no pid, no lock) must be before it is taken for a dead writer's.
const legacyAge = time.Hour

// removeStale removes the temporary files of dest whose writers are gone.
func removeStale(dest string) {
	dir, base := filepath.Split(dest)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := "." + base + ".tmp"
	for _, e := range ents {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		if pidStr, ok := strings.CutPrefix(rest, "-"); ok {
			pidStr, _, _ = strings.Cut(pidStr, "-")
			pid, err := strconv.Atoi(pidStr)
			if err != nil || pid <= 0 || alive(pid) {
				continue
			}
		} else if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < legacyAge {
			continue
		}
		removeIfUnlocked(path)
	}
}

// alive reports whether process pid exists (EPERM: it does, not ours).
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// removeIfUnlocked removes path if no one holds its lock.
func removeIfUnlocked(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	os.Remove(path)
}

// tempErr reports an error on the temporary file of dest by dest's name
// (the temporary name means nothing to the user).
func tempErr(dest string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", pe.Op, dest, pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("%s %s: %w", le.Op, dest, le.Err)
	}
	return fmt.Errorf("%s: %w", dest, err)
}

// WriteFile writes data to dest the way every output of this package is
// written: into dest's temporary file (createTemp: the umask's mode, locked,
// dead writers' leftovers removed), renamed into place; on an error nothing
// is left and the error names dest.
func WriteFile(dest string, data []byte) error {
	tmp, err := createTemp(dest)
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	tmp.Close()
	if err != nil {
		os.Remove(tmp.Name())
		return tempErr(dest, err)
	}
	return nil
}

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/xdna-go/xdna/layout/gguftest"
)

func TestMain(m *testing.M) {
	if os.Getenv("XDNAPACK_TEST_MAIN") == "1" { // the test binary as xdnapack
		main()
		return
	}
	dir, err := os.MkdirTemp("", "xdnapack-cache")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func xdnapackCmd(args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), "XDNAPACK_TEST_MAIN=1")
	return c
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// temps lists the temporary files in dir.
func temps(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*"))
	return m
}

// TestPackSignals stops packs mid-way: SIGINT, SIGTERM and SIGHUP each
// leave no temporary file and no output, and exit 128+N; after a SIGKILL's
// leftover, the next pack to the same output removes it. The pack is caught
// mid-way by stopping it (SIGSTOP) as soon as its temporary file appears.
func TestPackSignals(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.gguf")
	s := gguftest.Tiny
	s.Layers, s.Dim, s.FFN, s.Vocab = 8, 512, 1536, 8192
	if err := gguftest.WriteModel(in, s); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.xdna")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL} {
		var err error
		for try := 0; ; try++ {
			c := xdnapackCmd(in, "-o", out, "-q")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); len(temps(dir)) == 0 && !exists(out); {
				if time.Now().After(deadline) {
					c.Process.Kill()
					c.Wait()
					t.Fatalf("%v: no temporary file appeared in 10 s", sig)
				}
				time.Sleep(200 * time.Microsecond)
			}
			c.Process.Signal(syscall.SIGSTOP)
			_, statErr := os.Stat(out)
			caught := len(temps(dir)) > 0 && statErr != nil
			c.Process.Signal(sig)
			c.Process.Signal(syscall.SIGCONT)
			err = c.Wait()
			if caught {
				break
			}
			os.Remove(out) // it finished before the stop: again
			if try == 20 {
				t.Fatalf("%v: never caught the pack mid-way", sig)
			}
		}
		var ee *exec.ExitError
		if sig == syscall.SIGKILL {
			if left := temps(dir); len(left) != 1 {
				t.Fatalf("SIGKILL left %v", left)
			}
			continue
		}
		if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
			t.Errorf("%v: %v, want exit %d", sig, err, 128+int(sig))
		}
		if left := temps(dir); len(left) > 0 {
			t.Errorf("%v left %v", sig, left)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: %s written", sig, out)
		}
	}
	old := syscall.Umask(0o022)
	_, _, err := run(t, in, "-o", out, "-q")
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if left := temps(dir); len(left) > 0 {
		t.Errorf("the pack after the SIGKILL left %v", left)
	}
	st, _ := os.Stat(out)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("%s: mode %v under umask 022, want 0644", out, st.Mode().Perm())
	}
}

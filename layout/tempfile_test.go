package layout_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/xdna-go/xdna/layout"
)

func TestMain(m *testing.M) {
	if p := os.Getenv("LAYOUT_TEST_OPEN"); p != "" { // the peak-RSS subprocess of TestZstdBomb
		f, err := layout.Open(p)
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		f.Close()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "layout-cache")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestModes: packages and their compressed form get the mode a new file
// gets under the umask (0644 under 022, 0600 under 077), not always 0600.
func TestModes(t *testing.T) {
	for _, c := range []struct {
		umask int
		want  os.FileMode
	}{{0o022, 0o644}, {0o077, 0o600}, {0o002, 0o664}} {
		old := syscall.Umask(c.umask)
		dir := t.TempDir()
		p := smallPackage(t, dir)
		z := p + ".zst"
		err := layout.Compress(context.Background(), p, z, zstd.SpeedFastest)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{p, z} {
			st, _ := os.Stat(f)
			if st.Mode().Perm() != c.want {
				t.Errorf("umask %03o: %s has mode %v, want %v", c.umask, filepath.Base(f), st.Mode().Perm(), c.want)
			}
		}
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	return c.Process.Pid
}

// TestStaleTemp: a writer removes the temporary files its destination's
// dead writers left (a SIGKILLed pack), and keeps a live writer's.
func TestStaleTemp(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "m.xdna")
	dead := filepath.Join(dir, fmt.Sprintf(".m.xdna.tmp-%d-0123456789ab", deadPID(t)))
	old := filepath.Join(dir, ".m.xdna.tmp123456") // the older naming, two hours old
	young := filepath.Join(dir, ".m.xdna.tmp654321")
	other := filepath.Join(dir, fmt.Sprintf(".n.xdna.tmp-%d-0123456789ab", deadPID(t))) // another destination's
	for _, f := range []string{dead, old, young, other} {
		os.WriteFile(f, []byte("partial"), 0o600)
	}
	os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour))

	live, err := layout.Create(dest) // a live writer: this process
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	second, err := layout.Create(dest) // must not remove live's file
	if err != nil {
		t.Fatal(err)
	}
	second.Abort()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	got := strings.Join(names, " ")
	for _, gone := range []string{dead, old} {
		if strings.Contains(got, filepath.Base(gone)) {
			t.Errorf("%s not removed: %s", filepath.Base(gone), got)
		}
	}
	for _, kept := range []string{young, other} {
		if !strings.Contains(got, filepath.Base(kept)) {
			t.Errorf("%s removed: %s", filepath.Base(kept), got)
		}
	}
	if n := strings.Count(got, fmt.Sprintf(".m.xdna.tmp-%d-", os.Getpid())); n != 1 {
		t.Errorf("the live writer's file: %d of them in %s", n, got)
	}
}

// TestErrorsNameTheOutput: a failed write names the destination, not its
// temporary file.
func TestErrorsNameTheOutput(t *testing.T) {
	if _, err := layout.Create("/proc/no/such/x.xdna"); err == nil || strings.Contains(err.Error(), ".tmp") || !strings.Contains(err.Error(), "/proc/no/such/x.xdna") {
		t.Errorf("Create in a missing directory: %v", err)
	}
}

// writeBomb writes a .zst of prefix followed by zeros, size bytes in all.
func writeBomb(t *testing.T, path string, prefix []byte, size int64) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc, _ := zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	enc.Write(prefix)
	zero := make([]byte, 1<<20)
	for n := int64(len(prefix)); n < size; n += int64(len(zero)) {
		enc.Write(zero[:min(int64(len(zero)), size-n)])
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
}

// openInSubprocess opens path with layout.Open in a child process and
// returns its output, its peak RSS in bytes and how long it ran.
func openInSubprocess(t *testing.T, path string) (string, int64, time.Duration) {
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), "LAYOUT_TEST_OPEN="+path)
	start := time.Now()
	out, _ := c.CombinedOutput()
	d := time.Since(start)
	ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no rusage")
	}
	return strings.TrimSpace(string(out)), ru.Maxrss * 1024, d
}

// TestZstdBomb: a small .zst that expands to 256 MiB of zeros is refused
// from its first bytes, and one whose valid header declares 128 MiB is
// unpacked by streaming; neither holds the expansion in memory (the
// earlier reader expanded it into RAM: a peak RSS above the expansion).
func TestZstdBomb(t *testing.T) {
	const size = 256 << 20
	const rssLimit = 96 << 20
	dir := t.TempDir()
	zeros := filepath.Join(dir, "zeros.xdna.zst")
	writeBomb(t, zeros, nil, size)
	out, rss, d := openInSubprocess(t, zeros)
	t.Logf("zeros: %q, peak RSS %.1f MiB, %v", out, float64(rss)/(1<<20), d)
	if !strings.Contains(out, "not an .xdna file") || rss > rssLimit {
		t.Errorf("zeros bomb: %q with a peak RSS of %d bytes", out, rss)
	}

	// A valid header declaring 128 MiB, its manifest in the zeros.
	const hsize = 128 << 20
	var h [layout.HeaderSize]byte
	copy(h[:], layout.Magic)
	binary.LittleEndian.PutUint32(h[8:], 1)
	binary.LittleEndian.PutUint32(h[12:], layout.HeaderSize)
	binary.LittleEndian.PutUint64(h[16:], hsize-4096)
	binary.LittleEndian.PutUint64(h[24:], 100)
	binary.LittleEndian.PutUint64(h[40:], hsize)
	binary.LittleEndian.PutUint32(h[60:], layout.Checksum(h[:60]))
	header := filepath.Join(dir, "header.xdna.zst")
	writeBomb(t, header, h[:], hsize)
	out, rss, d = openInSubprocess(t, header)
	t.Logf("header: %q, peak RSS %.1f MiB, %v", out, float64(rss)/(1<<20), d)
	if !strings.Contains(out, "manifest checksum mismatch") || rss > rssLimit {
		t.Errorf("header bomb: %q with a peak RSS of %d bytes", out, rss)
	}
	// Nothing of it stays in the cache.
	cached, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "xdna", "zst", "*"))
	if len(cached) > 0 {
		t.Errorf("left in the cache: %v", cached)
	}
	// One byte more than the header declares.
	long := filepath.Join(dir, "long.xdna.zst")
	binary.LittleEndian.PutUint64(h[40:], 1<<20)
	binary.LittleEndian.PutUint32(h[60:], layout.Checksum(h[:60]))
	writeBomb(t, long, h[:], 1<<20+1)
	if _, err := layout.Open(long); err == nil || !strings.Contains(err.Error(), "expands past the 1048576 bytes") {
		t.Errorf("longer than declared: %v", err)
	}
}

// TestZstdCache: a .zst is unpacked once into the cache; the next Open maps
// that file; the result is the .xdna's bytes.
func TestZstdCache(t *testing.T) {
	dir := t.TempDir()
	p := smallPackage(t, dir)
	z := p + ".zst"
	if err := layout.Compress(context.Background(), p, z, zstd.SpeedDefault); err != nil {
		t.Fatal(err)
	}
	f, err := layout.Open(z)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	cached, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "xdna", "zst", "*.xdna"))
	if len(cached) != 1 {
		t.Fatalf("cache holds %v", cached)
	}
	a, _ := os.ReadFile(p)
	b, _ := os.ReadFile(cached[0])
	if string(a) != string(b) {
		t.Fatal("the unpacked file differs from the .xdna")
	}
	st1, _ := os.Stat(cached[0])
	time.Sleep(10 * time.Millisecond)
	f, err = layout.Open(z)
	if err != nil || f.Name != z {
		t.Fatalf("second open: %v", err)
	}
	f.Close()
	st2, _ := os.Stat(cached[0])
	if !st2.ModTime().Equal(st1.ModTime()) || !os.SameFile(st1, st2) {
		t.Error("the second open unpacked again")
	}
	// A stopped Compress leaves nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := layout.Compress(ctx, p, filepath.Join(dir, "c.zst"), zstd.SpeedDefault); err == nil {
		t.Error("cancelled Compress succeeded")
	}
	onlyNames(t, dir, "small.xdna", "small.xdna.zst")

}

func onlyNames(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(names) {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

// TestWriteFile: the bytes land under the name, no temporary file stays,
// and a failure names the destination and leaves nothing.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "out.bin")
	if err := layout.WriteFile(dest, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dest); err != nil || string(b) != "hello" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want only the output", len(ents))
	}
	missing := filepath.Join(dir, "no", "out.bin")
	if err := layout.WriteFile(missing, []byte("x")); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("into a missing directory: %v, want an error naming %s", err, missing)
	}
}

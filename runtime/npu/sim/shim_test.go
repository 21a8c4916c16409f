package sim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// hostCXX returns the host C++ compiler ($CXX or g++), or skips the test saying why.
func hostCXX(t *testing.T) string {
	t.Helper()
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		t.Skipf("no C++ compiler (%s): %v", cxx, err)
	}
	return cxx
}

// TestShim builds and runs kernels/aie_api_shim/shim_test.cc, the tests of every
// aie_api primitive the shim models, with the host C++ compiler ($CXX or g++).
func TestShim(t *testing.T) {
	cxx := hostCXX(t)
	dir := filepath.Join("..", "..", "..", "kernels", "aie_api_shim")
	bin := filepath.Join(t.TempDir(), "shim_test")
	out, err := exec.Command(cxx, "-std=c++17", "-O1", "-Wall", "-I", dir, filepath.Join(dir, "shim_test.cc"), "-o", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cxx, err, out)
	}
	out, err = exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("shim_test: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "ok: ") {
		t.Fatalf("shim_test printed %q", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// TestDeviceEntries compiles the device entry point (gemv_tile, as kernels/build.sh
// builds it for the AIE) of every target and format in kernels/l1.tsv against the shim with the
// host compiler: the per-slot macros and the one-format instantiation that only the
// device build uses must at least be valid C++ (syntax and types; the AIE compile
// itself needs Peano, kernels/README.md).
func TestDeviceEntries(t *testing.T) {
	cxx := hostCXX(t)
	root := filepath.Join("..", "..", "..", "kernels")
	tsv, err := os.ReadFile(filepath.Join(root, "l1.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	ggml := map[string]string{"Q4_0": "2", "Q5_0": "6", "Q8_0": "8", "Q4_K": "12", "Q5_K": "13", "Q6_K": "14"}
	// One slot per target and format (the K-tile changes only constants), two at a time.
	seen := map[string]bool{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, line := range strings.Split(strings.TrimSpace(string(tsv)), "\n") {
		f := strings.Split(line, "\t")
		if strings.HasPrefix(line, "#") || len(f) < 6 || seen[f[1]+f[2]] {
			continue
		}
		seen[f[1]+f[2]] = true
		slot, target, format, kTile, rows := f[0], f[1], f[2], f[3], f[5]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := exec.Command(cxx, "-std=c++17", "-fsyntax-only", "-Wall", "-I", filepath.Join(root, "aie_api_shim"),
				"-DXDNA_FMT="+ggml[format], "-DK_TILE="+kTile, "-DPIECE_ROWS="+rows, "-DCORE_ROWS=128",
				filepath.Join(root, target, "gemv.cc")).CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v\n%s", slot, err, out)
			}
		}()
	}
	wg.Wait()
	if len(seen) != 12 {
		t.Errorf("%d target/format pairs in l1.tsv, want 12", len(seen))
	}
}

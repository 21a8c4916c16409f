package sim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShim builds and runs kernels/aie_api_shim/shim_test.cc, the tests of every
// aie_api primitive the shim models, with the host C++ compiler ($CXX or g++).
func TestShim(t *testing.T) {
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		t.Skipf("no C++ compiler (%s): %v", cxx, err)
	}
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

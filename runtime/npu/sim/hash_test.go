package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the kernel-source hashes")

// The go command's build cache keys a cgo package on the files in its directory,
// not on headers included from elsewhere, so an edit under kernels/ alone would leave
// the old kernels compiled in. xdna1.cc and xdna2.cc therefore carry the sha256 of
// every kernel source they include: updating it (this test with -update) changes
// them, which makes the go command recompile. sim.cc includes the shim and carries
// the same line.

// kernelSources are the files xdna1.cc and xdna2.cc compile, relative to the
// repository root.
var kernelSources = []string{
	"kernels/aie_api_shim/aie_api/aie.hpp",
	"kernels/common/entry.inc",
	"kernels/common/gemv.hpp",
	"kernels/xdna1/gemv.cc",
	"kernels/xdna2/gemv.cc",
}

var hashLine = regexp.MustCompile(`(?m)^// kernel sources sha256 [0-9a-f]{64}$`)

func TestKernelSourcesHash(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	h := sha256.New()
	for _, f := range kernelSources {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(f + "\x00"))
		h.Write(b)
	}
	want := "// kernel sources sha256 " + hex.EncodeToString(h.Sum(nil))
	for _, f := range []string{"xdna1.cc", "xdna2.cc", "sim.cc"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got := hashLine.Find(b)
		if string(got) == want {
			continue
		}
		if !*update {
			t.Errorf("%s records %q, the kernel sources hash to %q: the compiled kernels may be stale; run go test ./runtime/npu/sim -run KernelSourcesHash -update", f, got, want)
			continue
		}
		if got == nil {
			t.Fatalf("%s has no kernel sources line", f)
		}
		if err := os.WriteFile(f, hashLine.ReplaceAll(b, []byte(want)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/target"
)

// TestKernelsMLIR: the command writes exactly design.MLIR's text for one
// slot (to a file or standard output) and one file per slot for several;
// kernels list names every slot with its format and K-tile; a bad target,
// slot or output is an error naming it.
func TestKernelsMLIR(t *testing.T) {
	dir := t.TempDir()
	d, err := design.NewBringUp(target.XDNA1)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := d.MLIR(&want, design.MLIROptions{Object: "k.o"}); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "aie.mlir")
	if _, _, err := run(t, "kernels", "mlir", "--target", "xdna1", "--slot", d.Name(), "--object", "k.o", "-o", f); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(f); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("%s differs from design.MLIR's text", f)
	}
	onlyFiles(t, dir, "aie.mlir")
	stdout, _, err := run(t, "kernels", "mlir", "--target", "npu1", "--slot", d.Name(), "--object", "k.o")
	if err != nil || stdout != want.String() {
		t.Errorf("to standard output: %v, equal: %v", err, stdout == want.String())
	}

	out := filepath.Join(dir, "all")
	if _, _, err := run(t, "kernels", "mlir", "--target", "xdna2", "--slot", "all", "-o", out); err != nil {
		t.Fatal(err)
	}
	list, _, err := run(t, "kernels", "list", "--target", "xdna2")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(list), "\n")[1:] {
		f := strings.Split(l, "\t")
		if len(f) != 7 || f[1] != "xdna2" {
			t.Fatalf("list line %q", l)
		}
		names = append(names, f[0]+".mlir")
	}
	if len(names) != 10 || !strings.Contains(list, "xdna2-q8_0-k128-bringup\txdna2\tQ8_0\t128\t64\t1\t1\n") {
		t.Errorf("list:\n%s", list)
	}
	onlyFiles(t, out, names...)
	if b, _ := os.ReadFile(filepath.Join(out, "xdna2-q6_k-k256.mlir")); !bytes.Contains(b, []byte("aie.device(npu2)")) || !bytes.Contains(b, []byte(`link_with = "gemv.o"`)) {
		t.Errorf("xdna2-q6_k-k256.mlir is not an npu2 design linking gemv.o")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "xdna3", "--slot", "all"}, `unknown target "xdna3"`},
		{[]string{"--slot", "all"}, "--target: required"},
		{[]string{"--target", "xdna1"}, "--slot: required"},
		{[]string{"--target", "xdna1", "--slot", "xdna1-q9_0-k128"}, `--slot "xdna1-q9_0-k128": xdna1 has no such slot`},
		{[]string{"--target", "xdna1", "--slot", "xdna2-q4_0-k256"}, "a slot of xdna2, not of --target xdna1"},
		{[]string{"--target", "xdna1", "--slot", "xdna1-q4_0-k256,xdna1-q4_0-k128"}, "need a directory"},
		{[]string{"--target", "xdna1", "--slot", "all", "-o", f}, "this is a file"},
		{[]string{"--target", "xdna1", "--slot", "all", "--object", "", "-o", out}, "--object"},
	} {
		_, _, err := run(t, append([]string{"kernels", "mlir"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("kernels mlir %q: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

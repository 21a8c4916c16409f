package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
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

// TestKernelsDispatch: the files kernels dispatch writes for the bring-up
// slot (and a catalog slot), executed by the emulator's array of the same
// design with the Go model of the kernel, give want.bin bit for bit; a
// K-quant slot, a bad slot and bad shapes are refused naming them.
func TestKernelsDispatch(t *testing.T) {
	for _, c := range []struct {
		target, slot string
		args         []string
	}{
		{"xdna1", "xdna1-q8_0-k128-bringup", nil},
		{"xdna2", "xdna2-q8_0-k128-bringup", []string{"--tokens", "3"}},
		{"xdna1", "xdna1-q4_0-k256", []string{"--rows", "300", "--k", "512", "--tokens", "2"}},
	} {
		dir := filepath.Join(t.TempDir(), "d")
		stdout, _, err := run(t, append([]string{"kernels", "dispatch", "--target", c.target, "--slot", c.slot, "-o", dir}, c.args...)...)
		if err != nil {
			t.Fatalf("%s: %v", c.slot, err)
		}
		onlyFiles(t, dir, "insts.bin", "bo0.bin", "bo1.bin", "want.bin", "dispatch.json")
		read := func(n string) []byte {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		_, ds, err := slotDesigns(c.target, "")
		if err != nil {
			t.Fatal(err)
		}
		var d *design.Design
		for _, x := range ds {
			if x.Name() == c.slot {
				d = x
			}
		}
		k, err := gemv.NewModel(d.Type, d.KTile, d.Rows)
		if err != nil {
			t.Fatal(err)
		}
		arr, err := emu.NewArray(d, k)
		if err != nil {
			t.Fatal(err)
		}
		insts, want := read("insts.bin"), read("want.bin")
		out := make([]byte, len(want))
		if _, err := arr.Execute(insts, [][]byte{read("bo0.bin"), read("bo1.bin"), out}, len(insts)/4); err != nil {
			t.Fatalf("%s: the emulator refuses the dispatch: %v", c.slot, err)
		}
		if !bytes.Equal(out, want) {
			t.Errorf("%s: the array's outputs differ from want.bin", c.slot)
		}
		var meta map[string]any
		if err := json.Unmarshal(read("dispatch.json"), &meta); err != nil || meta["insts_words"] != float64(len(insts)/4) || meta["kernel"] != "MLIR_AIE" {
			t.Errorf("%s: dispatch.json %v (%v)", c.slot, meta, err)
		}
		t.Logf("%s", strings.TrimSpace(stdout))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "xdna1", "--slot", "xdna1-q6_k-k256"}, "Q4_0, Q5_0 and Q8_0 slots, not Q6_K"},
		{[]string{"--target", "xdna1", "--slot", "xdna1-q9_0-k128"}, `--slot "xdna1-q9_0-k128": xdna1 has no such slot`},
		{[]string{"--target", "xdna1", "--slot", "xdna1-q8_0-k128-bringup", "--k", "100"}, "--k 100"},
		{[]string{"--target", "xdna1", "--slot", "xdna1-q8_0-k128-bringup", "--tokens", "17"}, "--tokens 17"},
		{[]string{"--target", "xdna1", "--slot", "xdna1-q8_0-k128-bringup"}, "-o: required"},
	} {
		args := append([]string{"kernels", "dispatch"}, c.args...)
		if !strings.Contains(strings.Join(c.args, " "), "-o") && c.want != "-o: required" {
			args = append(args, "-o", t.TempDir())
		}
		if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("kernels dispatch %q: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

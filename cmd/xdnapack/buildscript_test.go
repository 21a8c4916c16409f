package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/target"
)

// pinnedAiecc returns the aiecc command line kernels/README.md pins (its
// one line starting "aiecc.py") and the README.
func pinnedAiecc(t *testing.T) (string, string) {
	t.Helper()
	readme, err := os.ReadFile("../../kernels/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(readme), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "aiecc.py ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("kernels/README.md has %d aiecc.py lines, want the one it pins: %q", len(lines), lines)
	}
	return lines[0], string(readme)
}

// TestBuildScript: kernels/build.sh parses (bash -n) and, run against
// stand-ins for Peano's clang++, llvm-nm and llvm-objdump and for aiecc.py
// (which record their arguments), invokes `xdnapack kernels mlir` for the
// slot, compiles the kernel for the target's triple with the slot's format
// and K-tile, runs aiecc with exactly the command kernels/README.md
// pins, in the directory holding aie.mlir and gemv.o, and puts the xclbin
// where the catalog looks; a kernel object without the design's kernel
// functions stops it, naming the missing one. The README pins the release
// the printer follows.
func TestBuildScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if runtime.GOOS == "windows" {
		t.Skip("build.sh is a Linux script")
	}
	script := "../../kernels/build.sh"
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n %s: %v\n%s", script, err, out)
	}
	aiecc, readme := pinnedAiecc(t)
	if !strings.Contains(readme, "mlir-aie "+design.MLIRRelease) {
		t.Errorf("kernels/README.md does not pin mlir-aie %s, the release design.MLIR follows", design.MLIRRelease)
	}
	for _, w := range []string{"xdna1-q8_0-k128-bringup", "xdna2-q8_0-k128-bringup", "xdnapack kernels mlir --target"} {
		if !strings.Contains(readme, w) {
			t.Errorf("kernels/README.md does not name %q", w)
		}
	}

	tmp := t.TempDir()
	xdnapack := os.Args[0] // this test binary, as xdnapack (TestMain, XDNAPACK_TEST_MAIN)
	if !filepath.IsAbs(xdnapack) {
		if xdnapack, err = filepath.Abs(xdnapack); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(tmp, "log")
	peano, mlirAIE := filepath.Join(tmp, "peano"), filepath.Join(tmp, "mlir_aie")
	nmDefines := filepath.Join(tmp, "nm-defines")
	stub := func(path, body string) {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte("#!/usr/bin/env bash\nset -eu\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// clang++ records its arguments and writes the -o file.
	stub(filepath.Join(peano, "bin", "clang++"), `echo "clang++ $*" >> "`+log+`"
while [ $# -gt 0 ]; do if [ "$1" = -o ]; then echo obj > "$2"; fi; shift; done
`)
	stub(filepath.Join(peano, "bin", "llvm-nm"), `cat "`+nmDefines+`"
`)
	stub(filepath.Join(peano, "bin", "llvm-objdump"), "true\n")
	// aiecc.py records its directory and arguments, checks its inputs and
	// writes the xclbin.
	stub(filepath.Join(mlirAIE, "bin", "aiecc.py"), `echo "cwd $(basename "$PWD")" >> "`+log+`"
echo "aiecc.py $*" >> "`+log+`"
test -s aie.mlir && test -s gemv.o
echo xclbin > final.xclbin
`)
	run := func(nm string, slots ...string) (string, error) {
		os.WriteFile(nmDefines, []byte(nm), 0o644)
		os.Remove(log)
		cmd := exec.Command(bash, append([]string{script}, slots...)...)
		cmd.Env = append(os.Environ(), "XDNAPACK_TEST_MAIN=1", "MLIR_AIE_DIR="+mlirAIE, "PEANO_INSTALL_DIR="+peano, "XDNAPACK="+xdnapack,
			"BUILD_DIR="+filepath.Join(tmp, "build"), "XCLBIN_DIR="+filepath.Join(tmp, "xclbins"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	all := "00000000 T xdna_gemv_init\n00000010 T xdna_gemv_acc\n00000020 T xdna_gemv_out\n"
	out, err := run(all, "xdna1-q8_0-k128-bringup")
	if err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	// The pinned line, with the variable build.sh expands.
	want := strings.ReplaceAll(aiecc, `"$PEANO_INSTALL_DIR"`, peano)
	if len(lines) != 3 || lines[1] != "cwd xdna1-q8_0-k128-bringup" || lines[2] != want {
		t.Errorf("build.sh ran\n  %s\nwant clang++, then in the slot's directory\n  %s", strings.Join(lines, "\n  "), want)
	}
	clang := lines[0]
	for _, w := range []string{"--target=aie2-none-unknown-elf", "-DXDNA_FMT=8", "-DK_TILE=128", "kernels/xdna1/gemv.cc"} {
		if !strings.Contains(clang, w) {
			t.Errorf("clang++ %q lacks %s", clang, w)
		}
	}
	mlir, _ := os.ReadFile(filepath.Join(tmp, "build", "xdna1-q8_0-k128-bringup", "aie.mlir"))
	d, _ := design.NewBringUp(target.XDNA1)
	var wantMLIR bytes.Buffer
	d.MLIR(&wantMLIR, design.MLIROptions{Object: "gemv.o"})
	if !bytes.Equal(mlir, wantMLIR.Bytes()) {
		t.Errorf("aie.mlir is not the bring-up design's MLIR linking gemv.o")
	}
	if b, err := os.ReadFile(filepath.Join(tmp, "xclbins", "xdna1", "gemv_q8_0_k128_bringup.xclbin")); err != nil || string(b) != "xclbin\n" {
		t.Errorf("xclbin not copied to <target>/gemv_<slot>.xclbin: %v", err)
	}

	// An XDNA2 catalog slot: its triple and rows, the catalog's xclbin name.
	if out, err := run(all, "xdna2-q4_k-k256"); err != nil {
		t.Fatalf("build.sh xdna2-q4_k-k256: %v\n%s", err, out)
	}
	got, _ = os.ReadFile(log)
	if !regexp.MustCompile(`--target=aie2p-none-unknown-elf .*-DXDNA_FMT=12 -DK_TILE=256 .*kernels/xdna2/gemv.cc`).Match(got) {
		t.Errorf("xdna2-q4_k-k256 compiled as\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(tmp, "xclbins", "xdna2", "gemv_q4_k_k256.xclbin")); err != nil {
		t.Error(err)
	}

	// The kernel object lacks a function the design calls.
	out, err = run("00000000 T xdna_gemv_init\n00000010 T xdna_gemv_acc\n", "xdna1-q8_0-k128-bringup")
	if err == nil || !strings.Contains(out, "does not define xdna_gemv_out") {
		t.Errorf("an object without xdna_gemv_out: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(log); strings.Contains(string(got), "aiecc.py") {
		t.Errorf("aiecc ran after the object check failed")
	}
	// A slot no target has.
	out, err = run(all, "xdna1-q9_0-k128")
	if err == nil || !strings.Contains(out, "no slot named xdna1-q9_0-k128") {
		t.Errorf("an unknown slot: %v\n%s", err, out)
	}
}

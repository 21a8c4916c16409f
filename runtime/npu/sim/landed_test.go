package sim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// landedCommit holds the kernels before their rebuild on the gemv contract:
// the defects issue 19 lists, which TestLandedKernelDefects reproduces.
const landedCommit = "ebb5cac"

// landedTree writes the landed kernel sources and aie_api shim into a
// temporary directory (from git), with the source edits edit asks for:
// file -> [old, new] replacements, each of which must apply.
func landedTree(t *testing.T, edit map[string][][2]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("no git to read the landed sources: %v", err)
	}
	dir := t.TempDir()
	root := filepath.Join("..", "..", "..")
	for _, f := range []string{"kernels/common/gemv.hpp", "kernels/common/entry.inc", "kernels/xdna1/gemv.cc", "kernels/aie_api_shim/aie_api/aie.hpp"} {
		out, err := exec.Command("git", "-C", root, "show", landedCommit+":"+f).Output()
		if err != nil {
			t.Skipf("git show %s:%s: %v (a checkout without the landed commit)", landedCommit, f, err)
		}
		s := string(out)
		for _, r := range edit[f] {
			if !strings.Contains(s, r[0]) {
				t.Fatalf("%s at %s has no %q", f, landedCommit, r[0])
			}
			s = strings.ReplaceAll(s, r[0], r[1])
		}
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Edits of the landed sources that isolate one defect from the others.
var (
	// glue: the landed simulation driver used the landed shim's std::string
	// error; the strict shim's is a char array.
	glue = [][2]string{{"aie_shim::error().empty()", "!aie_shim::error()[0]"}, {"aie_shim::error().c_str()", "aie_shim::error()"}}
	// fixCompile: <cstring> and a cast_to in place of the undocumented conversion.
	fixCompile = [][2]string{{"#include <cstdint>", "#include <cstdint>\n#include <cstring>"},
		{"accum<accfloat, V>(pw).template to_vector<float>();", "pw.template cast_to<float>();"}}
	// zeroed: the accumulators zeroed with aie::zeros.
	zeroed = [][2]string{{"accum<acc32, V> acc[4] = {};", "accum<acc32, V> acc[4] = {zeros<acc32, V>(), zeros<acc32, V>(), zeros<acc32, V>(), zeros<acc32, V>()};"},
		{"accum<acc32, V> hacc[4] = {};", "accum<acc32, V> hacc[4] = {zeros<acc32, V>(), zeros<acc32, V>(), zeros<acc32, V>(), zeros<acc32, V>()};"}}
)

// build compiles srcs (relative to dir, or absolute) with the shim in shimDir
// and the extra flags into a program, and returns its path.
func build(t *testing.T, cxx, dir, shimDir string, flags []string, srcs ...string) string {
	t.Helper()
	bin := filepath.Join(dir, "prog")
	args := append([]string{"-std=c++20", "-O1", "-I", shimDir}, flags...)
	for _, s := range srcs {
		if !filepath.IsAbs(s) {
			s = filepath.Join(dir, s)
		}
		args = append(args, s)
	}
	if out, err := exec.Command(cxx, append(args, "-o", bin)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cxx, err, out)
	}
	return bin
}

func driver(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", "landed", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var newShim, _ = filepath.Abs(filepath.Join(kernelsDir, "aie_api_shim"))

// TestLandedKernelDefects reproduces, on the kernels of commit ebb5cac,
// each kernel defect issue 19 lists, for its reason; the tests of the
// rebuilt kernels (kernel_test.go, shim_test.go) are the passing side.
func TestLandedKernelDefects(t *testing.T) {
	cxx := hostCXX(t)
	t.Run("undocumented conversion and memcpy without cstring", func(t *testing.T) {
		dir := landedTree(t, map[string][][2]string{"kernels/common/entry.inc": glue})
		out, err := exec.Command(cxx, "-std=c++20", "-fsyntax-only", "-DXDNA_SIM=1", "-I", newShim, filepath.Join(dir, "kernels/xdna1/gemv.cc")).CombinedOutput()
		if err == nil {
			t.Fatal("the landed kernels compile against the strict shim")
		}
		for _, want := range []string{"gemv.hpp:67:8: error: ‘memcpy’ is not a member of ‘std’", "gemv.hpp:87", "undocumented"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the strict shim refuses the landed kernels, but not with %q:\n%s", want, out)
			}
		}
	})
	t.Run("default-constructed accumulators", func(t *testing.T) {
		// The landed kernels with the two compile errors fixed, on the
		// same data: zeroing default constructors (the landed shim) and
		// poisoned ones (the strict shim, as the hardware's undefined
		// registers) must give different outputs for every format.
		dir := landedTree(t, map[string][][2]string{"kernels/common/entry.inc": glue, "kernels/common/gemv.hpp": fixCompile})
		oldShim := filepath.Join(dir, "kernels/aie_api_shim")
		run := func(shim string) []string {
			bin := build(t, cxx, dir, shim, []string{"-DXDNA_SIM=1"}, "kernels/xdna1/gemv.cc", driver(t, "poison_driver.cc"))
			out, err := exec.Command(bin).CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			return strings.Split(strings.TrimSpace(string(out)), "\n")
		}
		zero, poison := run(oldShim), run(newShim)
		if len(zero) != 6 || len(poison) != 6 {
			t.Fatalf("%d and %d formats run, want 6:\n%s\n%s", len(zero), len(poison), zero, poison)
		}
		for i := range zero {
			if !strings.Contains(zero[i], " rc 0 nan 0 y ") {
				t.Errorf("with zeroing constructors: %s", zero[i])
			}
			if zero[i] == poison[i] {
				t.Errorf("poisoned accumulators give the same outputs: %s", zero[i])
			}
		}
		// The strict shim also refuses the landed f16v's shift of the f16
		// sign into bit 31 (an upshift that overflows int32).
		if !strings.HasSuffix(poison[0], "upshift: a lane overflows its type (wrap or saturation is undocumented), shift 16") {
			t.Errorf("the landed f16v's sign shift passes the strict shim: %s", poison[0])
		}
		t.Logf("zeroed: %.80s...\npoison: %.80s...", zero[0], poison[0])
	})
	t.Run("piece stride across formats", func(t *testing.T) {
		// gemv_tile as build.sh compiled xdna1 Q5_K (96-row pieces, 128 rows
		// a core), piece 1 of 2 tokens, with the landed shim.
		dir := landedTree(t, nil)
		bin := build(t, cxx, dir, filepath.Join(dir, "kernels/aie_api_shim"),
			[]string{"-DXDNA_FMT=13", "-DK_TILE=256", "-DPIECE_ROWS=96", "-DCORE_ROWS=128"}, "kernels/xdna1/gemv.cc", driver(t, "stride_driver.cc"))
		out, err := exec.Command(bin).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "64 in rows 0..95") || !strings.Contains(string(out), "64 past y") {
			t.Fatalf("piece 1 stays in its rows (%v): %s", err, out)
		}
		t.Logf("%s", strings.TrimSpace(string(out)))
	})
	t.Run("rounding mode set only in the simulation", func(t *testing.T) {
		// The landed device entry (compile errors fixed, accumulators
		// zeroed) on a Q4_K row whose sumi is not a float32: the core
		// converts it in its power-up floor mode, the model rounds to even.
		dir := landedTree(t, map[string][][2]string{"kernels/common/gemv.hpp": append(append([][2]string{}, fixCompile...), zeroed...)})
		bin := build(t, cxx, dir, newShim, []string{"-DXDNA_FMT=12", "-DK_TILE=256", "-DPIECE_ROWS=32", "-DCORE_ROWS=32"},
			"kernels/xdna1/gemv.cc", driver(t, "modes_driver.cc"))
		out, err := exec.Command(bin).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "y[0] = 124354568.0") {
			t.Fatalf("the landed device entry rounds as the model (%v): %s", err, out)
		}
		t.Logf("%s", strings.TrimSpace(string(out)))
	})
	t.Run("run-time switch over formats", func(t *testing.T) {
		dir := landedTree(t, nil)
		obj := filepath.Join(dir, "q4_0.o")
		if out, err := exec.Command(cxx, "-std=c++20", "-O0", "-c", "-I", filepath.Join(dir, "kernels/aie_api_shim"),
			"-DXDNA_FMT=2", "-DK_TILE=256", "-DPIECE_ROWS=128", "-DCORE_ROWS=128", filepath.Join(dir, "kernels/xdna1/gemv.cc"), "-o", obj).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		out, err := exec.Command("go", "tool", "nm", obj).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, k := range []string{"gemv_q40_tile", "gemv_q80_tile", "gemv_qk_tile", "gemv_q6k_tile"} {
			if !strings.Contains(string(out), k) {
				t.Errorf("the landed Q4_0 device object has no %s", k)
			}
		}
	})
}

package sim

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/planar"
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

var kernelsDir = filepath.Join("..", "..", "..", "kernels")

// cxxFlags are the flags of every host compile of kernel code: aie_api needs
// C++20 (aie.hpp refuses less).
var cxxFlags = []string{"-std=c++20", "-Wall", "-I", filepath.Join(kernelsDir, "aie_api_shim")}

// TestShim builds and runs kernels/aie_api_shim/shim_test.cc, the tests of every
// aie_api primitive the shim models, with the host C++ compiler ($CXX or g++).
func TestShim(t *testing.T) {
	cxx := hostCXX(t)
	bin := filepath.Join(t.TempDir(), "shim_test")
	args := append(append([]string{}, cxxFlags...), "-O1", filepath.Join(kernelsDir, "aie_api_shim", "shim_test.cc"), "-o", bin)
	out, err := exec.Command(cxx, args...).CombinedOutput()
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

// compiles compiles src (a translation unit including <aie_api/aie.hpp>)
// with -fsyntax-only and returns the compiler's output and error.
func compiles(t *testing.T, cxx, src string) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "x.cc")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cxx, append(append([]string{}, cxxFlags...), "-fsyntax-only", f)...).CombinedOutput()
	return string(out), err
}

// TestShimRefuses: what the real aie_api does not offer does not compile
// against the shim either: an integer vector into an accfloat accumulator
// (the landed gemv.hpp:87 bit cast), and memcpy with only aie.hpp included
// (the landed gemv.hpp:67 without <cstring>). The first case compiles the
// same code made valid, so a refusal is the shim's and not a broken command.
func TestShimRefuses(t *testing.T) {
	cxx := hostCXX(t)
	const head = "#include <aie_api/aie.hpp>\nusing namespace aie;\n"
	for _, c := range []struct{ name, ok, bad, want string }{
		{"accfloat from int32",
			"vector<float, 16> f(vector<int32_t, 16> v) { return v.cast_to<float>(); }\n",
			"vector<float, 16> f(vector<int32_t, 16> v) { return accum<accfloat, 16>(v).to_vector<float>(); }\n",
			"undocumented"},
		{"integer accumulator from float",
			"vector<int32_t, 16> f(vector<float, 16> v) { return v.cast_to<int32_t>(); }\n",
			"vector<int32_t, 16> f(vector<float, 16> v) { return accum<acc32, 16>(v).to_vector<int32_t>(0); }\n",
			"undocumented"},
		{"memcpy without <cstring>",
			"#include <cstring>\nfloat f(unsigned u) { float x; std::memcpy(&x, &u, 4); return x; }\n",
			"float f(unsigned u) { float x; std::memcpy(&x, &u, 4); return x; }\n",
			"memcpy"},
		{"strlen without <cstring>",
			"#include <cstring>\nunsigned long f(const char* s) { return std::strlen(s); }\n",
			"unsigned long f(const char* s) { return std::strlen(s); }\n",
			"strlen"},
		{"printf without <cstdio>",
			"#include <cstdio>\nvoid f() { std::printf(\"x\"); }\n",
			"void f() { std::printf(\"x\"); }\n",
			"printf"},
	} {
		if out, err := compiles(t, cxx, head+c.ok); err != nil {
			t.Errorf("%s: the valid form does not compile: %v\n%s", c.name, err, out)
			continue
		}
		out, err := compiles(t, cxx, head+c.bad)
		if err == nil {
			t.Errorf("%s: compiles against the shim", c.name)
		} else if !strings.Contains(out, c.want) {
			t.Errorf("%s: refused, but not for %q:\n%s", c.name, c.want, out)
		}
	}
}

// fmtParam matches the format parameter of an instantiation of an xdna
// kernel template: _ZN4xdna<len><name>ILi<F>EL... (name a kernel function).
var fmtParam = regexp.MustCompile(`^_ZN4xdna\d+(?:part_q0|part_qk|part_q6k|tile_part|gemv_acc|gemv_out)ILi(\d+)E`)

// ggmlID is the ggml type id of each NPU format (what build.sh passes as
// XDNA_FMT).
var ggmlID = map[planar.Type]int{planar.Q4_0: 2, planar.Q5_0: 6, planar.Q8_0: 8, planar.Q4_K: 12, planar.Q5_K: 13, planar.Q6_K: 14}

// TestDeviceEntries compiles the device object of every catalog slot as
// kernels/build.sh does (kernels/<target>/gemv.cc with -DXDNA_FMT and
// -DK_TILE, no XDNA_SIM) against the shim with the host compiler, and checks
// that it defines the three entry points of the gemv contract and holds the
// kernel templates of its own format only (at -O0, so that nothing is
// inlined away): one slot per object file, no run-time switch over formats (the AIE compile itself needs Peano,
// kernels/README.md). A build without XDNA_FMT must refuse.
func TestDeviceEntries(t *testing.T) {
	cxx := hostCXX(t)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, s := range kernelsel.Default().Slots {
		id, ok := ggmlID[s.Type]
		if !ok {
			t.Errorf("%s: format %s has no kernel", s.Name, s.Type)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			obj := filepath.Join(t.TempDir(), s.Name+".o")
			args := append(append([]string{}, cxxFlags...), "-O0", "-c", fmt.Sprintf("-DXDNA_FMT=%d", id), fmt.Sprintf("-DK_TILE=%d", s.KTile),
				filepath.Join(kernelsDir, s.Target, "gemv.cc"), "-o", obj)
			if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
				t.Errorf("%s: %v\n%s", s.Name, err, out)
				return
			}
			out, err := exec.Command("go", "tool", "nm", obj).CombinedOutput()
			if err != nil {
				t.Errorf("%s: go tool nm: %v\n%s", s.Name, err, out)
				return
			}
			// The entry points, and every instantiation of a kernel template
			// (xdna::part_q0<F, V, T>, gemv_acc<F, V, T>, ...) of this slot's
			// format alone: the other formats' code is not in the object.
			entries, own := map[string]bool{}, 0
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				if len(f) < 3 || f[len(f)-2] != "T" {
					continue
				}
				sym := f[len(f)-1]
				if strings.HasPrefix(sym, "xdna_") {
					entries[sym] = true
				}
				if m := fmtParam.FindStringSubmatch(sym); m != nil {
					if m[1] != fmt.Sprint(id) {
						t.Errorf("%s: the object holds %s, a kernel of format %s", s.Name, sym, m[1])
					}
					own++
				}
			}
			if own == 0 {
				t.Errorf("%s: no kernel template instantiation found (has fmtParam rotted?)", s.Name)
			}
			if len(entries) != 3 || !entries["xdna_gemv_init"] || !entries["xdna_gemv_acc"] || !entries["xdna_gemv_out"] {
				t.Errorf("%s: the object defines the C functions %v, want the three entry points", s.Name, entries)
			}
		}()
	}
	wg.Wait()
	out, err := exec.Command(cxx, append(append([]string{}, cxxFlags...), "-fsyntax-only", filepath.Join(kernelsDir, "xdna1", "gemv.cc"))...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "one kernel slot per object file") {
		t.Errorf("a device build without XDNA_FMT: %v\n%s", err, out)
	}
}

package x86sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unsafe"
)

// The instructions' semantics, each against a reference written here from
// the SDM's pseudo-code (Intel SDM Vol. 2, the instruction's page, and
// Vol. 1 on AVX-512 opmasks, Vol. 2A on EVEX broadcast). The code under test is assembled
// by GNU as and disassembled by objdump, so the parser meets the exact text
// objdump prints for each EVEX form.

// asmFunc assembles body (Intel syntax) as a function and parses objdump's
// disassembly of it.
func asmFunc(t *testing.T, body string) *Func {
	t.Helper()
	as, err1 := exec.LookPath("as")
	od, err2 := exec.LookPath("objdump")
	if err1 != nil || err2 != nil {
		t.Skip("GNU as and objdump (binutils) are needed to assemble the test code")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "f.s")
	obj := filepath.Join(dir, "f.o")
	text := ".intel_syntax noprefix\n.text\nf:\n" + body + "\n"
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "--64", "-o", obj, src).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s\n%s", err, out, text)
	}
	out, err := exec.Command(od, "-d", "-M", "intel", "--no-show-raw-insn", "-w", obj).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	f, err := parseFunc("f", string(out))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// frame is the memory the test functions work on: inputs A, B, C (the
// destination's old value), a k mask, and the output.
type frame struct {
	A, B, C [64]byte
	K       uint64
	_       [56]byte
	Out     [64]byte
	Mem     [128]byte // memory operands, stores
}

// run1 runs insn with zmm1 = A, zmm2 = B, zmm0 = C, k1 = K and returns
// zmm0 (or what insn's store wrote, with the prologue/epilogue given).
const prologue = `
  mov rax, QWORD PTR [rsp+8]
  vmovdqu64 zmm1, ZMMWORD PTR [rax]
  vmovdqu64 zmm2, ZMMWORD PTR [rax+64]
  vmovdqu64 zmm0, ZMMWORD PTR [rax+128]
  kmovq k1, QWORD PTR [rax+192]
`
const epilogue = `
  vmovdqu64 ZMMWORD PTR [rax+256], zmm0
  ret
`

func runFrame(t *testing.T, f *Func, fr *frame) {
	t.Helper()
	if err := f.Call(Ptr(unsafe.Pointer(fr))); err != nil {
		t.Fatal(err)
	}
}

func randFrame(rng *rand.Rand) *frame {
	fr := new(frame)
	for _, b := range [][]byte{fr.A[:], fr.B[:], fr.C[:], fr.Mem[:]} {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	}
	fr.K = rng.Uint64()
	return fr
}

func le32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }

// masked applies an EVEX writemask to a full result by esz-byte elements
// over vl bytes, zeroing above vl (SDM Vol. 1, AVX-512 opmask merging and zeroing).
func masked(res, old []byte, k uint64, esz, vl int, zero bool) [64]byte {
	var out [64]byte
	for i := 0; i < vl/esz; i++ {
		switch {
		case k>>i&1 == 1:
			copy(out[i*esz:], res[i*esz:(i+1)*esz])
		case !zero:
			copy(out[i*esz:], old[i*esz:(i+1)*esz])
		}
	}
	return out
}

func checkOut(t *testing.T, what string, got, want [64]byte) {
	t.Helper()
	if got != want {
		t.Fatalf("%s:\n got %x\nwant %x", what, got, want)
	}
}

// TestVNNI: VPDPBUSD, VPDPBUSDS, VPDPWSSD, VPDPWSSDS (SDM Vol. 2C), zmm
// and ymm, merging and zeroing masks, and a {1to16} broadcast source.
func TestVNNI(t *testing.T) {
	ref := map[string]func(acc int32, a, b []byte) int32{
		"vpdpbusd": func(acc int32, a, b []byte) int32 {
			s := acc
			for j := 0; j < 4; j++ {
				s += int32(a[j]) * int32(int8(b[j])) // wraps
			}
			return s
		},
		"vpdpbusds": func(acc int32, a, b []byte) int32 {
			s := int64(acc)
			for j := 0; j < 4; j++ {
				s += int64(a[j]) * int64(int8(b[j]))
			}
			return int32(max(min(s, math.MaxInt32), math.MinInt32))
		},
		"vpdpwssd": func(acc int32, a, b []byte) int32 {
			s := acc
			for j := 0; j < 2; j++ {
				s += int32(int16(binary.LittleEndian.Uint16(a[2*j:]))) * int32(int16(binary.LittleEndian.Uint16(b[2*j:])))
			}
			return s
		},
		"vpdpwssds": func(acc int32, a, b []byte) int32 {
			s := int64(acc)
			for j := 0; j < 2; j++ {
				s += int64(int16(binary.LittleEndian.Uint16(a[2*j:]))) * int64(int16(binary.LittleEndian.Uint16(b[2*j:])))
			}
			return int32(max(min(s, math.MaxInt32), math.MinInt32))
		},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for op, f := range ref {
		for _, form := range []struct {
			insn string
			vl   int
			mask bool
			zero bool
			bcst bool
		}{
			{op + " zmm0, zmm1, zmm2", 64, false, false, false},
			{op + " zmm0{k1}, zmm1, zmm2", 64, true, false, false},
			{op + " zmm0{k1}{z}, zmm1, zmm2", 64, true, true, false},
			{op + " ymm0{k1}, ymm1, ymm2", 32, true, false, false},
			{"{vex} " + op + " ymm0, ymm1, ymm2", 32, false, false, false}, // AVX-VNNI
			{op + " zmm0{k1}, zmm1, DWORD PTR [rax+320]{1to16}", 64, true, false, true},
		} {
			fn := asmFunc(t, prologue+form.insn+epilogue)
			for it := 0; it < 50; it++ {
				fr := randFrame(rng)
				if it%5 == 0 { // saturation: extreme accumulators and bytes
					for i := 0; i < 16; i++ {
						binary.LittleEndian.PutUint32(fr.C[4*i:], []uint32{0x7fffff00, 0x80000010, 0x7fffffff, 0x80000000}[i%4])
					}
					for i := range fr.A {
						fr.A[i], fr.B[i] = 0xff, []byte{0x7f, 0x80}[i%2]
					}
				}
				c := fr.C
				runFrame(t, fn, fr)
				var res [64]byte
				for i := 0; i < form.vl/4; i++ {
					b := fr.B[4*i : 4*i+4]
					if form.bcst {
						b = fr.Mem[:4]
					}
					binary.LittleEndian.PutUint32(res[4*i:], uint32(f(int32(le32(c[:], i)), fr.A[4*i:4*i+4], b)))
				}
				k := ^uint64(0)
				if form.mask {
					k = fr.K
				}
				checkOut(t, form.insn, fr.Out, masked(res[:], c[:], k, 4, form.vl, form.zero))
			}
		}
	}
}

// TestMaskingAndBroadcast: merging and zeroing masks by element size, a
// VEX-encoded and an EVEX ymm write zeroing bits 511:256, {1toN}
// broadcasts of dwords and qwords (SDM Vol. 1 AVX-512 opmasks, Vol. 2A EVEX embedded broadcast).
func TestMaskingAndBroadcast(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	add := func(esz int) func(a, b []byte) []byte {
		return func(a, b []byte) []byte {
			r := make([]byte, len(a))
			for i := 0; i < len(a); i += esz {
				var x uint64
				for j := esz - 1; j >= 0; j-- {
					x = x<<8 | uint64(a[i+j])
				}
				var y uint64
				for j := esz - 1; j >= 0; j-- {
					y = y<<8 | uint64(b[i+j])
				}
				s := x + y
				for j := 0; j < esz; j++ {
					r[i+j] = byte(s >> (8 * j))
				}
			}
			return r
		}
	}
	for _, c := range []struct {
		insn       string
		esz, vl    int
		mask, zero bool
		bcst       int // broadcast element size, 0 none
	}{
		{"vpaddb zmm0{k1}, zmm1, zmm2", 1, 64, true, false, 0},
		{"vpaddw zmm0{k1}{z}, zmm1, zmm2", 2, 64, true, true, 0},
		{"vpaddd zmm0{k1}, zmm1, zmm2", 4, 64, true, false, 0},
		{"vpaddq zmm0{k1}{z}, zmm1, zmm2", 8, 64, true, true, 0},
		{"vpaddd ymm0{k1}, ymm1, ymm2", 4, 32, true, false, 0},
		{"vpaddd ymm0, ymm1, ymm2", 4, 32, false, false, 0}, // VEX
		{"vpaddd xmm0{k1}{z}, xmm1, xmm2", 4, 16, true, true, 0},
		{"vpaddd zmm0{k1}, zmm1, DWORD PTR [rax+320]{1to16}", 4, 64, true, false, 4},
		{"vpaddq zmm0, zmm1, QWORD PTR [rax+320]{1to8}", 8, 64, false, false, 8},
		{"vpaddd ymm0{k1}{z}, ymm1, DWORD PTR [rax+320]{1to8}", 4, 32, true, true, 4},
	} {
		fn := asmFunc(t, prologue+c.insn+epilogue)
		for it := 0; it < 20; it++ {
			fr := randFrame(rng)
			old := fr.C
			runFrame(t, fn, fr)
			b := fr.B[:c.vl]
			if c.bcst > 0 {
				b = make([]byte, c.vl)
				for i := range b {
					b[i] = fr.Mem[i%c.bcst]
				}
			}
			k := ^uint64(0)
			if c.mask {
				k = fr.K
			}
			checkOut(t, c.insn, fr.Out, masked(add(c.esz)(fr.A[:c.vl], b), old[:], k, c.esz, c.vl, c.zero))
		}
	}
}

// TestMaskedStoreAndLoad: a masked store writes only the selected
// elements; a masked zeroing load; VMOVDQA64 faults on a misaligned
// address like the CPU (#GP).
func TestMaskedStoreAndLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fn := asmFunc(t, prologue+"vmovdqu16 ZMMWORD PTR [rax+320]{k1}, zmm1\nvmovdqu8 zmm0{k1}{z}, ZMMWORD PTR [rax+64]"+epilogue)
	fr := randFrame(rng)
	mem := fr.Mem
	runFrame(t, fn, fr)
	var want [64]byte
	copy(want[:], mem[:64])
	for i := 0; i < 32; i++ {
		if fr.K>>i&1 == 1 {
			copy(want[2*i:], fr.A[2*i:2*i+2])
		}
	}
	if [64]byte(fr.Mem[:64]) != want {
		t.Fatalf("masked store:\n got %x\nwant %x", fr.Mem[:64], want)
	}
	checkOut(t, "vmovdqu8 zeroing load", fr.Out, masked(fr.B[:], nil, fr.K, 1, 64, true))

	bad := asmFunc(t, prologue+"vmovdqa64 zmm0, ZMMWORD PTR [rax+8]"+epilogue)
	err := bad.Call(Ptr(unsafe.Pointer(fr)))
	if err == nil || !strings.Contains(err.Error(), "aligned") || !strings.Contains(err.Error(), "vmovdqa64 zmm0,ZMMWORD PTR [rax+0x8]") {
		t.Fatalf("misaligned vmovdqa64: err = %v, want a fault naming the instruction", err)
	}
}

// TestRefusesUnmodeled: an instruction or operand form not modeled is an
// error naming the address and objdump's text; nothing is skipped; an
// endless loop stops at the step limit.
func TestRefusesUnmodeled(t *testing.T) {
	fr := new(frame)
	for _, c := range []struct{ body, want string }{
		{"cpuid\nret", `0x0 "cpuid"`},
		{prologue + "vaddps zmm0, zmm1, zmm2, {rn-sae}" + epilogue, "{rn-sae}"},
		{prologue + "vpgatherdd zmm0{k1}, DWORD PTR [rax+zmm1*4]" + epilogue, "vpgatherdd"},
	} {
		err := asmFunc(t, c.body).Call(Ptr(unsafe.Pointer(fr)))
		if err == nil || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want ErrUnsupported naming %q", c.body, err, c.want)
		}
	}
	loop := asmFunc(t, "l: jmp l\nret")
	loop.StepLimit = 1000
	if err := loop.Call(); err == nil || !strings.Contains(err.Error(), "step limit") {
		t.Errorf("endless loop: err = %v", err)
	}
}

// TestPermutes: VPERMB, VPERMD, VPERMT2B, VPERMT2D, VPERMI2D, VPERMI2B
// (SDM Vol. 2C): indices modulo the table, the second table selected by
// the next index bit; VPERMT2 merges masked-off elements from the first
// table (the destination), VPERMI2 from the indices (the destination).
func TestPermutes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	get := func(b []byte, esz, i int) uint64 {
		var x uint64
		for j := esz - 1; j >= 0; j-- {
			x = x<<8 | uint64(b[esz*i+j])
		}
		return x
	}
	put := func(b []byte, esz, i int, x uint64) {
		for j := 0; j < esz; j++ {
			b[esz*i+j] = byte(x >> (8 * j))
		}
	}
	for _, c := range []struct {
		insn string
		esz  int
		kind string
	}{
		{"vpermb zmm0{k1}, zmm1, zmm2", 1, "perm"},
		{"vpermd zmm0{k1}{z}, zmm1, zmm2", 4, "perm"},
		{"vpermt2b zmm0{k1}, zmm1, zmm2", 1, "t2"},
		{"vpermt2d zmm0{k1}, zmm1, zmm2", 4, "t2"},
		{"vpermt2w zmm0, zmm1, zmm2", 2, "t2"},
		{"vpermi2d zmm0{k1}, zmm1, zmm2", 4, "i2"},
		{"vpermi2b zmm0{k1}, zmm1, zmm2", 1, "i2"},
	} {
		fn := asmFunc(t, prologue+c.insn+epilogue)
		for it := 0; it < 20; it++ {
			fr := randFrame(rng)
			old := fr.C
			runFrame(t, fn, fr)
			n := 64 / c.esz
			res := make([]byte, 64)
			for i := 0; i < n; i++ {
				switch c.kind {
				case "perm": // dest[i] = src2[src1[i] mod n]
					put(res, c.esz, i, get(fr.B[:], c.esz, int(get(fr.A[:], c.esz, i))%n))
				case "t2": // idx = src1, tables dest (old) and src2
					j := int(get(fr.A[:], c.esz, i)) % (2 * n)
					if j < n {
						put(res, c.esz, i, get(old[:], c.esz, j))
					} else {
						put(res, c.esz, i, get(fr.B[:], c.esz, j-n))
					}
				case "i2": // idx = dest (old), tables src1 and src2
					j := int(get(old[:], c.esz, i)) % (2 * n)
					if j < n {
						put(res, c.esz, i, get(fr.A[:], c.esz, j))
					} else {
						put(res, c.esz, i, get(fr.B[:], c.esz, j-n))
					}
				}
			}
			k := ^uint64(0)
			if strings.Contains(c.insn, "{k1}") {
				k = fr.K
			}
			checkOut(t, c.insn, fr.Out, masked(res, old[:], k, c.esz, 64, strings.Contains(c.insn, "{z}")))
		}
	}
}

// TestNarrow: VPMOVDB, VPMOVSDB, VPMOVUSDB, VPMOVWB, VPMOVQD, VPMOVUSWB
// into a register (zeroed above) and into memory under a mask (only the
// selected elements written), SDM Vol. 2C VPMOVDB etc.
func TestNarrow(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		op       string
		from, to int
		sat      byte // t truncate, s signed, u unsigned
	}{
		{"vpmovdb", 4, 1, 't'}, {"vpmovsdb", 4, 1, 's'}, {"vpmovusdb", 4, 1, 'u'},
		{"vpmovwb", 2, 1, 't'}, {"vpmovswb", 2, 1, 's'}, {"vpmovuswb", 2, 1, 'u'},
		{"vpmovqd", 8, 4, 't'}, {"vpmovsqd", 8, 4, 's'}, {"vpmovdw", 4, 2, 't'},
	} {
		n := 64 / c.from
		width := n * c.to
		reg := map[int]string{16: "xmm0", 32: "ymm0"}[width]
		sizeName := map[int]string{16: "XMMWORD", 32: "YMMWORD"}[width]
		fnReg := asmFunc(t, prologue+c.op+" "+reg+"{k1}, zmm1"+epilogue)
		fnMem := asmFunc(t, prologue+c.op+" "+sizeName+" PTR [rax+320]{k1}, zmm1"+epilogue)
		for it := 0; it < 20; it++ {
			fr := randFrame(rng)
			if it%2 == 0 { // small values, so that some are in range
				for i := range fr.A {
					if i%c.from != 0 {
						fr.A[i] = []byte{0, 0xff}[rng.IntN(2)]
					}
				}
			}
			res := make([]byte, 64)
			for i := 0; i < n; i++ {
				var x uint64
				for j := c.from - 1; j >= 0; j-- {
					x = x<<8 | uint64(fr.A[c.from*i+j])
				}
				w := uint(8 * c.to)
				switch c.sat {
				case 's':
					sh := uint(64 - 8*c.from)
					v := int64(x<<sh) >> sh
					lo, hi := -int64(1)<<(w-1), int64(1)<<(w-1)-1
					if v < lo {
						v = lo
					}
					if v > hi {
						v = hi
					}
					x = uint64(v)
				case 'u':
					if hi := uint64(1)<<w - 1; x > hi {
						x = hi
					}
				}
				for j := 0; j < c.to; j++ {
					res[c.to*i+j] = byte(x >> (8 * j))
				}
			}
			old, mem := fr.C, fr.Mem
			fr2 := *fr
			runFrame(t, fnReg, fr)
			checkOut(t, c.op+" reg", fr.Out, masked(res, old[:], fr.K, c.to, width, false))
			runFrame(t, fnMem, &fr2)
			want := masked(res, mem[:64], fr2.K, c.to, width, false)
			copy(want[width:], mem[width:64])
			if [64]byte(fr2.Mem[:64]) != want {
				t.Fatalf("%s mem:\n got %x\nwant %x", c.op, fr2.Mem[:64], want)
			}
		}
	}
}

// TestTernlog: VPTERNLOGD's immediate as a truth table indexed by
// dest<<2 | src1<<1 | src2 (SDM Vol. 2C VPTERNLOGD), checked with
// functions whose tables are known: 0x96 xor3, 0xe8 majority, 0xca
// dest ? src1 : src2, 0x00, 0xff.
func TestTernlog(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for imm, f := range map[string]func(a, b, c byte) byte{
		"0x96": func(a, b, c byte) byte { return a ^ b ^ c },
		"0xe8": func(a, b, c byte) byte { return a&b | a&c | b&c },
		"0xca": func(a, b, c byte) byte { return a&b | ^a&c },
		"0x0":  func(a, b, c byte) byte { return 0 },
		"0xff": func(a, b, c byte) byte { return 0xff },
	} {
		fn := asmFunc(t, prologue+"vpternlogd zmm0{k1}, zmm1, zmm2, "+imm+epilogue)
		fr := randFrame(rng)
		old := fr.C
		runFrame(t, fn, fr)
		res := make([]byte, 64)
		for i := range res {
			res[i] = f(old[i], fr.A[i], fr.B[i])
		}
		checkOut(t, "vpternlogd "+imm, fr.Out, masked(res, old[:], fr.K, 4, 64, false))
	}
}

// TestLanes: VEXTRACTI32X4/64X4, VINSERTI32X4/64X4, VSHUFI32X4, VALIGND,
// VPBROADCASTB/W/D/Q from a GPR, an xmm and memory.
func TestLanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	cases := []struct {
		insn string
		want func(fr *frame, old [64]byte) [64]byte
	}{
		{"vextracti32x4 xmm0, zmm1, 0x2", func(fr *frame, old [64]byte) (r [64]byte) { copy(r[:], fr.A[32:48]); return }},
		{"vextracti64x4 ymm0, zmm1, 0x1", func(fr *frame, old [64]byte) (r [64]byte) { copy(r[:], fr.A[32:]); return }},
		{"vinserti32x4 zmm0, zmm1, xmm2, 0x3", func(fr *frame, old [64]byte) (r [64]byte) {
			copy(r[:], fr.A[:])
			copy(r[48:], fr.B[:16])
			return
		}},
		{"vinserti64x4 zmm0, zmm1, ymm2, 0x0", func(fr *frame, old [64]byte) (r [64]byte) {
			copy(r[:], fr.A[:])
			copy(r[:32], fr.B[:32])
			return
		}},
		{"vshufi32x4 zmm0, zmm1, zmm2, 0x4e", func(fr *frame, old [64]byte) (r [64]byte) {
			// imm 01 00 11 10: blocks src1[2], src1[3], src2[0], src2[1]
			copy(r[0:], fr.A[32:48])
			copy(r[16:], fr.A[48:64])
			copy(r[32:], fr.B[0:16])
			copy(r[48:], fr.B[16:32])
			return
		}},
		{"valignd zmm0, zmm1, zmm2, 0x5", func(fr *frame, old [64]byte) (r [64]byte) {
			cat := append(append([]byte{}, fr.B[:]...), fr.A[:]...) // src2 low
			copy(r[:], cat[20:84])
			return
		}},
		{"mov ecx, DWORD PTR [rax+320]\nvpbroadcastb zmm0{k1}, ecx", func(fr *frame, old [64]byte) (r [64]byte) {
			var res [64]byte
			for i := range res {
				res[i] = fr.Mem[0]
			}
			return masked(res[:], old[:], fr.K, 1, 64, false)
		}},
		{"vcvtps2ph xmm0{k1}, xmm1, 0x4", func(fr *frame, old [64]byte) (r [64]byte) {
			var res [8]byte
			for i := 0; i < 4; i++ {
				binary.LittleEndian.PutUint16(res[2*i:], f32to16(le32(fr.A[:], i), 0))
			}
			r = masked(res[:], old[:], fr.K, 2, 8, false) // the upper 8 bytes of the xmm zeroed
			return
		}},
		{"vpbroadcastw zmm0, xmm2", func(fr *frame, old [64]byte) (r [64]byte) {
			for i := 0; i < 64; i += 2 {
				copy(r[i:], fr.B[:2])
			}
			return
		}},
		{"vpbroadcastq zmm0{k1}{z}, QWORD PTR [rax+320]", func(fr *frame, old [64]byte) (r [64]byte) {
			var res [64]byte
			for i := 0; i < 64; i += 8 {
				copy(res[i:], fr.Mem[:8])
			}
			return masked(res[:], old[:], fr.K, 8, 64, true)
		}},
		{"vpbroadcastd ymm0, DWORD PTR [rax+320]", func(fr *frame, old [64]byte) (r [64]byte) {
			for i := 0; i < 32; i += 4 {
				copy(r[i:], fr.Mem[:4])
			}
			return
		}},
	}
	for _, c := range cases {
		fn := asmFunc(t, prologue+c.insn+epilogue)
		fr := randFrame(rng)
		old := fr.C
		runFrame(t, fn, fr)
		checkOut(t, c.insn, fr.Out, c.want(fr, old))
	}
}

// TestOpmask: KMOVW from a GPR, KANDW, KORW, KXORW, KNOTW, KSHIFTRW,
// KUNPCKBW, KORTESTW setting ZF and CF for the branches after it, compares
// into k (VPCMPUB with a predicate, VPCMPEQD, VCMPPS), VPTESTMB,
// VPMOVM2D, VPMOVB2M, VPCOMPRESSD to memory, VPEXPANDD (SDM Vol. 2B/2C).
func TestOpmask(t *testing.T) {
	fn := asmFunc(t, `
  mov rax, QWORD PTR [rsp+8]
  mov ecx, 0xf0f0
  kmovw k1, ecx
  mov ecx, 0xff00
  kmovw k2, ecx
  kandw k3, k1, k2
  korw k4, k1, k2
  kxorw k5, k1, k2
  knotw k6, k1
  kshiftrw k7, k1, 4
  kmovw WORD PTR [rax], k3
  kmovw WORD PTR [rax+4], k4
  kmovw WORD PTR [rax+8], k5
  kmovw WORD PTR [rax+12], k6
  kmovw WORD PTR [rax+16], k7
  kunpckbw k3, k1, k2
  kmovw WORD PTR [rax+20], k3
  mov ecx, 0
  kxorw k0, k0, k0
  kortestw k0, k0
  jne bad
  jb bad
  kxnorw k0, k0, k0
  kortestw k0, k0
  je bad
  jb good
bad:
  mov ecx, 1
good:
  mov DWORD PTR [rax+24], ecx
  ret
`)
	var out [8]uint32
	if err := fn.Call(Ptr(unsafe.Pointer(&out))); err != nil {
		t.Fatal(err)
	}
	want := [8]uint32{0xf000, 0xfff0, 0x0ff0, 0x0f0f, 0x0f0f, 0xf000 | 0xf0<<8 | 0x00, 0}
	want[5] = (0xf0f0&0xff)<<8 | 0xff00&0xff
	if out != want {
		t.Fatalf("k ops: got %#x, want %#x", out, want)
	}

	rng := rand.New(rand.NewPCG(15, 16))
	cmp := asmFunc(t, prologue+`
  vpcmpltub k2{k1}, zmm1, zmm2
  kmovq QWORD PTR [rax+256], k2
  vpcmpeqd k3, zmm1, zmm1
  kmovq QWORD PTR [rax+264], k3
  vcmpltps k4, zmm1, zmm2
  kmovq QWORD PTR [rax+272], k4
  vptestmb k5, zmm1, zmm2
  kmovq QWORD PTR [rax+280], k5
  vpmovb2m k6, zmm2
  kmovq QWORD PTR [rax+288], k6
  vpmovm2d zmm3, k1
  vmovdqu64 ZMMWORD PTR [rax+320], zmm3
  ret
`)
	fr := randFrame(rng)
	runFrame(t, cmp, fr)
	var lt, tm, b2m, fl uint64
	for i := 0; i < 64; i++ {
		if fr.A[i] < fr.B[i] && fr.K>>i&1 == 1 {
			lt |= 1 << i
		}
		if fr.A[i]&fr.B[i] != 0 {
			tm |= 1 << i
		}
		b2m |= uint64(fr.B[i]>>7) << i
	}
	for i := 0; i < 16; i++ {
		if math.Float32frombits(le32(fr.A[:], i)) < math.Float32frombits(le32(fr.B[:], i)) {
			fl |= 1 << i
		}
	}
	got := [5]uint64{}
	for i := range got {
		got[i] = binary.LittleEndian.Uint64(fr.Out[8*i:])
	}
	if want := [5]uint64{lt, 0xffff, fl, tm, b2m}; got != want {
		t.Fatalf("compares into k: got %#x, want %#x", got, want)
	}
	for i := 0; i < 16; i++ {
		w := uint32(0)
		if fr.K>>i&1 == 1 {
			w = 0xffffffff
		}
		if g := le32(fr.Mem[:], i); g != w {
			t.Fatalf("vpmovm2d element %d = %#x, want %#x", i, g, w)
		}
	}

	comp := asmFunc(t, prologue+"vpcompressd ZMMWORD PTR [rax+320]{k1}, zmm1\nvpexpandd zmm0{k1}{z}, zmm2"+epilogue)
	fr = randFrame(rng)
	mem := fr.Mem
	runFrame(t, comp, fr)
	var wantMem [128]byte
	copy(wantMem[:], mem[:])
	n := 0
	var wantExp [64]byte
	for i := 0; i < 16; i++ {
		if fr.K>>i&1 == 1 {
			copy(wantMem[4*n:], fr.A[4*i:4*i+4])
			copy(wantExp[4*i:], fr.B[4*n:4*n+4])
			n++
		}
	}
	if fr.Mem != wantMem {
		t.Fatalf("vpcompressd:\n got %x\nwant %x", fr.Mem, wantMem)
	}
	checkOut(t, "vpexpandd", fr.Out, wantExp)
}

// TestCvtph2psAll converts every binary16 value with VCVTPH2PS zmm and
// compares with the value the format defines, (-1)^s 2^(e-15) (1+m/1024)
// (subnormals 2^-14 m/1024), computed in float64; NaNs must come back quiet
// with their payload (SDM Vol. 2B VCVTPH2PS, Vol. 1 4.8.3.4).
func TestCvtph2psAll(t *testing.T) {
	fn := asmFunc(t, `
  mov rax, QWORD PTR [rsp+8]
  mov rcx, QWORD PTR [rsp+16]
  mov rdx, QWORD PTR [rsp+24]
l:
  vcvtph2ps zmm0, YMMWORD PTR [rax]
  vmovups ZMMWORD PTR [rcx], zmm0
  add rax, 32
  add rcx, 64
  dec rdx
  jne l
  ret
`)
	in := make([]uint16, 65536)
	for i := range in {
		in[i] = uint16(i)
	}
	out := make([]uint32, 65536)
	if err := fn.Call(Ptr(unsafe.Pointer(&in[0])), Ptr(unsafe.Pointer(&out[0])), Int(65536/16)); err != nil {
		t.Fatal(err)
	}
	for h := range in {
		s, e, m := h>>15, h>>10&31, h&1023
		var want uint32
		switch {
		case e == 31 && m != 0:
			want = uint32(s)<<31 | 0x7fc00000 | uint32(m)<<13
		case e == 31:
			want = uint32(s)<<31 | 0x7f800000
		default:
			v := math.Ldexp(float64(m)/1024, -14)
			if e > 0 {
				v = math.Ldexp(1+float64(m)/1024, e-15)
			}
			if s == 1 {
				v = -v
			}
			want = math.Float32bits(float32(v))
		}
		if out[h] != want {
			t.Fatalf("vcvtph2ps %#04x = %#08x, want %#08x", h, out[h], want)
		}
	}
}

// TestCvtps2ph checks VCVTPS2PH's four rounding modes and the MXCSR mode
// against the two binary16 values around each input found by search over
// all finite halves (SDM Vol. 2B VCVTPS2PH), on random bit patterns and
// on the midpoints between halves.
func TestCvtps2ph(t *testing.T) {
	var halves []float64 // every finite half, ascending, with its bits
	bitsOf := map[float64]uint16{}
	for h := 0; h < 65536; h++ {
		if h>>10&31 == 31 {
			continue
		}
		v := float64(math.Float32frombits(f16to32(uint16(h)))) // f16to32 is checked exhaustively above
		if _, dup := bitsOf[v]; dup && v == 0 {
			continue // keep +0 for zero; the sign is handled below
		}
		halves = append(halves, v)
		bitsOf[v] = uint16(h)
	}
	sort.Float64s(halves)
	ref := func(x float32, rc int) uint16 {
		v := float64(x)
		neg := math.Signbit(v)
		sign := uint16(0)
		if neg {
			sign = 0x8000
		}
		if math.IsNaN(v) {
			return sign | 0x7e00 | uint16(math.Float32bits(x)>>13&0x1ff)
		}
		if math.IsInf(v, 0) {
			return sign | 0x7c00
		}
		a := math.Abs(v)
		i := sort.SearchFloat64s(halves, a) // halves[i] >= a
		if i < len(halves) && halves[i] == a {
			return sign | bitsOf[a]&0x7fff
		}
		lo := halves[i-1]
		var hi float64
		hiBits := uint16(0x7c00) // Inf above 65504
		if i < len(halves) {
			hi = halves[i]
			hiBits = bitsOf[hi]
		} else {
			hi = 65536 // the next value the exponent range would have: rounding ties go up to Inf
		}
		up := false
		switch rc {
		case 0:
			d1, d2 := a-lo, hi-a
			up = d2 < d1 || d2 == d1 && bitsOf[lo]&1 == 1
		case 1:
			up = neg
		case 2:
			up = !neg
		}
		if up {
			return sign | hiBits
		}
		return sign | bitsOf[lo]&0x7fff
	}
	rng := rand.New(rand.NewPCG(17, 18))
	var xs []float32
	for i := 0; i < 4000; i++ {
		xs = append(xs, math.Float32frombits(rng.Uint32()))
		xs = append(xs, float32(rng.NormFloat64()*math.Pow(2, float64(rng.IntN(40)-28))))
	}
	for i := 0; i+1 < len(halves); i += 7 { // midpoints (exact in float32)
		m := float32((halves[i] + halves[i+1]) / 2)
		xs = append(xs, m, -m)
	}
	xs = append(xs, 65504, 65519.99, 65520, -65520, 1e-8, 2.98e-8, 2.9802322e-8, -2.9802322e-8, 5.96e-8)
	for len(xs)%16 != 0 {
		xs = append(xs, 0)
	}
	for _, imm := range []int{0, 1, 2, 3, 4} {
		fn := asmFunc(t, `
  mov rax, QWORD PTR [rsp+8]
  mov rcx, QWORD PTR [rsp+16]
  mov rdx, QWORD PTR [rsp+24]
l:
  vmovups zmm0, ZMMWORD PTR [rax]
  vcvtps2ph YMMWORD PTR [rcx], zmm0, `+string(rune('0'+imm))+`
  add rax, 64
  add rcx, 32
  dec rdx
  jne l
  ret
`)
		out := make([]uint16, len(xs))
		if err := fn.Call(Ptr(unsafe.Pointer(&xs[0])), Ptr(unsafe.Pointer(&out[0])), Int(len(xs)/16)); err != nil {
			t.Fatal(err)
		}
		rc := imm & 3
		if imm&4 != 0 {
			rc = 0
		}
		for i, x := range xs {
			if w := ref(x, rc); out[i] != w {
				t.Fatalf("vcvtps2ph imm %d of %g (%#08x) = %#04x, want %#04x", imm, x, math.Float32bits(x), out[i], w)
			}
		}
	}
}

// TestFMAExact checks VFMADD231PS zmm, VFMADD213PS and VFNMADD231PS
// against a*b+c computed exactly with math/big and rounded once to float32
// (SDM Vol. 2A VFMADD231PS: "rounded ... infinite precision"), on random
// operands and on products whose sum with c lies near a float32 halfway
// point, where a double rounding would err.
func TestFMAExact(t *testing.T) {
	exact := func(a, b, c float32, neg bool) float32 {
		if a != a || b != b || c != c {
			return float32(math.NaN())
		}
		fa, fb, fc := new(big.Float).SetFloat64(float64(a)), new(big.Float).SetFloat64(float64(b)), new(big.Float).SetFloat64(float64(c))
		if math.IsInf(float64(a), 0) || math.IsInf(float64(b), 0) || math.IsInf(float64(c), 0) {
			p := float64(a) * float64(b) // exact, no overflow
			if neg {
				p = -p
			}
			return float32(p + float64(c))
		}
		p := new(big.Float).SetPrec(400).Mul(fa, fb)
		if neg {
			p.Neg(p)
		}
		s := new(big.Float).SetPrec(400).Add(p, fc)
		r, _ := s.Float32()
		if s.Sign() == 0 {
			// An exact zero sum is +0 under round to nearest, unless both
			// terms are -0.
			psign := math.Signbit(float64(a)) != math.Signbit(float64(b)) != neg
			if p.Sign() == 0 && psign && math.Signbit(float64(c)) {
				return float32(math.Copysign(0, -1))
			}
			return 0
		}
		return r
	}
	rng := rand.New(rand.NewPCG(19, 20))
	rnd := func() float32 {
		switch rng.IntN(6) {
		case 0:
			return math.Float32frombits(rng.Uint32())
		case 1:
			return float32(rng.NormFloat64() * 1e-40) // subnormals
		}
		return float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(60)-30)))
	}
	const n = 16 * 400
	a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = rnd(), rnd()
		c[i] = rnd()
		if i%3 == 1 {
			// Double-rounding traps: c with an odd last bit, a*b just under
			// half its ulp (a = 1+2^-23, b = ulp/2 (1-2^-23)): the exact
			// sum rounds to c, but rounded first to float64 it is the
			// halfway point, which rounds to even, away from c.
			cb := math.Float32bits(rnd()) | 1
			if cb&0x7f800000 == 0x7f800000 || cb&0x7f800000 < 0x04000000 {
				cb = 0x3f800001
			}
			c[i] = math.Float32frombits(cb)
			half := math.Ldexp(float64(math.Float32frombits(cb&0xff800000|1))-float64(math.Float32frombits(cb&0xff800000)), -1)
			a[i] = float32(1 + math.Ldexp(1, -23))
			b[i] = float32(half * (1 - math.Ldexp(1, -23)))
			if i%2 == 0 {
				a[i] = -a[i]
				c[i] = -c[i]
			}
		}
		if i%3 == 0 {
			// c = -(a*b rounded) + a tiny tail: the result is the product's
			// rounding error, plus halfway cases
			p := a[i] * b[i]
			c[i] = -p
			if i%2 == 0 {
				c[i] = -p + float32(math.Ldexp(float64(p), -24))
			}
		}
	}
	for _, form := range []struct {
		insn string
		neg  bool
		// operands: zmm0 = dest, zmm1 = src2, zmm2 = src3
		f func(d, s2, s3 float32) (x, y, z float32)
	}{
		{"vfmadd231ps zmm0, zmm1, zmm2", false, func(d, s2, s3 float32) (float32, float32, float32) { return s2, s3, d }},
		{"vfmadd213ps zmm0, zmm1, zmm2", false, func(d, s2, s3 float32) (float32, float32, float32) { return s2, d, s3 }},
		{"vfnmadd231ps zmm0, zmm1, zmm2", true, func(d, s2, s3 float32) (float32, float32, float32) { return s2, s3, d }},
		{"vfmadd231ps ymm0, ymm1, ymm2", false, func(d, s2, s3 float32) (float32, float32, float32) { return s2, s3, d }},
	} {
		fn := asmFunc(t, `
  mov rax, QWORD PTR [rsp+8]
  mov rbx, QWORD PTR [rsp+16]
  mov rcx, QWORD PTR [rsp+24]
  mov rdx, QWORD PTR [rsp+32]
l:
  vmovups zmm0, ZMMWORD PTR [rcx]
  vmovups zmm1, ZMMWORD PTR [rax]
  vmovups zmm2, ZMMWORD PTR [rbx]
  `+form.insn+`
  vmovups ZMMWORD PTR [rcx], zmm0
  add rax, 64
  add rbx, 64
  add rcx, 64
  dec rdx
  jne l
  ret
`)
		d := append([]float32(nil), c...)
		if err := fn.Call(Ptr(unsafe.Pointer(&a[0])), Ptr(unsafe.Pointer(&b[0])), Ptr(unsafe.Pointer(&d[0])), Int(n/16)); err != nil {
			t.Fatal(err)
		}
		vl := 16
		if strings.Contains(form.insn, "ymm") {
			vl = 8
		}
		for i := range d {
			if i%16 >= vl {
				if d[i] != 0 {
					t.Fatalf("%s: element %d above the ymm not zeroed", form.insn, i)
				}
				continue
			}
			x, y, z := form.f(c[i], a[i], b[i])
			w := exact(x, y, z, form.neg)
			if math.Float32bits(d[i]) != math.Float32bits(w) && !(d[i] != d[i] && w != w) {
				t.Fatalf("%s element %d: x %g y %g z %g: got %g (%#08x), exact %g (%#08x)", form.insn, i, x, y, z, d[i], math.Float32bits(d[i]), w, math.Float32bits(w))
			}
		}
	}
}

// TestMinMaxCvt: MAXPS/MINPS return the second source when either is NaN
// or both are zeros (SDM Vol. 2B MAXPS); VCVTPS2DQ rounds to nearest even
// and gives 0x80000000 for NaN and out-of-range values; VCVTTPS2DQ
// truncates.
func TestMinMaxCvt(t *testing.T) {
	nan := math.Float32frombits(0x7fc00001)
	negz := float32(math.Copysign(0, -1))
	vals := []float32{1, -1, 0, negz, nan, float32(math.Inf(1)), 2.5, -2.5, 3.5, 2147483520, 2147483648, -2147483648, -2147483904, 0.49999997, 1e-45, 7, -7, 0.5}
	for len(vals)%16 != 0 {
		vals = append(vals, 0)
	}
	// a = vals, b = vals rotated
	a := append([]float32(nil), vals[:16]...)
	b := append(append([]float32(nil), vals[3:16]...), vals[:3]...)
	fr := new(frame)
	for i := 0; i < 16; i++ {
		binary.LittleEndian.PutUint32(fr.A[4*i:], math.Float32bits(a[i]))
		binary.LittleEndian.PutUint32(fr.B[4*i:], math.Float32bits(b[i]))
	}
	for _, c := range []struct {
		insn string
		f    func(x, y float32) uint32
	}{
		{"vmaxps zmm0, zmm1, zmm2", func(x, y float32) uint32 {
			if x > y {
				return math.Float32bits(x)
			}
			return math.Float32bits(y)
		}},
		{"vminps zmm0, zmm1, zmm2", func(x, y float32) uint32 {
			if x < y {
				return math.Float32bits(x)
			}
			return math.Float32bits(y)
		}},
		{"vcvtps2dq zmm0, zmm1", func(x, y float32) uint32 {
			r := math.RoundToEven(float64(x))
			if x != x || r >= 2147483648 || r < -2147483648 {
				return 0x80000000
			}
			return uint32(int32(r))
		}},
		{"vcvttps2dq zmm0, zmm1", func(x, y float32) uint32 {
			r := math.Trunc(float64(x))
			if x != x || r >= 2147483648 || r < -2147483648 {
				return 0x80000000
			}
			return uint32(int32(r))
		}},
	} {
		fn := asmFunc(t, prologue+c.insn+epilogue)
		f2 := *fr
		runFrame(t, fn, &f2)
		for i := 0; i < 16; i++ {
			if g, w := le32(f2.Out[:], i), c.f(a[i], b[i]); g != w {
				t.Fatalf("%s element %d (%g, %g): %#08x, want %#08x", c.insn, i, a[i], b[i], g, w)
			}
		}
	}
}

// TestGPR: the integer instructions and flags the kernels' loops use
// (SDM Vol. 1 3.4.3 and each instruction's page): ADD/SUB/CMP/DEC/NEG with
// every Jcc condition on signed and unsigned edges, SHL/SHR/SAR, IMUL,
// MOVZX/MOVSX, LEA, partial-register writes, CMOV, SETcc, the BMI
// instructions, PUSH/POP.
func TestGPR(t *testing.T) {
	conds := []string{"o", "no", "b", "ae", "e", "ne", "be", "a", "s", "ns", "l", "ge", "le", "g"}
	var body strings.Builder
	body.WriteString("  mov r8, QWORD PTR [rsp+8]\n  mov r9, QWORD PTR [rsp+16]\n  mov r10, QWORD PTR [rsp+24]\n  xor r11, r11\n")
	// For each pair (x, y) from the table, cmp x, y and record each
	// condition with SETcc into out[pair*16+cond].
	body.WriteString("loop:\n  mov rax, QWORD PTR [r8]\n  mov rbx, QWORD PTR [r8+8]\n  cmp rax, rbx\n")
	for i, c := range conds {
		body.WriteString("  set" + c + " BYTE PTR [r9+" + itoa(i) + "]\n")
	}
	body.WriteString("  cmp eax, ebx\n")
	for i, c := range conds {
		body.WriteString("  set" + c + " BYTE PTR [r9+" + itoa(16+i) + "]\n")
	}
	body.WriteString("  add r8, 16\n  add r9, 32\n  dec r10\n  jne loop\n  ret\n")
	fn := asmFunc(t, body.String())
	vals := []uint64{0, 1, 2, 0x7fffffff, 0x80000000, 0xffffffff, 0x7fffffffffffffff, 0x8000000000000000, ^uint64(0), 0x100000000, 0xfffffffe}
	var pairs []uint64
	for _, x := range vals {
		for _, y := range vals {
			pairs = append(pairs, x, y)
		}
	}
	n := len(pairs) / 2
	out := make([]byte, 32*n)
	if err := fn.Call(Ptr(unsafe.Pointer(&pairs[0])), Ptr(unsafe.Pointer(&out[0])), Int(n)); err != nil {
		t.Fatal(err)
	}
	ref := func(c string, x, y uint64, w uint) bool {
		mask := uint64(1)<<w - 1
		if w == 64 {
			mask = ^uint64(0)
		}
		x, y = x&mask, y&mask
		sh := 64 - w
		sx, sy := int64(x<<sh)>>sh, int64(y<<sh)>>sh
		r := (x - y) & mask
		sr := int64(r<<sh) >> sh
		of := (sx < 0) != (sy < 0) && (sr < 0) != (sx < 0)
		switch c {
		case "o":
			return of
		case "no":
			return !of
		case "b":
			return x < y
		case "ae":
			return x >= y
		case "e":
			return x == y
		case "ne":
			return x != y
		case "be":
			return x <= y
		case "a":
			return x > y
		case "s":
			return sr < 0
		case "ns":
			return sr >= 0
		case "l":
			return sx < sy
		case "ge":
			return sx >= sy
		case "le":
			return sx <= sy
		case "g":
			return sx > sy
		}
		panic(c)
	}
	for p := 0; p < n; p++ {
		x, y := pairs[2*p], pairs[2*p+1]
		for i, c := range conds {
			for j, w := range []uint{64, 32} {
				got := out[32*p+16*j+i] == 1
				if want := ref(c, x, y, w); got != want {
					t.Fatalf("cmp%d %#x, %#x: set%s = %v, want %v", w, x, y, c, got, want)
				}
			}
		}
	}

	// Arithmetic and moves, each result stored.
	fn = asmFunc(t, `
  mov r8, QWORD PTR [rsp+8]
  mov rax, -5
  mov QWORD PTR [r8], rax
  mov ecx, 0xffffffff
  mov eax, ecx
  add eax, 1
  mov QWORD PTR [r8+8], rax
  mov rax, 0x123456789abcdef0
  mov al, 0x11
  mov ah, 0x22
  mov QWORD PTR [r8+16], rax
  mov ax, 0x3344
  mov QWORD PTR [r8+24], rax
  movzx ecx, BYTE PTR [r8]
  mov QWORD PTR [r8+32], rcx
  movsx rcx, BYTE PTR [r8]
  mov QWORD PTR [r8+40], rcx
  movsxd rcx, DWORD PTR [r8]
  mov QWORD PTR [r8+48], rcx
  mov rcx, 7
  imul rcx, rcx, -3
  mov QWORD PTR [r8+56], rcx
  mov rcx, -16
  sar rcx, 2
  mov QWORD PTR [r8+64], rcx
  mov rcx, -16
  shr rcx, 60
  mov QWORD PTR [r8+72], rcx
  mov rcx, 3
  shl rcx, 62
  mov QWORD PTR [r8+80], rcx
  lea rcx, [r8+rcx*1-0x10]
  sub rcx, r8
  mov QWORD PTR [r8+88], rcx
  mov rcx, 5
  neg rcx
  mov QWORD PTR [r8+96], rcx
  mov rdx, 1
  mov rcx, 2
  cmp rdx, rcx
  cmovl rdx, rcx
  mov QWORD PTR [r8+104], rdx
  mov ecx, 13
  mov eax, -1
  bzhi eax, eax, ecx
  mov QWORD PTR [r8+112], rax
  popcnt rax, rax
  mov QWORD PTR [r8+120], rax
  mov rcx, 0x50
  tzcnt rax, rcx
  mov QWORD PTR [r8+128], rax
  mov rcx, 3
  mov rax, 1
  shlx rax, rax, rcx
  mov QWORD PTR [r8+136], rax
  push rax
  push r8
  pop rdx
  pop rcx
  sub rdx, r8
  add rdx, rcx
  mov QWORD PTR [r8+144], rdx
  ret
`)
	var res [19]uint64
	if err := fn.Call(Ptr(unsafe.Pointer(&res))); err != nil {
		t.Fatal(err)
	}
	neg5 := ^uint64(4)
	want := [19]uint64{neg5, 0, 0x123456789abc2211, 0x123456789abc3344, 0xfb, neg5, neg5, uint64(^uint64(20)), ^uint64(3), 15,
		3 << 62, 3<<62 - 16, neg5, 2, 0x1fff, 13, 4, 8, 8}
	if res != want {
		t.Fatalf("got  %#x\nwant %#x", res, want)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestEVEXLanes checks more EVEX-only forms, each against a reference
// from its SDM page written per element: results under the writemask k1
// (merging) over 512 bits.
func TestEVEXLanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	type ref func(a, b, c []byte, esz int, i int) uint64 // element i of the result
	get := func(b []byte, esz, i int) uint64 {
		var x uint64
		for j := esz - 1; j >= 0; j-- {
			x = x<<8 | uint64(b[esz*i+j])
		}
		return x
	}
	sx := func(x uint64, esz int) int64 { sh := uint(64 - 8*esz); return int64(x<<sh) >> sh }
	mask := func(esz int) uint64 { return sizeMask(esz) }
	cases := []struct {
		insn string
		esz  int
		f    ref
	}{
		{"vpblendmd zmm0{k1}, zmm1, zmm2", 4, nil}, // special: see below
		{"vpopcntd zmm0{k1}, zmm1", 4, func(a, b, c []byte, esz, i int) uint64 {
			x, n := get(a, esz, i), uint64(0)
			for ; x != 0; x &= x - 1 {
				n++
			}
			return n
		}},
		{"valignq zmm0{k1}, zmm1, zmm2, 0x3", 8, func(a, b, c []byte, esz, i int) uint64 {
			if i+3 < 8 {
				return get(b, esz, i+3)
			}
			return get(a, esz, i+3-8)
		}},
		{"vpsravw zmm0{k1}, zmm1, zmm2", 2, func(a, b, c []byte, esz, i int) uint64 {
			n := get(b, esz, i)
			if n > 15 {
				n = 15
			}
			return uint64(sx(get(a, esz, i), esz)>>n) & mask(esz)
		}},
		{"vpsllvw zmm0{k1}, zmm1, zmm2", 2, func(a, b, c []byte, esz, i int) uint64 {
			n := get(b, esz, i)
			if n > 15 {
				return 0
			}
			return get(a, esz, i) << n & mask(esz)
		}},
		{"vpabsq zmm0{k1}, zmm1", 8, func(a, b, c []byte, esz, i int) uint64 {
			v := sx(get(a, esz, i), esz)
			if v < 0 {
				v = -v
			}
			return uint64(v)
		}},
		{"vpmullq zmm0{k1}, zmm1, zmm2", 8, func(a, b, c []byte, esz, i int) uint64 { return get(a, esz, i) * get(b, esz, i) }},
		{"vpmaxsq zmm0{k1}, zmm1, zmm2", 8, func(a, b, c []byte, esz, i int) uint64 {
			return uint64(max(sx(get(a, esz, i), esz), sx(get(b, esz, i), esz)))
		}},
		{"vpsraq zmm0{k1}, zmm1, 0x3d", 8, func(a, b, c []byte, esz, i int) uint64 { return uint64(sx(get(a, esz, i), esz) >> 61) }},
		{"vpermw zmm0{k1}, zmm1, zmm2", 2, func(a, b, c []byte, esz, i int) uint64 { return get(b, esz, int(get(a, esz, i)%32)) }},
		{"vpermi2q zmm0{k1}, zmm1, zmm2", 8, func(a, b, c []byte, esz, i int) uint64 {
			j := int(get(c, esz, i) % 16)
			if j < 8 {
				return get(a, esz, j)
			}
			return get(b, esz, j-8)
		}},
		{"vpermt2ps zmm0{k1}, zmm1, zmm2", 4, func(a, b, c []byte, esz, i int) uint64 {
			j := int(get(a, esz, i) % 32)
			if j < 16 {
				return get(c, esz, j)
			}
			return get(b, esz, j-16)
		}},
		{"vbroadcasti32x4 zmm0{k1}, XMMWORD PTR [rax+320]", 4, func(a, b, c []byte, esz, i int) uint64 { return get(c[128:], esz, i%4) }}, // c[128:] is Mem
		{"vextracti64x2 xmm0{k1}, zmm1, 0x2", 8, nil},
		{"vinserti32x8 zmm0{k1}, zmm1, ymm2, 0x1", 4, func(a, b, c []byte, esz, i int) uint64 {
			if i >= 8 {
				return get(b, esz, i-8)
			}
			return get(a, esz, i)
		}},
		{"vpcmpnltuw k2{k1}, zmm1, zmm2\nvpmovm2w zmm3, k2\nvmovdqu16 zmm0{k1}, zmm3", 2, func(a, b, c []byte, esz, i int) uint64 {
			if get(a, esz, i) >= get(b, esz, i) {
				return 0xffff
			}
			return 0
		}},
		{"vpshldd zmm0{k1}, zmm1, zmm2, 0x7", 4, func(a, b, c []byte, esz, i int) uint64 { return bigShift(get(a, esz, i), get(b, esz, i), 7, esz, true) }},
		{"vpshrdq zmm0{k1}, zmm1, zmm2, 0x45", 8, func(a, b, c []byte, esz, i int) uint64 {
			return bigShift(get(b, esz, i), get(a, esz, i), 0x45%64, esz, false)
		}},
		{"vpshldvw zmm0{k1}, zmm1, zmm2", 2, func(a, b, c []byte, esz, i int) uint64 {
			return bigShift(get(c, esz, i), get(a, esz, i), uint(get(b, esz, i)%16), esz, true)
		}},
		{"vpshrdvd zmm0{k1}, zmm1, zmm2", 4, func(a, b, c []byte, esz, i int) uint64 {
			return bigShift(get(a, esz, i), get(c, esz, i), uint(get(b, esz, i)%32), esz, false)
		}},
		{"vpmultishiftqb zmm0{k1}, zmm1, zmm2", 1, func(a, b, c []byte, esz, i int) uint64 {
			q := get(b, 8, i/8)
			var x uint64
			for bit := 0; bit < 8; bit++ { // bit (ctrl+bit) mod 64 of the qword
				x |= (q >> ((uint(a[i]) + uint(bit)) % 64) & 1) << bit
			}
			return x
		}},
		{"vpshufbitqmb k2{k1}, zmm1, zmm2\nvpmovm2b zmm3, k2\nvmovdqu8 zmm0{k1}, zmm3", 1, func(a, b, c []byte, esz, i int) uint64 {
			if get(a, 8, i/8)>>(b[i]%64)&1 == 1 {
				return 0xff
			}
			return 0
		}},
		{"vpmadd52luq zmm0{k1}, zmm1, zmm2", 8, func(a, b, c []byte, esz, i int) uint64 {
			return get(c, 8, i) + madd52(get(a, 8, i), get(b, 8, i), false)
		}},
		{"vpmadd52huq zmm0{k1}, zmm1, zmm2", 8, func(a, b, c []byte, esz, i int) uint64 {
			return get(c, 8, i) + madd52(get(a, 8, i), get(b, 8, i), true)
		}},
		{"vpermilps zmm0{k1}, zmm1, zmm2", 4, func(a, b, c []byte, esz, i int) uint64 { return get(a, 4, i/4*4+int(get(b, 4, i)%4)) }},
		{"vptestnmd k2, zmm1, zmm2\nvpmovm2d zmm3, k2\nvmovdqa32 zmm0{k1}, zmm3", 4, func(a, b, c []byte, esz, i int) uint64 {
			if get(a, esz, i)&get(b, esz, i) == 0 {
				return 0xffffffff
			}
			return 0
		}},
	}
	for _, c := range cases {
		fn := asmFunc(t, prologue+c.insn+epilogue)
		for it := 0; it < 10; it++ {
			fr := randFrame(rng)
			if it%2 == 0 { // small shift counts and indices, and equal elements
				for i := range fr.B {
					fr.B[i] &= 0x1f
					if i%5 == 0 {
						fr.B[i] = fr.A[i]
					}
				}
			}
			old := fr.C
			runFrame(t, fn, fr)
			n := 64 / c.esz
			res := make([]byte, 64)
			var want [64]byte
			switch {
			case strings.HasPrefix(c.insn, "vpblendmd"): // k1 selects src2, else src1
				for i := 0; i < n; i++ {
					src := fr.A[:]
					if fr.K>>i&1 == 1 {
						src = fr.B[:]
					}
					copy(want[4*i:], src[4*i:4*i+4])
				}
			case strings.HasPrefix(c.insn, "vextracti64x2"):
				want = masked(fr.A[32:48], old[:16], fr.K, 8, 16, false)
			default:
				// c is C, 64 zero bytes, then Mem
				all := make([]byte, 0, 256)
				all = append(append(append(all, old[:]...), make([]byte, 64)...), fr.Mem[:]...)
				for i := 0; i < n; i++ {
					v := c.f(fr.A[:], fr.B[:], all, c.esz, i)
					for j := 0; j < c.esz; j++ {
						res[c.esz*i+j] = byte(v >> (8 * j))
					}
				}
				want = masked(res, old[:], fr.K, c.esz, 64, false)
			}
			checkOut(t, c.insn, fr.Out, want)
		}
	}
}

// bigShift is VPSHLD (left: hi:lo shifted left by n, the upper half) or
// VPSHRD (hi:lo shifted right by n, the lower half) on esz-byte elements,
// computed with math/big.
func bigShift(hi, lo uint64, n uint, esz int, left bool) uint64 {
	w := uint(8 * esz)
	cat := new(big.Int).Lsh(new(big.Int).SetUint64(hi), w)
	cat.Or(cat, new(big.Int).SetUint64(lo))
	if left {
		cat.Lsh(cat, n).Rsh(cat, w)
	} else {
		cat.Rsh(cat, n)
	}
	m := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), w), big.NewInt(1))
	return cat.And(cat, m).Uint64()
}

// madd52 is the low or high 52 bits of the 104-bit product of the low 52
// bits of a and b (SDM VPMADD52LUQ/HUQ), with math/big.
func madd52(a, b uint64, high bool) uint64 {
	m52 := new(big.Int).SetUint64(1<<52 - 1)
	p := new(big.Int).Mul(new(big.Int).And(new(big.Int).SetUint64(a), m52), new(big.Int).And(new(big.Int).SetUint64(b), m52))
	if high {
		p.Rsh(p, 52)
	}
	return p.And(p, m52).Uint64()
}

// TestRotates: VPROLD/VPRORD/VPROLQ/VPRORQ by an immediate (counts taken
// modulo the element width, 0 and the width included) and VPROLVD/VPRORVD/
// VPROLVQ/VPRORVQ by elements (any 32 or 64 bits: modulo the width), zmm
// with a merging mask, ymm zeroing the upper half, and a {1toN} broadcast
// source (SDM Vol. 2C), against math/bits.
func TestRotates(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	rot := func(esz int, x, n uint64, left bool) uint64 {
		if !left {
			n = -n
		}
		if esz == 4 {
			return uint64(bits.RotateLeft32(uint32(x), int(n%32)))
		}
		return bits.RotateLeft64(x, int(n%64))
	}
	get := func(b []byte, esz, i int) uint64 {
		if esz == 4 {
			return uint64(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return binary.LittleEndian.Uint64(b[8*i:])
	}
	put := func(b []byte, esz, i int, x uint64) {
		if esz == 4 {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
		} else {
			binary.LittleEndian.PutUint64(b[8*i:], x)
		}
	}
	for _, esz := range []int{4, 8} {
		s, bc := "d", "DWORD PTR [rax+320]{1to16}"
		if esz == 8 {
			s, bc = "q", "QWORD PTR [rax+320]{1to8}"
		}
		for _, dir := range []string{"l", "r"} {
			left := dir == "l"
			for _, imm := range []int{0, 7, 8, 12, 16, 33, 64} {
				for _, form := range []struct {
					insn   string
					vl     int
					masked bool
					bcast  bool
				}{
					{fmt.Sprintf("vpro%s%s zmm0{k1}, zmm1, %#x", dir, s, imm), 64, true, false},
					{fmt.Sprintf("vpro%s%s ymm0, ymm1, %#x", dir, s, imm), 32, false, false},
					{fmt.Sprintf("vpro%s%s zmm0, %s, %#x", dir, s, bc, imm), 64, false, true},
				} {
					fn := asmFunc(t, prologue+form.insn+epilogue)
					fr := randFrame(rng)
					old := fr.C
					runFrame(t, fn, fr)
					res := make([]byte, 64)
					for i := 0; i < form.vl/esz; i++ {
						x := get(fr.A[:], esz, i)
						if form.bcast {
							x = get(fr.Mem[:], esz, 0)
						}
						put(res, esz, i, rot(esz, x, uint64(imm), left))
					}
					k := ^uint64(0)
					if form.masked {
						k = fr.K
					}
					checkOut(t, form.insn, fr.Out, masked(res, old[:], k, esz, form.vl, false))
				}
			}
			insn := fmt.Sprintf("vpro%sv%s zmm0{k1}{z}, zmm1, zmm2", dir, s)
			fn := asmFunc(t, prologue+insn+epilogue)
			for range 4 {
				fr := randFrame(rng)
				put(fr.B[:], esz, 0, 0) // a count of 0 and of the width
				put(fr.B[:], esz, 1, uint64(8*esz))
				old := fr.C
				runFrame(t, fn, fr)
				res := make([]byte, 64)
				for i := 0; i < 64/esz; i++ {
					put(res, esz, i, rot(esz, get(fr.A[:], esz, i), get(fr.B[:], esz, i), left))
				}
				checkOut(t, insn, fr.Out, masked(res, old[:], fr.K, esz, 64, true))
			}
		}
	}
}

//go:build cgo && sim

package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/target"
)

// catalogSlots returns every NPU slot of the default catalog as (target,
// type, K-tile).
func catalogSlots(t *testing.T) []kernelsel.Slot {
	t.Helper()
	c := kernelsel.Default()
	if len(c.Slots) == 0 {
		t.Fatal("the default catalog has no slots")
	}
	return c.Slots
}

// TestCompiledSlotsAreTheCatalog: xdna1.cc and xdna2.cc compile exactly the
// catalog's slots, each with its target's lanes.
func TestCompiledSlotsAreTheCatalog(t *testing.T) {
	if err := Available(); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[[2]int]bool{}
	for _, s := range catalogSlots(t) {
		if want[s.Target] == nil {
			want[s.Target] = map[[2]int]bool{}
		}
		want[s.Target][[2]int{int(s.Type), s.KTile}] = true
	}
	for _, tg := range []*target.Target{target.XDNA1, target.XDNA2} {
		got := map[[2]int]bool{}
		for _, s := range compiled(tg.Name) {
			if got[s] {
				t.Errorf("%s: %s K-tile %d compiled twice", tg.Name, planar.Type(s[0]), s[1])
			}
			got[s] = true
			if !want[tg.Name][s] {
				t.Errorf("%s: %s K-tile %d compiled, not in the catalog", tg.Name, planar.Type(s[0]), s[1])
			}
		}
		for s := range want[tg.Name] {
			if !got[s] {
				t.Errorf("%s: catalog slot %s K-tile %d not compiled", tg.Name, planar.Type(s[0]), s[1])
			}
		}
	}
}

// TestLayout: the compiled kernel of every catalog slot places the planes
// of its piece and record where gemv.PieceOf and gemv.RecordOf do (the
// landed kernels computed a piece's size as PIECE_ROWS rows of whatever
// format: xdna1 Q5_K's second piece wrote into the next token's rows).
func TestLayout(t *testing.T) {
	for _, s := range catalogSlots(t) {
		tg, _ := target.ByName(s.Target)
		c, ok := lookup(s.Target, s.Type, s.KTile)
		if !ok {
			t.Fatalf("%s: not compiled", s.Name)
		}
		p, err := gemv.PieceOf(s.Type, s.KTile, tg.Lanes)
		if err != nil {
			t.Fatal(err)
		}
		r := gemv.RecordOf(s.Type, s.KTile)
		var planes [4]int
		for i, pl := range p.Planes {
			planes[i] = pl.Off
		}
		got := c.layout()
		want := slotLayout{Planes: planes, Bytes: p.Bytes, Stride: r.Stride, Scales: r.Scales, Sums: r.Sums, Lanes: tg.Lanes}
		if got != want {
			t.Errorf("%s: compiled kernel's layout %+v, gemv's %+v", s.Name, got, want)
		}
	}
}

// f16Plane reports whether plane i of typ holds f16 numbers.
func f16Plane(typ planar.Type, i int) bool {
	switch typ {
	case planar.Q4_0, planar.Q8_0:
		return i == 1
	case planar.Q5_0, planar.Q6_K:
		return i == 2
	case planar.Q4_K:
		return i == 2
	case planar.Q5_K:
		return i == 3
	}
	return false
}

// putRow writes b at byte off of row r of plane i of piece w.
func putRow(p *gemv.Piece, w []byte, i, r, off int, b []byte) {
	pl := p.Planes[i]
	for k, v := range b {
		o := off + k
		if pl.Words {
			w[pl.Off+4*((o/4)*p.Rows+r)+o%4] = v
		} else {
			w[pl.Off+r*pl.PerRow+o] = v
		}
	}
}

// randF16 is a random f16: mostly the scales of real files, some zeros,
// negative zeros, subnormals, the largest finite and infinities.
func randF16(rng *rand.Rand) uint16 {
	switch rng.IntN(40) {
	case 0:
		return 0
	case 1:
		return 0x8000
	case 2:
		return uint16(rng.IntN(1024)) | uint16(rng.IntN(2))<<15 // subnormal
	case 3:
		return 0x7bff
	case 4:
		return 0x7c00 | uint16(rng.IntN(2))<<15
	}
	return planar.F32ToF16(float32((rng.Float64()*2 - 1) * math.Pow(2, float64(rng.IntN(20)-14))))
}

// randomPiece fills a piece of n live rows (rows past n zero, as Pack
// leaves them): random bytes in the code, high and scale-byte planes,
// random f16 in the f16 planes.
func randomPiece(rng *rand.Rand, p *gemv.Piece, n int) []byte {
	w := make([]byte, p.Bytes)
	for i, pl := range p.Planes {
		for r := 0; r < n; r++ {
			row := make([]byte, pl.PerRow)
			for k := range row {
				row[k] = byte(rng.Uint32())
			}
			if f16Plane(p.Type, i) {
				for k := 0; k+1 < len(row); k += 2 {
					binary.LittleEndian.PutUint16(row[k:], randF16(rng))
				}
			}
			putRow(p, w, i, r, 0, row)
		}
	}
	return w
}

// randomRecord is one token's record: random int8 codes and sums, finite
// scales.
func randomRecord(rng *rand.Rand, r *gemv.Record) []byte {
	b := make([]byte, r.Stride)
	for i := 0; i < r.K; i++ {
		b[i] = byte(rng.Uint32())
	}
	switch r.Kind {
	case gemv.ActQ8_0:
		for i := 0; i < r.K/32; i++ {
			binary.LittleEndian.PutUint16(b[r.Scales+2*i:], randF16(rng))
		}
	case gemv.ActQ8_K:
		for i := 0; i < r.K/256; i++ {
			binary.LittleEndian.PutUint32(b[r.Scales+4*i:], math.Float32bits(float32(rng.NormFloat64()*0.01)))
		}
		for i := 0; i < r.K/16; i++ {
			binary.LittleEndian.PutUint16(b[r.Sums+2*i:], uint16(rng.Uint32()))
		}
	}
	return b
}

// sameBits reports whether a and b hold the same f32s bit for bit (any two
// NaNs alike: their payloads are the host's, not the kernel's).
func sameBits(a, b []byte) (int, bool) {
	for i := 0; i+4 <= len(a); i += 4 {
		x, y := binary.LittleEndian.Uint32(a[i:]), binary.LittleEndian.Uint32(b[i:])
		if x != y && !(math.IsNaN(float64(math.Float32frombits(x))) && math.IsNaN(float64(math.Float32frombits(y)))) {
			return i / 4, false
		}
	}
	return 0, true
}

const guard = 256 // bytes of poison around every buffer

// guarded returns a buffer of n bytes with poisoned guard bands, and a
// check that they are intact.
func guarded(n int, fill func([]byte)) ([]byte, func() error) {
	raw := make([]byte, guard+n+guard+64)
	a := 0
	for uintptr(unsafe.Pointer(&raw[a]))%64 != 0 {
		a++
	}
	all := raw[a : a+guard+n+guard]
	for i := range all {
		all[i] = 0xA5
	}
	// Keep the buffer 64-byte aligned as the core's buffers are (the shim
	// checks vector alignment).
	buf := all[guard : guard+n : guard+n]
	fill(buf)
	return buf, func() error {
		for i, v := range all {
			if (i < guard || i >= guard+n) && v != 0xA5 {
				return fmt.Errorf("wrote byte %d of the guard band", i-guard)
			}
		}
		return nil
	}
}

// TestKernelsMatchModel runs the compiled kernel of every catalog slot
// against gemv.Model bit for bit: pieces with 0, 1, an odd number of and
// all rows live, random records, both functions, first and not first, the
// first, a middle and the last token of the accumulators; every buffer in
// guard bands, and the accumulators of the other tokens untouched.
func TestKernelsMatchModel(t *testing.T) {
	for _, s := range catalogSlots(t) {
		t.Run(s.Name, func(t *testing.T) {
			tg, _ := target.ByName(s.Target)
			R := tg.Lanes
			k, err := New(s.Target, s.Type, s.KTile, R)
			if err != nil {
				t.Fatal(err)
			}
			m, err := gemv.NewModel(s.Type, s.KTile, R)
			if err != nil {
				t.Fatal(err)
			}
			for _, kk := range []gemv.Kernel{k, m} {
				if err := kk.Call(0, 2, gemv.FnInit, nil); err != nil {
					t.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(uint64(s.Type), uint64(s.KTile*R)))
			accBytes := 4 * R * design.MaxTokens
			for _, n := range []int{0, 1, R/2 + 3, R} {
				for _, tok := range []int32{0, 5, design.MaxTokens - 1} {
					for _, first := range []int32{1, 0} {
						for _, fn := range []string{gemv.FnAcc, gemv.FnOut} {
							name := fmt.Sprintf("%d rows, token %d, first %d, %s", n, tok, first, fn)
							w := randomPiece(rng, &k.Piece, n)
							rec := randomRecord(rng, &k.Record)
							acc0 := make([]byte, accBytes)
							for i := 0; i < len(acc0); i += 4 {
								binary.LittleEndian.PutUint32(acc0[i:], math.Float32bits(float32(rng.NormFloat64())))
							}
							var got, want [2][]byte // acc, out
							for i, kk := range []gemv.Kernel{k, m} {
								wb, wok := guarded(len(w), func(b []byte) { copy(b, w) })
								rb, rok := guarded(len(rec), func(b []byte) { copy(b, rec) })
								ab, aok := guarded(accBytes, func(b []byte) { copy(b, acc0) })
								ob, ook := guarded(4*R, func(b []byte) {
									for j := range b {
										b[j] = 0xEE
									}
								})
								args := []gemv.Value{{Buf: wb}, {Buf: rb}, {Buf: ab}, {Int: tok}, {Int: first}}
								if fn == gemv.FnOut {
									args = []gemv.Value{{Buf: wb}, {Buf: rb}, {Buf: ab}, {Buf: ob}, {Int: tok}, {Int: first}}
								}
								if err := kk.Call(0, 2, fn, args); err != nil {
									t.Fatalf("%s: %v", name, err)
								}
								for _, ok := range []func() error{wok, rok, aok, ook} {
									if err := ok(); err != nil {
										t.Fatalf("%s: kernel %d: %v", name, i, err)
									}
								}
								res := [2][]byte{append([]byte(nil), ab...), append([]byte(nil), ob...)}
								if i == 0 {
									got = res
								} else {
									want = res
								}
							}
							if i, ok := sameBits(got[0], want[0]); !ok {
								t.Fatalf("%s: acc[%d] = %v, the model's %v (token %d row %d)", name, i,
									math.Float32frombits(binary.LittleEndian.Uint32(got[0][4*i:])),
									math.Float32frombits(binary.LittleEndian.Uint32(want[0][4*i:])), i/R, i%R)
							}
							if i, ok := sameBits(got[1], want[1]); !ok {
								t.Fatalf("%s: out[%d] = %v, the model's %v", name, i,
									math.Float32frombits(binary.LittleEndian.Uint32(got[1][4*i:])),
									math.Float32frombits(binary.LittleEndian.Uint32(want[1][4*i:])))
							}
						}
					}
				}
			}
		})
	}
}

// TestInitSetsModes: a core's rounding mode is floor until its program
// calls gemv.FnInit, which sets the mode the kernels rely on (the landed
// kernels set it only in the simulation's driver, never on the device). A
// Q4_K row whose sumi, 124354575, is not a float32 converts to 124354568
// under floor and to 124354576 (the Go model's float32) under conv_even;
// every other core keeps its own modes.
func TestInitSetsModes(t *testing.T) {
	for _, name := range []string{"xdna1", "xdna2"} {
		tg, _ := target.ByName(name)
		k, err := New(name, planar.Q4_K, 256, tg.Lanes)
		if err != nil {
			t.Fatal(err)
		}
		p := &k.Piece
		w := make([]byte, p.Bytes)
		codes, sm, dm := make([]byte, 128), make([]byte, 16), []byte{0x00, 0x3c, 0, 0} // d = 1, dmin = 0
		for i := range codes {
			codes[i] = 0xFF // every code 15
		}
		for i := 0; i < 8; i++ {
			sm[i] = 255 // scales 255 (a byte; any byte is computed exactly), mins 0
		}
		for r := 0; r < p.Rows; r++ {
			putRow(p, w, 0, r, 0, codes)
			putRow(p, w, 1, r, 0, sm)
			putRow(p, w, 2, r, 0, dm)
		}
		rec := make([]byte, k.Record.Stride)
		for i := 0; i < 256; i++ {
			rec[i] = 127
		}
		rec[0] = 126 // sumi = 8*255*32*15*127 - 255*15 = 124354575
		binary.LittleEndian.PutUint32(rec[k.Record.Scales:], math.Float32bits(1))
		acc := make([]byte, 4*tg.Lanes*16)
		run := func(row int) float32 {
			out := make([]byte, 4*tg.Lanes)
			if err := k.Call(0, row, gemv.FnOut, []gemv.Value{{Buf: w}, {Buf: rec}, {Buf: acc}, {Buf: out}, {Int: 0}, {Int: 1}}); err != nil {
				t.Fatal(err)
			}
			v := math.Float32frombits(binary.LittleEndian.Uint32(out))
			for r := 1; r < tg.Lanes; r++ {
				if u := math.Float32frombits(binary.LittleEndian.Uint32(out[4*r:])); u != v {
					t.Fatalf("%s: row %d %v, row 0 %v", name, r, u, v)
				}
			}
			return v
		}
		if v := run(2); v != 124354568 {
			t.Errorf("%s: before xdna_gemv_init: %v, want 124354568 (floor)", name, v)
		}
		if err := k.Call(0, 2, gemv.FnInit, nil); err != nil {
			t.Fatal(err)
		}
		model := int32(124354575)
		if v := run(2); v != 124354576 || v != float32(model) {
			t.Errorf("%s: after xdna_gemv_init: %v, want 124354576 (conv_even, the model's float32)", name, v)
		}
		if v := run(3); v != 124354568 {
			t.Errorf("%s: core (0,3), which did not call xdna_gemv_init: %v, want 124354568 (floor)", name, v)
		}
	}
}

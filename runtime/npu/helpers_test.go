package npu_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/target"
)

// npuTypes are the formats with a GEMV kernel (the float formats have none:
// the catalog plans them on the CPU and design.New refuses them).
var npuTypes = []planar.Type{planar.Q4_0, planar.Q5_0, planar.Q8_0, planar.Q4_K, planar.Q5_K, planar.Q6_K}

var allTypes = []planar.Type{planar.F32, planar.F16, planar.BF16, planar.Q4_0, planar.Q5_0,
	planar.Q8_0, planar.Q4_K, planar.Q5_K, planar.Q6_K}

// randomGGUF returns the GGUF bytes of an N x K matrix of type t with random
// codes and plausible finite scales (as runtime/cpu's tests make them).
func randomGGUF(rng *rand.Rand, t planar.Type, n, k int) []byte {
	src := make([]byte, n*t.RowBytes(k))
	put16 := func(o int, v float32) { binary.LittleEndian.PutUint16(src[o:], planar.F32ToF16(v)) }
	scale := func() float32 { return float32(0.002 + 0.02*rng.Float64()) }
	switch t {
	case planar.F32:
		for i := 0; i < len(src); i += 4 {
			binary.LittleEndian.PutUint32(src[i:], math.Float32bits(float32(rng.NormFloat64()*0.1)))
		}
		return src
	case planar.F16:
		for i := 0; i < len(src); i += 2 {
			put16(i, float32(rng.NormFloat64()*0.1))
		}
		return src
	case planar.BF16:
		for i := 0; i < len(src); i += 2 {
			binary.LittleEndian.PutUint16(src[i:], uint16(math.Float32bits(float32(rng.NormFloat64()*0.1))>>16))
		}
		return src
	}
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	bb := t.BlockBytes()
	for o := 0; o < len(src); o += bb {
		switch t {
		case planar.Q4_0, planar.Q5_0, planar.Q8_0:
			put16(o, scale())
		case planar.Q4_K, planar.Q5_K:
			// 6-bit scales and mins come from the random bytes.
			put16(o, scale()/8)
			put16(o+2, scale()/8)
		case planar.Q6_K:
			put16(o+208, scale()/16)
		}
	}
	return src
}

// packed returns a random packed matrix of geometry g.
func packed(t testing.TB, rng *rand.Rand, g planar.Geometry) *cpu.Matrix {
	t.Helper()
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, randomGGUF(rng, g.Type, g.N, g.K), blob); err != nil {
		t.Fatalf("%+v: pack: %v", g, err)
	}
	m := &cpu.Matrix{G: g, Blob: blob}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	return m
}

// randomX returns activations as a normalised hidden state looks: normal,
// with a run of zeros.
func randomX(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	if n > 40 {
		clear(x[3:11])
	}
	return x
}

// entry returns a manifest entry for m planned on slot.
func entry(name string, m *cpu.Matrix, device, slot string) layout.TensorEntry {
	g := m.G
	f := g.Format()
	return layout.TensorEntry{
		Name: name, Shape: []int{g.K, g.N}, Type: g.Type.String(), Format: f.Name, KTile: g.KTile,
		BlobRef: layout.BlobRef{Size: int64(g.Size())}, Device: device, Slot: slot,
	}
}

// dsn returns the design of g's format and K-tile on tg.
func dsn(t testing.TB, g planar.Geometry, tg *target.Target) *design.Design {
	t.Helper()
	d, err := design.New(tg, g.Type, g.KTile)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// slotFor returns an emulator slot for m's format and K-tile.
func slotFor(t testing.TB, name string, g planar.Geometry, columns int) npu.Slot {
	t.Helper()
	x, err := emu.XCLBin(g.Type, g.KTile, columns)
	if err != nil {
		t.Fatal(err)
	}
	return npu.Slot{Name: name, Kernel: "MLIR_AIE", XCLBin: x}
}

// cosine returns the cosine similarity of a and b and the largest |a-b|.
func cosine(a, b []float32) (cos, maxAbs float64) {
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
		maxAbs = math.Max(maxAbs, math.Abs(x-y))
	}
	if aa == 0 && bb == 0 {
		return 1, maxAbs
	}
	return ab / math.Sqrt(aa*bb), maxAbs
}

func maxAbsOf(a []float32) float64 {
	var m float64
	for _, v := range a {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

func geomName(g planar.Geometry) string {
	return fmt.Sprintf("%s/N%d/K%d/T%d/C%d", g.Type, g.N, g.K, g.KTile, g.Columns)
}

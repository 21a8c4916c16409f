package amdxdna_test

import (
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
	"github.com/xdna-go/xdna/runtime/npu/emu"
)

// open returns a Device over a fresh fake; the test fails if Close leaves
// anything allocated in the fake.
func open(t testing.TB, cfg amdxdnatest.Config) (*amdxdna.Device, *amdxdnatest.Kernel) {
	t.Helper()
	k := amdxdnatest.New(cfg)
	d, err := amdxdna.OpenWith(k, amdxdnatest.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if live := k.Live(); live != "" {
			t.Errorf("after Close the fake still holds %s", live)
		}
	})
	return d, k
}

// randomMatrix returns a packed N x K Q8_0 matrix with random codes and
// small scales.
func randomMatrix(t testing.TB, rng *rand.Rand, typ planar.Type, n, k, kTile, columns int) *cpu.Matrix {
	t.Helper()
	g := planar.Geometry{Type: typ, N: n, K: k, Columns: columns, KTile: kTile}
	src := make([]byte, n*typ.RowBytes(k))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	for o := 0; o < len(src); o += typ.BlockBytes() {
		binary.LittleEndian.PutUint16(src[o:], planar.F32ToF16(float32(0.002+0.02*rng.Float64())))
	}
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src, blob); err != nil {
		t.Fatal(err)
	}
	return &cpu.Matrix{G: g, Blob: blob}
}

func entryOf(name string, m *cpu.Matrix, slot string) layout.TensorEntry {
	g := m.G
	return layout.TensorEntry{Name: name, Shape: []int{g.K, g.N}, Type: g.Type.String(), Format: g.Format().Name,
		KTile: g.KTile, BlobRef: layout.BlobRef{Size: int64(g.Size())}, Device: "npu", Slot: slot}
}

// backend returns a Backend over dev with an emulator slot for m.
func backend(t testing.TB, dev npu.Device, m *cpu.Matrix, warn io.Writer) *npu.Backend {
	t.Helper()
	x, err := emu.XCLBin(m.G.Type, m.G.KTile, m.G.Columns)
	if err != nil {
		t.Fatal(err)
	}
	opt := npu.Options{Timeout: 200e6, RingSize: 1 << 20, IOSize: 64 << 10}
	if warn != nil {
		opt.Warn = warn
	}
	b, err := npu.NewBackend(dev, []layout.TensorEntry{entryOf("w", m, "s")},
		[]npu.Slot{{Name: "s", Kernel: "MLIR_AIE", XCLBin: x}}, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func randomX(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 && bb == 0 {
		return 1
	}
	return ab / math.Sqrt(aa*bb)
}

// ptrOf is the pointer a uAPI struct's u64 field holds.
func ptrOf(a uint64) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

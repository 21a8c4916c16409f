//go:build cgo && sim

package sim

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
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/target"
)

// randomMatrix returns a packed N x K matrix of g with random codes and
// plausible scales (runtime/npu's tests make them alike).
func randomMatrix(t *testing.T, rng *rand.Rand, g planar.Geometry) *cpu.Matrix {
	t.Helper()
	src := make([]byte, g.N*g.Type.RowBytes(g.K))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	put16 := func(o int, v float32) { binary.LittleEndian.PutUint16(src[o:], planar.F32ToF16(v)) }
	scale := func() float32 { return float32(0.002 + 0.02*rng.Float64()) }
	for o := 0; o < len(src); o += g.Type.BlockBytes() {
		switch g.Type {
		case planar.Q4_0, planar.Q5_0, planar.Q8_0:
			put16(o, scale())
		case planar.Q4_K, planar.Q5_K:
			put16(o, scale()/8)
			put16(o+2, scale()/8)
		case planar.Q6_K:
			put16(o+208, scale()/16)
		}
	}
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src, blob); err != nil {
		t.Fatal(err)
	}
	m := &cpu.Matrix{G: g, Blob: blob}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEmulatorAgainstCPU runs every catalog slot's compiled kernel as the
// kernel of the array emulator (emu.Config.Kernels = Factory(target)) over
// odd shapes (one row; rows not a multiple of the columns or of a row
// block; one and several K-tiles) and 1, 3 and 17 tokens (17: two
// dispatches of at most 16), through the host path (npu.Backend): the
// outputs must equal cpu.MatMat's bit for bit, and every call must have
// gone to the NPU.
func TestEmulatorAgainstCPU(t *testing.T) {
	for _, s := range catalogSlots(t) {
		t.Run(s.Name, func(t *testing.T) {
			tg, _ := target.ByName(s.Target)
			rng := rand.New(rand.NewPCG(uint64(s.Type)+99, uint64(s.KTile)))
			for _, sh := range [][2]int{{1, 1}, {3*tg.Lanes*tg.CoreRows + 5, 2}, {37, 3}} {
				g := planar.Geometry{Type: s.Type, N: sh[0], K: sh[1] * s.KTile, Columns: tg.Columns, KTile: s.KTile}
				m := randomMatrix(t, rng, g)
				dev := emu.New(emu.Config{Target: tg, Kernels: Factory(s.Target)})
				x, err := emu.XCLBin(g.Type, g.KTile, tg.Columns)
				if err != nil {
					t.Fatal(err)
				}
				e := layout.TensorEntry{Name: "w", Shape: []int{g.K, g.N}, Type: g.Type.String(), Format: g.Format().Name, KTile: g.KTile,
					BlobRef: layout.BlobRef{Size: int64(g.Size())}, Device: "npu", Slot: "s"}
				be, err := npu.NewBackend(dev, []layout.TensorEntry{e}, []npu.Slot{{Name: "s", Kernel: "MLIR_AIE", XCLBin: x}}, nil, npu.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range []int{1, 3, 17} {
					name := fmt.Sprintf("N=%d K=%d B%d", g.N, g.K, b)
					xs := make([]float32, b*g.K)
					for i := range xs {
						xs[i] = float32(rng.NormFloat64())
					}
					y := make([]float32, b*g.N)
					be.MatMat("w", m, xs, y, b)
					want := make([]float32, b*g.N)
					cpu.MatMat(m, xs, want, b, nil)
					for i := range want {
						if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: y[%d] = %v, cpu.MatMat %v", name, i, y[i], want[i])
						}
					}
				}
				st := be.Stats()
				if st.CPUCalls != 0 || st.Faults != 0 || st.NPUCalls != 3 {
					t.Fatalf("N=%d K=%d: stats %+v, want 3 NPU calls and no fallback", g.N, g.K, st)
				}
				if c := dev.Counters(); c.Completed != st.Dispatches || c.Failed != 0 {
					t.Fatalf("N=%d K=%d: device completed %d of %d dispatches, %d failed", g.N, g.K, c.Completed, st.Dispatches, c.Failed)
				}
				be.Close()
				dev.Close()
			}
		})
	}
}

package npu_test

import (
	"io"
	"math/rand/v2"
	"testing"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/emu"
)

// BenchmarkBackendMatVec is one decode matmul through the whole host path
// on the emulator (staging, descriptors, the emulated kernel, readback),
// against cpu.MatVec on the same matrix. Bytes are the weights.
func BenchmarkBackendMatVec(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, typ := range []planar.Type{planar.Q4_0, planar.Q4_K, planar.Q6_K} {
		g := planar.Geometry{Type: typ, N: 2048, K: 2048, Columns: 8, KTile: 256}
		m := packed(b, rng, g)
		x := randomX(rng, g.K)
		y := make([]float32, g.N)
		b.Run(typ.String()+"/emu", func(b *testing.B) {
			dev := emu.New(emu.XDNA2())
			defer dev.Close()
			slot := slotFor(b, "s", g, 8)
			be, err := npu.NewBackend(dev, []layout.TensorEntry{entry("w", m, "npu", "s")}, []npu.Slot{slot}, nil, npu.Options{Warn: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			b.SetBytes(int64(g.Size()))
			b.ReportAllocs()
			for b.Loop() {
				be.MatVec("w", m, x, y)
			}
			st := be.Stats()
			b.ReportMetric(float64(st.Dispatches)/float64(b.N), "dispatches/op")
		})
		b.Run(typ.String()+"/cpu", func(b *testing.B) {
			b.SetBytes(int64(g.Size()))
			b.ReportAllocs()
			for b.Loop() {
				cpu.MatVec(m, x, y, nil)
			}
		})
	}
}

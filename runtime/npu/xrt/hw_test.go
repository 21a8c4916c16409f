//go:build xrt

package xrt

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
)

// TestHardwareGEMV runs one matrix through the Backend on the real NPU and
// compares it with the CPU. It needs a GEMV xclbin:
//
//	XDNA_XCLBIN=kernels/xdna2/gemv_q4_k_k256.xclbin XDNA_FORMAT=Q4_K XDNA_KTILE=256 \
//	  go test -tags xrt -run Hardware -v ./runtime/npu/xrt
func TestHardwareGEMV(t *testing.T) {
	path, format := os.Getenv("XDNA_XCLBIN"), os.Getenv("XDNA_FORMAT")
	kt, _ := strconv.Atoi(os.Getenv("XDNA_KTILE"))
	if path == "" || format == "" || kt <= 0 {
		t.Skip("set XDNA_XCLBIN, XDNA_FORMAT and XDNA_KTILE to run on the NPU")
	}
	x, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	typ, err := planar.ParseType(format)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := Open(0)
	if err != nil {
		t.Skipf("no NPU: %v", err)
	}
	defer dev.Close()
	t.Logf("device %+v", dev.Info())
	rng := rand.New(rand.NewPCG(1, 2))
	g := planar.Geometry{Type: typ, N: 4096 + 37, K: 8 * kt, Columns: dev.Info().Columns, KTile: kt}
	src := make([]byte, g.SourceBytes())
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	// Plausible scales: overwrite each block's f16 scale fields.
	for o := 0; o < len(src); o += typ.BlockBytes() {
		switch typ {
		case planar.Q4_0, planar.Q5_0, planar.Q8_0:
			binary.LittleEndian.PutUint16(src[o:], planar.F32ToF16(0.01))
		case planar.Q4_K, planar.Q5_K:
			binary.LittleEndian.PutUint32(src[o:], uint32(planar.F32ToF16(0.001))*0x10001)
		case planar.Q6_K:
			binary.LittleEndian.PutUint16(src[o+208:], planar.F32ToF16(0.001))
		}
	}
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src, blob); err != nil {
		t.Skipf("%s has no packable random data here: %v", typ, err)
	}
	m := &cpu.Matrix{G: g, Blob: blob}
	e := layout.TensorEntry{Name: "w", Shape: []int{g.K, g.N}, Type: typ.String(), Format: g.Format().Name,
		KTile: kt, BlobRef: layout.BlobRef{Size: int64(g.Size())}, Device: "npu", Slot: "s"}
	be, err := npu.NewBackend(dev, []layout.TensorEntry{e}, []npu.Slot{{Name: "s", Kernel: "MLIR_AIE", XCLBin: x}}, nil,
		npu.Options{Warn: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	xs := make([]float32, g.K)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	y, want := make([]float32, g.N), make([]float32, g.N)
	be.MatVec("w", m, xs, y)
	cpu.MatVec(m, xs, want, nil)
	var ab, aa, bb float64
	for i := range y {
		ab += float64(y[i]) * float64(want[i])
		aa += float64(y[i]) * float64(y[i])
		bb += float64(want[i]) * float64(want[i])
	}
	cos := ab / math.Sqrt(aa*bb)
	st := be.Stats()
	t.Logf("cosine %.7f against cpu.MatVec; stats %+v", cos, st)
	if st.NPUCalls != 1 || cos < 0.9999 {
		t.Errorf("NPU calls %d, cosine %v", st.NPUCalls, cos)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

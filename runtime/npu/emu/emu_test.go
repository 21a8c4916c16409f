package emu

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	"github.com/xdna-go/xdna/target"
	"github.com/xdna-go/xdna/xclbin"
)

// rig is one Q8_0 matrix staged by hand on an emulated XDNA1 device,
// without the Backend: the tests below drive the Device directly with
// streams built by txn.GEMV, staging what the design says each stream
// holds (an independent reading of design.Design's contract).
type rig struct {
	d                   *Device
	k                   npu.Kernel
	dsn                 *design.Design
	g                   planar.Geometry
	m                   *cpu.Matrix
	x                   []float32
	ins, w, act, out    npu.BO
	h                   design.Header
	gv                  txn.GEMV
	words               int
	wHost, aHost, iHost []byte
	outOff              []int // each column's outputs in bo2
}

// dispatch is what the host sends for one dispatch of a matrix on a
// design, staged as design.Design says each stream holds it: the weight
// runs (bo0), the header object and records (bo1), the outputs' size
// (bo2), the stream's placement, and where each column's outputs are.
type dispatch struct {
	w, act []byte
	outLen int
	gv     txn.GEMV
	h      design.Header
	outOff []int
}

// hostDispatch stages tokens tokens of x (tokens x K) against blob (of
// geometry g) for design d in one dispatch of all its K-tiles.
func hostDispatch(d *design.Design, g planar.Geometry, blob []byte, x []float32, tokens int) *dispatch {
	var rows []int
	for c := 0; c < g.Columns; c++ {
		_, n := g.GroupRows(c)
		rows = append(rows, n)
	}
	p := &dispatch{h: d.NewHeader(g.Tiles(), tokens, rows)}
	rec := d.RecordBytes()
	p.gv = txn.GEMV{Gen: txn.Gen(d.Target.Gen), Map: d.Shim, Header: txn.Range{Bytes: rec},
		Records: txn.Range{Off: rec, Bytes: rec * g.Tiles() * tokens}, Replays: p.h.Blocks}
	for c := range rows {
		start := len(p.w)
		p.w = append(p.w, make([]byte, g.Tiles()*npu.StagedTileBytes(d, rows[c]))...)
		npu.StageChunk(d, g, blob, npu.Chunk{Group0: c, Groups: 1, Tiles: g.Tiles()}, p.w[start:])
		n := 4 * d.Blocks(rows[c]) * tokens * d.BlockRows()
		p.gv.Weights = append(p.gv.Weights, txn.Range{Off: start, Bytes: len(p.w) - start})
		p.gv.Outs = append(p.gv.Outs, txn.Range{Off: p.outLen, Bytes: n})
		p.outOff = append(p.outOff, p.outLen)
		p.outLen += n
	}
	p.act = make([]byte, rec*(1+g.Tiles()*tokens))
	npu.PutRecords(d, g, p.h, x, 0, g.Tiles(), tokens, p.act)
	return p
}

// gather reads y (tokens x N) from the outputs: per column, per row block,
// per token, the block's rows.
func (p *dispatch) gather(d *design.Design, g planar.Geometry, out []byte, tokens int) []float32 {
	y := make([]float32, tokens*g.N)
	for c := 0; c < g.Columns; c++ {
		first, n := g.GroupRows(c)
		o := p.outOff[c]
		for r0 := 0; r0 < n; r0 += d.BlockRows() {
			for t := 0; t < tokens; t++ {
				for i := 0; i < min(d.BlockRows(), n-r0); i++ {
					y[t*g.N+first+r0+i] = math.Float32frombits(binary.LittleEndian.Uint32(out[o+4*i:]))
				}
				o += 4 * d.BlockRows()
			}
		}
	}
	return y
}

// randomMatrix packs an N x K matrix of g's type with random codes and
// small finite scales.
func randomMatrix(t testing.TB, rng *rand.Rand, g planar.Geometry) []byte {
	src := make([]byte, g.SourceBytes())
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	bs, bb := g.Type.BlockSize(), g.Type.RowBytes(g.Type.BlockSize())
	_ = bs
	for o := 0; o < len(src); o += bb {
		binary.LittleEndian.PutUint16(src[o:], planar.F32ToF16(0.01))
	}
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src, blob); err != nil {
		t.Fatal(err)
	}
	return blob
}

func newRig(t *testing.T) *rig {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 1))
	g := planar.Geometry{Type: planar.Q8_0, N: 150, K: 128, Columns: 2, KTile: 64}
	blob := randomMatrix(t, rng, g)
	r := &rig{d: New(XDNA1()), g: g, m: &cpu.Matrix{G: g, Blob: blob}}
	t.Cleanup(func() { r.d.Close() })
	x, err := XCLBin(planar.Q8_0, 64, 4)
	if err != nil {
		t.Fatal(err)
	}
	if r.k, err = r.d.LoadKernel(x, xclbin.NPUKernel); err != nil {
		t.Fatal(err)
	}
	if r.dsn, err = design.New(target.XDNA1, planar.Q8_0, 64); err != nil {
		t.Fatal(err)
	}
	r.x = make([]float32, g.K)
	for i := range r.x {
		r.x[i] = float32(rng.NormFloat64())
	}
	p := hostDispatch(r.dsn, g, blob, r.x, 1)
	r.h, r.gv, r.outOff = p.h, p.gv, p.outOff
	alloc := func(kind npu.BOKind, n int) (npu.BO, []byte) {
		h, err := r.d.Alloc(kind, n)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := r.d.Map(h)
		return h, m
	}
	r.ins, r.iHost = alloc(npu.BOInstr, 4096)
	r.w, r.wHost = alloc(npu.BOData, len(p.w))
	r.act, r.aHost = alloc(npu.BOData, len(p.act))
	r.out, _ = alloc(npu.BOData, p.outLen)
	copy(r.wHost, p.w)
	copy(r.aHost, p.act)
	r.encode(t, &r.gv)
	return r
}

// encode builds gv's stream into the instruction buffer.
func (r *rig) encode(t *testing.T, gv *txn.GEMV) {
	t.Helper()
	w, _, err := gv.Build()
	if err != nil {
		t.Fatal(err)
	}
	clear(r.iHost)
	copy(r.iHost, txn.Bytes(w))
	r.words = len(w)
}

func (r *rig) syncIn(t *testing.T) {
	t.Helper()
	for _, h := range []npu.BO{r.ins, r.w, r.act} {
		if err := r.d.Sync(h, npu.ToDevice, 0, r.size(h)); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *rig) size(h npu.BO) int { m, _ := r.d.Map(h); return len(m) }

func (r *rig) run(t *testing.T) error {
	t.Helper()
	h, err := r.d.Run(r.k, npu.OpcodeTxn, r.ins, r.words, r.w, r.act, r.out)
	if err != nil {
		t.Fatal(err)
	}
	return r.d.Wait(h, time.Second)
}

func (r *rig) y(t *testing.T) []float32 {
	t.Helper()
	if err := r.d.Sync(r.out, npu.FromDevice, 0, r.size(r.out)); err != nil {
		t.Fatal(err)
	}
	m, _ := r.d.Map(r.out)
	return r.gather(m)
}

// gather reads y from the columns' outputs (one token: per row block, the
// block's rows in order).
func (r *rig) gather(out []byte) []float32 {
	y := make([]float32, r.g.N)
	for c := 0; c < r.g.Columns; c++ {
		first, n := r.g.GroupRows(c)
		for i := 0; i < n; i++ {
			y[first+i] = math.Float32frombits(binary.LittleEndian.Uint32(out[r.outOff[c]+4*i:]))
		}
	}
	return y
}

// TestReadsOnlyStagedBytes: the kernel sees the device views only. Without
// a sync it computes on zeros; after it, on the staged weights, equal to
// cpu.MatVec; writes to the host view after the sync change nothing.
func TestReadsOnlyStagedBytes(t *testing.T) {
	r := newRig(t)
	if err := r.d.Sync(r.ins, npu.ToDevice, 0, 4096); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Sync(r.act, npu.ToDevice, 0, r.dsn.RecordBytes()); err != nil {
		t.Fatal(err)
	}
	if err := r.run(t); err != nil {
		t.Fatal(err)
	}
	for i, v := range r.y(t) {
		if v != 0 {
			t.Fatalf("unsynced weights and records: y[%d] = %v, want 0", i, v)
		}
	}
	r.syncIn(t)
	clear(r.wHost) // after the sync: invisible to the device
	if err := r.run(t); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, r.g.N)
	cpu.MatVec(r.m, r.x, want, nil)
	for i, v := range r.y(t) {
		if v != want[i] {
			t.Fatalf("y[%d] = %v, cpu.MatVec %v", i, v, want[i])
		}
	}
}

// TestRunChecks: bad runs are refused at submission or end in ERROR with
// the reason; a descriptor for another format than the kernel's is refused.
func TestRunChecks(t *testing.T) {
	r := newRig(t)
	r.syncIn(t)
	if _, err := r.d.Run(r.k, 2, r.ins, r.words, r.w, r.act, r.out); err == nil {
		t.Error("opcode 2: no error")
	}
	if _, err := r.d.Run(r.k, npu.OpcodeTxn, r.ins, r.words, r.w, r.act); err == nil {
		t.Error("two data buffers: no error")
	}
	if _, err := r.d.Run(r.k, npu.OpcodeTxn, r.w, r.words, r.w, r.act, r.out); err == nil {
		t.Error("data buffer as instructions: no error")
	}
	if _, err := r.d.Run(9, npu.OpcodeTxn, r.ins, r.words, r.w, r.act, r.out); !errors.Is(err, npu.ErrHandle) {
		t.Errorf("bad kernel: %v", err)
	}
	// A header naming Q4_0: the design is a Q8_0 GEMV; its cores check.
	rec := r.dsn.RecordBytes()
	bad := r.h
	bad.Type = planar.Q4_0
	bad.Put(r.aHost[:rec])
	r.d.Sync(r.act, npu.ToDevice, 0, rec)
	var re *npu.RunError
	if err := r.run(t); !errors.As(err, &re) || re.State != npu.StateError || !strings.Contains(re.Msg, "header type is 2") {
		t.Errorf("wrong format: %v, want ERROR naming the header's type", err)
	}
	r.h.Put(r.aHost[:rec])
	r.d.Sync(r.act, npu.ToDevice, 0, rec)
	// An instruction count that is not the stream's.
	h, err := r.d.Run(r.k, npu.OpcodeTxn, r.ins, r.words+1, r.w, r.act, r.out)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.d.Wait(h, time.Second); !errors.As(err, &re) || !strings.Contains(re.Msg, "instruction words") {
		t.Errorf("ninstr off by one: %v, want ERROR naming the instruction count", err)
	}
	if err := r.run(t); err != nil {
		t.Errorf("the good stream after them: %v", err)
	}
}

// TestHangAndBusy: a hung run keeps its buffers busy, its Wait times out,
// the in-flight limit holds, and Close returns.
func TestHangAndBusy(t *testing.T) {
	r := newRig(t)
	r.syncIn(t)
	r.d.InjectFault(1, FaultTimeout)
	var runs []npu.Run
	for i := 0; i < 4; i++ {
		h, err := r.d.Run(r.k, npu.OpcodeTxn, r.ins, r.words, r.w, r.act, r.out)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, h)
	}
	if _, err := r.d.Run(r.k, npu.OpcodeTxn, r.ins, r.words, r.w, r.act, r.out); !errors.Is(err, npu.ErrInFlight) {
		t.Errorf("fifth run in flight: %v, want ErrInFlight", err)
	}
	if err := r.d.Wait(runs[0], 20*time.Millisecond); !errors.Is(err, npu.ErrTimeout) {
		t.Errorf("hung run: %v, want ErrTimeout", err)
	}
	if err := r.d.Sync(r.w, npu.ToDevice, 0, 64); !errors.Is(err, npu.ErrBusy) {
		t.Errorf("sync of a buffer a run uses: %v, want ErrBusy", err)
	}
	done := make(chan struct{})
	go func() { r.d.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs behind a hung run")
	}
}

// TestLoadKernel: bad xclbins, missing kernels, designs wider than the
// device, dedupe by UUID, and the context limit.
func TestLoadKernel(t *testing.T) {
	d := New(Config{Target: target.XDNA1, MaxContexts: 2})
	defer d.Close()
	x4, _ := XCLBin(planar.Q4_0, 128, 4)
	x8, _ := XCLBin(planar.Q4_0, 128, 8)
	if _, err := d.LoadKernel([]byte("xclbin2\x00garbage"), "MLIR_AIE"); err == nil {
		t.Error("garbage: no error")
	}
	if _, err := d.LoadKernel(x4, "OTHER"); err == nil {
		t.Error("missing kernel: no error")
	}
	if _, err := d.LoadKernel(x8, "MLIR_AIE"); err == nil {
		t.Error("8-column design on 4 columns: no error")
	}
	a, err := d.LoadKernel(x4, "MLIR_AIE")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := d.LoadKernel(x4, "MLIR_AIE"); b != a {
		t.Errorf("reload gave %v, want %v", b, a)
	}
	y, _ := XCLBin(planar.Q4_K, 256, 4)
	z, _ := XCLBin(planar.Q6_K, 256, 4)
	if _, err := d.LoadKernel(y, "MLIR_AIE"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.LoadKernel(z, "MLIR_AIE"); !errors.Is(err, npu.ErrContextLimit) {
		t.Errorf("third context of 2: %v", err)
	}
	if c := d.Counters(); c.Contexts != 2 {
		t.Errorf("%d contexts", c.Contexts)
	}
	// An xclbin without the emulator's marker (a real mlir-aie one): the
	// emulator runs designs, not AIE code, and says so.
	var uuid [16]byte
	uuid[0] = 7
	real, err := xclbin.NewNPU("MLIR_AIE", uuid, []byte("PDI bytes"), 4).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	d2 := New(XDNA1())
	defer d2.Close()
	if _, err := d2.LoadKernel(real, "MLIR_AIE"); err == nil || !strings.Contains(err.Error(), "names the design") {
		t.Errorf("mlir-aie-shaped xclbin: %v, want a refusal naming the missing design", err)
	}
	// A design the hardware could not hold (a K-tile whose pieces overflow
	// a core's memory) is refused at load, naming the tile.
	big, _ := XCLBin(planar.Q4_0, 4096, 4)
	if _, err := d2.LoadKernel(big, "MLIR_AIE"); !errors.Is(err, design.ErrDesign) || !strings.Contains(err.Error(), "memtile (0,1)") {
		t.Errorf("oversized design: %v, want ErrDesign naming the tile", err)
	}
	if b, _ := XCLBin(planar.Q4_0, 128, 4); string(b) != string(x4) {
		t.Error("XCLBin is not deterministic")
	}
}

// TestStandIns fills the slots a package does not embed, keeps the others,
// and refuses a slot whose tensors disagree on the format.
func TestStandIns(t *testing.T) {
	own, _ := XCLBin(planar.Q6_K, 256, 8)
	tensors := []layout.TensorEntry{
		{Name: "a", Type: "Q4_K", KTile: 256, Device: "npu", Slot: "q4k"},
		{Name: "b", Type: "Q4_K", KTile: 256, Device: "npu", Slot: "q4k"},
		{Name: "c", Type: "Q6_K", KTile: 256, Device: "npu", Slot: "q6k"},
		{Name: "d", Type: "F32", KTile: 8, Device: "cpu"},
	}
	slots, err := StandIns(tensors, []npu.Slot{{Name: "q6k", Kernel: "MLIR_AIE", XCLBin: own}, {Name: "q4k"}}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 2 || string(slots[0].XCLBin) != string(own) || slots[1].Name != "q4k" {
		t.Fatalf("slots %+v", slots)
	}
	want, _ := XCLBin(planar.Q4_K, 256, 8)
	if string(slots[1].XCLBin) != string(want) {
		t.Error("q4k stand-in is not the Q4_K GEMV")
	}
	tensors[1].Type = "Q5_K"
	if _, err := StandIns(tensors, nil, 8); err == nil {
		t.Error("mixed formats on one slot: no error")
	}
}

package emu

import (
	"errors"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// execRig returns the rig's stream decoded and its buffers' contents, for
// Execute without a Device.
func execRig(t *testing.T) (*rig, *txn.Stream, [][]byte) {
	t.Helper()
	r := newRig(t)
	s, err := txn.Decode(r.iHost[:4*r.words])
	if err != nil {
		t.Fatal(err)
	}
	args := [][]byte{append([]byte(nil), r.wHost...), append([]byte(nil), r.aHost...), make([]byte, 4*r.g.N)}
	return r, s, args
}

func (r *rig) cfg() ExecConfig {
	k, _ := GoKernels(r.g.Type, r.g.KTile)
	return ExecConfig{Gen: txn.NPU1, Columns: 4, Kernel: k}
}

// TestExecute: the rig's stream moves exactly what it says and computes
// cpu.MatVec bit for bit, and the counts are the builder's.
func TestExecute(t *testing.T) {
	r, _, args := execRig(t)
	w, cnt, err := r.gv.Build()
	if err != nil {
		t.Fatal(err)
	}
	st, err := Execute(txn.Bytes(w), args, r.cfg())
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, r.g.N)
	cpu.MatVec(r.m, r.x, want, nil)
	for i, v := range floats(args[2]) {
		if v != want[i] {
			t.Fatalf("y[%d] = %v, cpu.MatVec %v", i, v, want[i])
		}
	}
	if st.Words != cnt.Words || st.BDs != cnt.BDs || st.Patches != cnt.Patches || st.Pushes != cnt.Pushes ||
		st.Syncs != cnt.Syncs || st.WeightBytes != cnt.WeightBytes || st.ActBytes != cnt.ActBytes || st.OutBytes != cnt.OutBytes {
		t.Errorf("executed %+v, built %+v", st, cnt)
	}
	if st.KernelColumns != 4 || st.StreamingColumns != 2 {
		t.Errorf("kernel ran on %d columns, %d streamed; want 4 (the design) and 2", st.KernelColumns, st.StreamingColumns)
	}
}

// TestExecuteSplitBDs: runs split into chained BDs (a lowered BD limit)
// move the same bytes and give the same outputs.
func TestExecuteSplitBDs(t *testing.T) {
	r, _, args := execRig(t)
	gv := r.gv
	gv.MaxBDBytes = 128
	w, cnt, err := gv.Build()
	if err != nil {
		t.Fatal(err)
	}
	if cnt.BDs <= 6 {
		t.Fatalf("%d BDs: the limit split nothing", cnt.BDs)
	}
	if _, err := Execute(txn.Bytes(w), args, r.cfg()); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, r.g.N)
	cpu.MatVec(r.m, r.x, want, nil)
	for i, v := range floats(args[2]) {
		if v != want[i] {
			t.Fatalf("y[%d] = %v, cpu.MatVec %v", i, v, want[i])
		}
	}
	gv.MaxBDBytes = 4
	if _, _, err := gv.Build(); !errors.Is(err, txn.ErrLimit) {
		t.Errorf("a weight run needing more BDs than the design has: %v, want ErrLimit", err)
	}
}

// TestExecuteRefuses: every kind of wrong stream is a DeviceError naming
// the op and what is wrong, and writes no output.
func TestExecuteRefuses(t *testing.T) {
	type mut func(s *txn.Stream) *txn.Stream
	find := func(s *txn.Stream, pred func(op *txn.Op) bool) *txn.Op {
		for i := range s.Ops {
			if pred(&s.Ops[i]) {
				return &s.Ops[i]
			}
		}
		t.Fatal("no such op")
		return nil
	}
	isBD := func(id int) func(op *txn.Op) bool {
		return func(op *txn.Op) bool {
			_, i, w, ok := txn.ShimBDAt(op.Addr)
			return op.Code == txn.OpBlockWrite && ok && i == id && w == 0
		}
	}
	patchOf := func(id int) func(op *txn.Op) bool {
		return func(op *txn.Op) bool {
			_, i, _, ok := txn.ShimBDAt(op.Addr)
			return op.Code == txn.OpDDRPatch && ok && i == id
		}
	}
	isSync := func(op *txn.Op) bool { return op.Code == txn.OpSync }
	bdWord := func(id, word int, f func(uint32) uint32) mut {
		return func(s *txn.Stream) *txn.Stream {
			op := find(s, isBD(id))
			op.Words[word] = f(op.Words[word])
			return s
		}
	}
	without := func(pred func(op *txn.Op) bool) mut {
		return func(s *txn.Stream) *txn.Stream {
			var ops []txn.Op
			for i := range s.Ops {
				if !pred(&s.Ops[i]) {
					ops = append(ops, s.Ops[i])
				}
			}
			s.Ops = ops
			return s
		}
	}
	for _, c := range []struct {
		name string
		m    mut
		raw  func(w []uint32)
		cfg  func(*ExecConfig)
		want []string
	}{
		{name: "unknown op", raw: func(w []uint32) { w[4] = 0x77 }, want: []string{"op 0", "unknown opcode 0x77"}},
		{name: "other generation", raw: func(w []uint32) { w[0] = w[0]&^0xff0000 | 4<<16 }, want: []string{"header", "npu2", "the device is npu1"}},
		{name: "v1.0 stream", m: func(s *txn.Stream) *txn.Stream { s.Header.Version = txn.V10; return s }, want: []string{"version 1.0"}},
		{name: "BD index out of range", m: func(s *txn.Stream) *txn.Stream {
			find(s, isBD(txn.OutBD0)).Addr += 4 * txn.ShimBDStride
			return s
		}, want: []string{"blockwrite", "BD index 16 out of range"}},
		{name: "length past the buffer", m: bdWord(txn.WeightBD0, 0, func(v uint32) uint32 { return v + 1<<20 }), want: []string{"MM2S channel 0", "shim BD 0", "runs past the buffer"}},
		{name: "patch on a length word", m: func(s *txn.Stream) *txn.Stream {
			find(s, patchOf(txn.WeightBD0)).Addr -= 4
			return s
		}, want: []string{"ddr_patch", "word 0 (buffer_length)", "not an address word"}},
		{name: "arg_idx past the buffers", m: func(s *txn.Stream) *txn.Stream {
			find(s, patchOf(txn.WeightBD0)).ArgIdx = 3
			return s
		}, want: []string{"ddr_patch", "arg_idx 3", "3 buffers"}},
		{name: "arg_idx 5 without the fold", m: func(s *txn.Stream) *txn.Stream {
			find(s, patchOf(txn.WeightBD0)).ArgIdx = 5
			return s
		}, cfg: nil, want: []string{"arg_idx 5", "aperture"}},
		{name: "unpatched BD", m: without(patchOf(txn.WeightBD0)), want: []string{"shim BD 0", "never patched"}},
		{name: "invalid BD", m: bdWord(txn.OutBD0, 7, func(v uint32) uint32 { return v &^ (1 << 25) }), want: []string{"valid_bd is 0"}},
		{name: "lock on a shim BD", m: bdWord(txn.WeightBD0, 7, func(v uint32) uint32 { return v | 1<<12 }), want: []string{"lock"}},
		{name: "burst past the generation", m: bdWord(txn.WeightBD0, 4, func(v uint32) uint32 { return v | 3<<30 }), want: []string{"burst_length 3", "npu1 allows 0..2"}},
		{name: "no token", m: func(s *txn.Stream) *txn.Stream {
			op := find(s, func(op *txn.Op) bool { _, d, _, ok := txn.QueueAt(op.Addr); return ok && d == txn.S2MM })
			op.Value &^= 1 << 31
			return s
		}, want: []string{"sync", "issues no token", "hang"}},
		{name: "output never awaited", m: without(isSync), want: []string{"end of stream", "never waited for"}},
		{name: "sync with nothing pushed", m: without(func(op *txn.Op) bool { _, d, _, ok := txn.QueueAt(op.Addr); return ok && d == txn.S2MM }),
			want: []string{"sync", "no transfer is pending", "hang"}},
		{name: "memtile register", m: func(s *txn.Stream) *txn.Stream {
			s.Ops = append([]txn.Op{txn.Write32(txn.Addr(0, 1, 0xA0604), 1)}, s.Ops...)
			return s
		}, want: []string{"op 0 (write32)", "row 1", "memtile and core state come from the PDI"}},
		{name: "column past the design", cfg: func(c *ExecConfig) { c.Columns = 1 }, want: []string{"column 1 outside the 1-column design"}},
		{name: "weights short of the header", m: bdWord(txn.WeightBD0, 0, func(v uint32) uint32 { return v - 16 }), want: []string{"column 0 kernel", "weight stream"}},
	} {
		r, s, args := execRig(t)
		if c.m != nil {
			s = c.m(s)
		}
		w, err := txn.EncodeWords(s.Header, s.Ops)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.raw != nil {
			c.raw(w)
		}
		cfg := r.cfg()
		if c.cfg != nil {
			c.cfg(&cfg)
		}
		_, err = Execute(txn.Bytes(w), args, cfg)
		var de *DeviceError
		if !errors.As(err, &de) || !errors.Is(err, ErrDevice) {
			t.Errorf("%s: %v, want a DeviceError", c.name, err)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", c.name, err, want)
			}
		}
		if c.name != "output never awaited" {
			for i, v := range floats(args[2]) {
				if v != 0 {
					t.Errorf("%s: y[%d] = %v written by a refused stream", c.name, i, v)
					break
				}
			}
		}
	}
}

// TestStridedBD: a BD with d0/d1 wraps and strides reads the elements the
// addressing rule names (npu-contract.md 2.3), and a repeat with an
// iteration stride reads the next block.
func TestStridedBD(t *testing.T) {
	bd := txn.ShimBD{Length: 12, D0Wrap: 3, D0Step: 1, D1Wrap: 2, D1Step: 9, D2Step: 29, Valid: true}
	segs, err := walk(&bd, 8, 4096)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, s := range segs {
		for o := s.off; o < s.off+s.n; o += 4 {
			got = append(got, (o-8)/4)
		}
	}
	// i0 stride 2, i1 stride 10, i2 stride 30 (words).
	want := []int{0, 2, 4, 10, 12, 14, 30, 32, 34, 40, 42, 44}
	if len(got) != len(want) {
		t.Fatalf("words %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("words %v, want %v", got, want)
		}
	}
	bd.Length = 2000
	if _, err := walk(&bd, 8, 4096); err == nil || !strings.Contains(err.Error(), "past the buffer") {
		t.Errorf("strided transfer past the buffer: %v", err)
	}
}

// FuzzExecute: arbitrary streams against the rig's buffers never panic the
// emulator.
func FuzzExecute(f *testing.F) {
	r := newRig(&testing.T{})
	defer r.d.Close()
	f.Add(append([]byte(nil), r.iHost[:4*r.words]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		args := [][]byte{append([]byte(nil), r.wHost...), append([]byte(nil), r.aHost...), make([]byte, 4*r.g.N)}
		Execute(b, args, r.cfg())
	})
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = f32(b[4*i:])
	}
	return out
}

package emu

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu/gemv"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	"github.com/xdna-go/xdna/target"
)

// execRig returns the rig's stream decoded, its buffers' contents and a
// freshly loaded array of its design, for Execute without a Device.
func execRig(t *testing.T) (*rig, *txn.Stream, [][]byte, *Array) {
	t.Helper()
	r := newRig(t)
	s, err := txn.Decode(r.iHost[:4*r.words])
	if err != nil {
		t.Fatal(err)
	}
	args := [][]byte{append([]byte(nil), r.wHost...), append([]byte(nil), r.aHost...), make([]byte, r.size(r.out))}
	return r, s, args, r.array(t)
}

// array loads the rig's design with the Go model.
func (r *rig) array(t testing.TB) *Array {
	k, err := gemv.NewModel(r.dsn.Type, r.dsn.KTile, r.dsn.Rows)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewArray(r.dsn, k)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestExecute: the rig's stream moves exactly what it says and computes
// cpu.MatVec bit for bit, and the counts are the builder's.
func TestExecute(t *testing.T) {
	r, _, args, arr := execRig(t)
	w, cnt, err := r.gv.Build()
	if err != nil {
		t.Fatal(err)
	}
	st, err := arr.Execute(txn.Bytes(w), args, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, r.g.N)
	cpu.MatVec(r.m, r.x, want, nil)
	for i, v := range r.gather(args[2]) {
		if v != want[i] {
			t.Fatalf("y[%d] = %v, cpu.MatVec %v", i, v, want[i])
		}
	}
	if st.Words != cnt.Words || st.BDs != cnt.BDs || st.Patches != cnt.Patches || st.Pushes != cnt.Pushes ||
		st.Syncs != cnt.Syncs || st.WeightBytes != cnt.WeightBytes || st.ActBytes != cnt.ActBytes || st.OutBytes != cnt.OutBytes {
		t.Errorf("executed %+v, built %+v", st, cnt)
	}
	// Every core of the 4-column design took every activation object (the
	// header and each record: 16 cores x 3 objects of 192 bytes); the
	// cores of the 2 streaming columns made 2 calls each (2 K-tiles).
	a := st.Array
	if a.Written[target.Core] != int64(16*3*r.dsn.RecordBytes()+8*2*r.dsn.PieceBytes()) || a.Calls != 8*2 {
		t.Errorf("array: %d bytes into cores, %d calls; want %d and %d", a.Written[target.Core], a.Calls,
			16*3*r.dsn.RecordBytes()+8*2*r.dsn.PieceBytes(), 8*2)
	}
}

// TestExecuteSplitBDs: runs split into chained BDs (a lowered BD limit)
// move the same bytes and give the same outputs.
func TestExecuteSplitBDs(t *testing.T) {
	r, _, args, arr := execRig(t)
	gv := r.gv
	gv.MaxBDBytes = 4096
	w, cnt, err := gv.Build()
	if err != nil {
		t.Fatal(err)
	}
	if cnt.BDs <= 6 {
		t.Fatalf("%d BDs: the limit split nothing", cnt.BDs)
	}
	if _, err := arr.Execute(txn.Bytes(w), args, 0); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, r.g.N)
	cpu.MatVec(r.m, r.x, want, nil)
	for i, v := range r.gather(args[2]) {
		if v != want[i] {
			t.Fatalf("y[%d] = %v, cpu.MatVec %v", i, v, want[i])
		}
	}
	gv.MaxBDBytes = 1024
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
	r0 := newRig(t)
	for _, c := range []struct {
		name string
		m    mut
		raw  func(w []uint32)
		want []string
		// array: the refusal comes from the array after the first sync
		// began moving data, so other columns' outputs may be written.
		array bool
	}{
		{name: "unknown op", raw: func(w []uint32) { w[4] = 0x77 }, want: []string{"op 0", "unknown opcode 0x77"}},
		{name: "other generation", raw: func(w []uint32) { w[0] = w[0]&^0xff0000 | 4<<16 }, want: []string{"header", "npu2", "the device is npu1"}},
		{name: "v1.0 stream", m: func(s *txn.Stream) *txn.Stream { s.Header.Version = txn.V10; return s }, want: []string{"version 1.0"}},
		{name: "BD index out of range", m: func(s *txn.Stream) *txn.Stream {
			find(s, isBD(r0.dsn.Shim.OutBD0)).Addr += 4 * txn.ShimBDStride
			return s
		}, want: []string{"blockwrite", "BD index 16 out of range"}},
		{name: "length past the buffer", m: bdWord(r0.dsn.Shim.WeightBD0, 0, func(v uint32) uint32 { return v + 1<<20 }), want: []string{"MM2S channel 0", "shim BD 0", "runs past the buffer"}},
		{name: "patch on a length word", m: func(s *txn.Stream) *txn.Stream {
			find(s, patchOf(r0.dsn.Shim.WeightBD0)).Addr -= 4
			return s
		}, want: []string{"ddr_patch", "word 0 (buffer_length)", "not an address word"}},
		{name: "arg_idx past the buffers", m: func(s *txn.Stream) *txn.Stream {
			find(s, patchOf(r0.dsn.Shim.WeightBD0)).ArgIdx = 3
			return s
		}, want: []string{"ddr_patch", "arg_idx 3", "3 buffers"}},
		{name: "arg_idx 5 without the fold", m: func(s *txn.Stream) *txn.Stream {
			find(s, patchOf(r0.dsn.Shim.WeightBD0)).ArgIdx = 5
			return s
		}, want: []string{"arg_idx 5", "aperture"}},
		{name: "unpatched BD", m: without(patchOf(r0.dsn.Shim.WeightBD0)), want: []string{"shim BD 0", "never patched"}},
		{name: "invalid BD", m: bdWord(r0.dsn.Shim.OutBD0, 7, func(v uint32) uint32 { return v &^ (1 << 25) }), want: []string{"valid_bd is 0"}},
		{name: "lock on a shim BD", m: bdWord(r0.dsn.Shim.WeightBD0, 7, func(v uint32) uint32 { return v | 1<<12 }), want: []string{"lock"}},
		{name: "burst past the generation", m: bdWord(r0.dsn.Shim.WeightBD0, 4, func(v uint32) uint32 { return v | 3<<30 }), want: []string{"burst_length 3", "xdna1 allows 0..2"}},
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
		{name: "column past the header", m: func(s *txn.Stream) *txn.Stream { s.Header.NumCols = 1; return s }, want: []string{"column 1 outside the 4-column design (header: 1)"}},
		{name: "weights short of a piece", m: bdWord(r0.dsn.Shim.WeightBD0, 0, func(v uint32) uint32 { return v - 16 }),
			want: []string{"deadlock", "memtile (0,1) S2MM 0", "2112 of 2176 bytes moved", "core (0,5): at the acquire of w0_5"}, array: true},
		{name: "weights past the design", m: bdWord(r0.dsn.Shim.WeightBD0, 0, func(v uint32) uint32 { return v + 16 }),
			want: []string{"not at rest", "memtile (0,1) S2MM 0", "64 of 2176 bytes moved", "inside an object"}, array: true},
		{name: "a fifth push on a 4-deep queue", m: func(s *txn.Stream) *txn.Stream {
			i := 0
			for ; i < len(s.Ops); i++ {
				if c, d, _, ok := txn.QueueAt(s.Ops[i].Addr); ok && c == 0 && d == txn.MM2S && s.Ops[i].Value&15 == uint32(r0.dsn.Shim.HeaderBD) {
					break
				}
			}
			push := s.Ops[i]
			s.Ops = append(s.Ops[:i:i], append([]txn.Op{push, push, push, push}, s.Ops[i:]...)...)
			return s
		}, want: []string{"full task queue", "4 deep"}},
	} {
		_, s, args, arr := execRig(t)
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
		_, err = arr.Execute(txn.Bytes(w), args, 0)
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
		if c.name != "output never awaited" && !c.array {
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
	arr := r.array(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		args := [][]byte{append([]byte(nil), r.wHost...), append([]byte(nil), r.aHost...), make([]byte, r.size(r.out))}
		arr.Execute(b, args, 0)
	})
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

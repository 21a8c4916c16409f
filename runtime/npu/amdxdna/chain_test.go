package amdxdna_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
)

// TestSubmittedPacket reads, on its way to the driver, the packet the
// Device writes for a GEMV: the reference's START_CU layout with the
// instruction BO's device address and the TXN stream's word count, and
// EXEC_CMD args = {instruction BO, bo0, bo1, bo2}.
func TestSubmittedPacket(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m := randomMatrix(t, rng, planar.Q8_0, 100, 256, 64, 4)
	fk := amdxdnatest.New(amdxdnatest.XDNA1())
	h := &hooked{Kernel: fk}
	d, err := amdxdna.OpenWith(h, amdxdnatest.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	seen := 0
	h.hook = on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
		seen++
		p := k.Mem(fd, uint32(a.CmdHandles))
		args := unsafe.Slice((*uint32)(ptrOf(a.Args)), a.ArgCount)
		le := binary.LittleEndian
		instr := k.Mem(fd, args[0])
		sc, err := amdxdna.ParseStartCU(p)
		switch {
		case err != nil:
			t.Error(err)
		case le.Uint32(p) != 0x3000C001 || sc.CUMask != 1 || sc.Opcode != npu.OpcodeTxn || len(sc.Data) != 3:
			t.Errorf("packet %#x: %+v", le.Uint32(p), sc)
		case a.ArgCount != 4 || a.CmdCount != 1 || a.Type != 0:
			t.Errorf("exec %+v", *a)
		case sc.Instr < 0x4000000 || sc.Instr%amdxdna.DevAlign != 0:
			t.Errorf("instruction address %#x", sc.Instr)
		case instr == nil || le.Uint32(instr[12:])/4 != sc.Words:
			t.Errorf("ninstr %d, TXN header size %d bytes", sc.Words, le.Uint32(instr[12:]))
		}
	})
	b := backend(t, d, m, nil)
	y := make([]float32, m.G.N)
	b.MatVec("w", m, randomX(rng, m.G.K), y)
	if seen == 0 || b.Stats().NPUCalls != 1 {
		t.Fatalf("%d submissions, stats %+v", seen, b.Stats())
	}
}

// TestRunChain: the Backend's dispatches of each call go out as one
// ERT_CMD_CHAIN through Chaining, with the outputs of one submission per
// dispatch, and a failed chain ends in the one-warning CPU fallback.
func TestRunChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	m := randomMatrix(t, rng, planar.Q8_0, 1000, 2048, 256, 8)
	const tokens = 40 // 3 token groups of at most 16
	x := randomX(rng, tokens*m.G.K)
	run := func(chain bool, fault amdxdnatest.Fault) ([]float32, npu.Stats, amdxdnatest.Stats, string) {
		d, k := open(t, amdxdnatest.XDNA2())
		var dev npu.Device = d
		if chain {
			dev = amdxdna.NewChaining(d, 0)
		}
		if fault != amdxdnatest.FaultNone {
			k.InjectFault(1, fault)
		}
		var warn strings.Builder
		b := backend(t, dev, m, &warn)
		y := make([]float32, tokens*m.G.N)
		b.MatMat("w", m, x, y, tokens)
		st := b.Stats()
		b.Close()
		return y, st, k.Stats(), warn.String()
	}
	y1, s1, f1, _ := run(false, 0)
	y2, s2, f2, _ := run(true, 0)
	yc, _, _, _ := run(false, amdxdnatest.FaultError) // falls back to the CPU at once
	if !slices.Equal(y1, y2) {
		t.Error("chained outputs differ from one submission per dispatch")
	}
	if f1.Chains != 0 || f2.Chains == 0 || f2.Submissions >= f1.Submissions || f2.Commands != f1.Commands {
		t.Errorf("per dispatch %+v, chained %+v", f1, f2)
	}
	if s1.Dispatches != s2.Dispatches {
		t.Errorf("backend dispatches %d vs %d", s1.Dispatches, s2.Dispatches)
	}
	t.Logf("%d dispatches: %d submissions one by one, %d with chains (%d chains)", s1.Dispatches, f1.Submissions, f2.Submissions, f2.Chains)
	for _, f := range []amdxdnatest.Fault{amdxdnatest.FaultError, amdxdnatest.FaultHang} {
		y, st, fs, warn := run(true, f)
		if !slices.Equal(y, yc) || st.Faults != 1 || strings.Count(warn, "every later matmul on the CPU") != 1 {
			t.Errorf("fault %d in a chain: faults %d, warning %q, fake %+v", f, st.Faults, warn, fs)
		}
		t.Logf("fault %d in a chain: %s", f, strings.TrimSpace(warn))
	}
	if cs := cosine(y1, yc); cs < 0.9999 {
		t.Errorf("NPU vs CPU cosine %.6f", cs)
	}
}

// TestRunChainDirect submits a chain of dispatches through the Device and
// checks the limits it enforces before the driver sees them.
func TestRunChainDirect(t *testing.T) {
	d, _ := open(t, amdxdnatest.XDNA2())
	if _, err := d.RunChain(1, nil); err == nil {
		t.Error("empty chain accepted")
	}
	ins, _ := d.Alloc(npu.BOInstr, 4096)
	bo, _ := d.Alloc(npu.BOData, 4096)
	if _, err := d.RunChain(1, []amdxdna.Dispatch{{Opcode: 3, Instr: ins, Words: 4, Data: []npu.BO{bo}}}); !errors.Is(err, npu.ErrHandle) {
		t.Errorf("chain on no kernel: %v", err)
	}
}

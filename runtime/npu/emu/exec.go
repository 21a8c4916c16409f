package emu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// ColumnKernel is what the cores of one column compute in a dispatch: from
// the column's weight stream and the broadcast activation stream (the
// parameter header first) it writes the column's output stream into out,
// which is sized by the column's S2MM descriptors (nil when the stream
// drains none), and returns the bytes it produced. A column with no rows
// in the header produces nothing. The Go model (kernel.go) and the AIE
// kernel sources compiled for the host (package sim) implement it.
type ColumnKernel interface {
	RunColumn(col int, weights, acts, out []byte) (int, error)
}

// KernelFactory makes the kernel of a GEMV xclbin for weights of type typ
// in K-tiles of kTile; typ 0 with kTile 0 asks for a kernel of any format.
type KernelFactory func(typ planar.Type, kTile int) (ColumnKernel, error)

// ExecConfig is the device and design a stream executes on.
type ExecConfig struct {
	Gen     txn.Gen
	Columns int          // the design's width (AIE_PARTITION column_width), <= Gen.Columns()
	Kernel  ColumnKernel // what each column's cores compute
	Words   int          // the run's instruction count in words (0: not checked)
}

// ExecStats counts what a stream did.
type ExecStats struct {
	Ops, Words       int
	BDs, Patches     int // BD writes and address patches
	Pushes, Syncs    int
	WeightBytes      int64 // moved by MM2S channel 0 of the columns
	ActBytes         int64 // moved by the broadcast channel, repeats included
	OutBytes         int64 // written by the S2MM channels
	KernelColumns    int   // columns whose kernel ran
	StreamingColumns int   // columns that streamed weights
}

// Add adds o's counts to s.
func (s *ExecStats) Add(o ExecStats) {
	s.Ops += o.Ops
	s.Words += o.Words
	s.BDs += o.BDs
	s.Patches += o.Patches
	s.Pushes += o.Pushes
	s.Syncs += o.Syncs
	s.WeightBytes += o.WeightBytes
	s.ActBytes += o.ActBytes
	s.OutBytes += o.OutBytes
	s.KernelColumns += o.KernelColumns
	s.StreamingColumns += o.StreamingColumns
}

// ErrDevice is matched by every *DeviceError.
var ErrDevice = errors.New("device refused the stream")

// DeviceError is a stream the device refuses, or on which it would hang or
// move the wrong bytes: the op (its index and name, -1 for the header or
// the end of the stream) and what is wrong.
type DeviceError struct {
	Op   int
	Name string
	Msg  string
}

func (e *DeviceError) Error() string {
	switch {
	case e.Op < 0 && e.Name == "":
		return "txn: " + e.Msg
	case e.Op < 0:
		return fmt.Sprintf("txn %s: %s", e.Name, e.Msg)
	}
	return fmt.Sprintf("txn op %d (%s): %s", e.Op, e.Name, e.Msg)
}

// Is makes a DeviceError match ErrDevice.
func (e *DeviceError) Is(target error) bool { return target == ErrDevice }

// argBase is where the emulator "maps" buffer argument i: (i+1) << 40, so
// that an address names its argument and its offset (48-bit addresses, as
// on x86-64 with SVA).
func argBase(i int) uint64 { return uint64(i+1) << 40 }

const argMask = 1<<40 - 1

// foldArgs is the count of buffer arguments the firmware translates
// itself; from this index on, arg_plus carries the DDR aperture
// (npu-contract.md 1.6).
const (
	foldArgs    = 5
	ddrAperture = 0x80000000
)

type shimTile struct {
	regs    [txn.ShimBDs][txn.ShimBDWords]uint32
	written [txn.ShimBDs]bool // written by this stream
	patched [txn.ShimBDs]bool // word 1 holds a patched argument address
	mm2s    [txn.ShimChannels][]byte
	s2mm    [txn.ShimChannels]*dest
	ran     bool
	synced  bool
}

type seg struct {
	arg, off, n int
}

type dest struct {
	segs  []seg
	bytes int
	token bool
	op    int
}

type machine struct {
	cfg      ExecConfig
	args     [][]byte
	tiles    []shimTile
	st       ExecStats
	op       int
	name     string
	launched bool
	results  []result // per column, computed ahead by launch
}

// result is a column kernel's run, computed ahead of its sync.
type result struct {
	d   *dest
	out []byte
	n   int
	err error
}

func (m *machine) fail(format string, args ...any) error {
	return &DeviceError{Op: m.op, Name: m.name, Msg: fmt.Sprintf(format, args...)}
}

// Execute runs one TXN stream as the NPU firmware and the GEMV design would,
// against the data buffers args (args[i] is buffer argument i, the device
// view of bo<i>): it decodes the stream, keeps every shim BD's registers,
// applies the address patches, gathers each column's input streams from
// the buffers exactly as the DMA moves them (lengths, strides, wraps,
// repeats, BD chains), runs cfg.Kernel on every column of the design, and
// writes each column's outputs through its S2MM descriptors when the
// stream waits for their token. What the hardware refuses, or a stream
// that would hang or move bytes outside a buffer, is a *DeviceError naming
// the op; nothing is written to a buffer before the op that writes it.
func Execute(stream []byte, args [][]byte, cfg ExecConfig) (ExecStats, error) {
	m := &machine{cfg: cfg, args: args, op: -1, name: "header"}
	s, err := txn.Decode(stream)
	if err != nil {
		var fe *txn.FormatError
		if errors.As(err, &fe) {
			m.op, m.name = fe.Op, "decode"
			return m.st, m.fail("at byte %d: %s", fe.Offset, fe.Msg)
		}
		return m.st, m.fail("%v", err)
	}
	h := s.Header
	switch {
	case h.Version != txn.V01:
		return m.st, m.fail("version 1.0 (compact) stream: the device takes version 0.1")
	case h.DevGen != cfg.Gen:
		return m.st, m.fail("devGen %d: a stream for %v, the device is %v", h.DevGen, h.DevGen, cfg.Gen)
	case h.NumRows != txn.Rows:
		return m.st, m.fail("%d rows, %v has %d", h.NumRows, cfg.Gen, txn.Rows)
	case h.NumCols < 1 || int(h.NumCols) > cfg.Gen.Columns():
		return m.st, m.fail("%d columns, %v has %d", h.NumCols, cfg.Gen, cfg.Gen.Columns())
	case cfg.Words > 0 && cfg.Words != int(h.Size/4):
		return m.st, m.fail("the run passed %d instruction words, the header says %d bytes (%d words)", cfg.Words, h.Size, h.Size/4)
	}
	m.tiles = make([]shimTile, cfg.Columns)
	m.st.Words, m.st.Ops = int(h.Size/4), len(s.Ops)
	for i := range s.Ops {
		m.op, m.name = i, s.Ops[i].Name()
		if err := m.exec(&s.Ops[i], int(h.NumCols)); err != nil {
			return m.st, err
		}
	}
	m.op, m.name = -1, "end of stream"
	for c := range m.tiles {
		t := &m.tiles[c]
		for ch, d := range t.s2mm {
			if d != nil {
				return m.st, m.fail("column %d S2MM channel %d: the transfer pushed by op %d is never waited for", c, ch, d.op)
			}
		}
		if !t.ran {
			// Every column of the design receives the broadcast and runs;
			// one with rows must have had its outputs drained.
			if err := m.runKernel(c, nil); err != nil {
				return m.st, err
			}
		}
	}
	return m.st, nil
}

func (m *machine) exec(op *txn.Op, numCols int) error {
	switch op.Code {
	case txn.OpNoop:
		return nil
	case txn.OpWrite:
		return m.write(op.Addr, op.Value, numCols)
	case txn.OpMaskWrite:
		if err := m.tile(op.Addr, numCols); err != nil {
			return err
		}
		col, _, off := txn.SplitAddr(op.Addr)
		if !isCtrl(off) {
			return m.fail("register %#x (column %d offset %#x): the GEMV design's sequence mask-writes only channel control registers", op.Addr, col, off)
		}
		return nil
	case txn.OpBlockWrite:
		if err := m.tile(op.Addr, numCols); err != nil {
			return err
		}
		col, _, off := txn.SplitAddr(op.Addr)
		rel := int(off) - txn.ShimBDBase
		if rel < 0 || rel%txn.ShimBDStride != 0 || len(op.Words)%txn.ShimBDWords != 0 || len(op.Words) == 0 {
			return m.fail("blockwrite of %d words at offset %#x of column %d: the design writes whole shim BDs (8 words at %#x + 0x20*id, id < %d)",
				len(op.Words), off, col, txn.ShimBDBase, txn.ShimBDs)
		}
		id, n := rel/txn.ShimBDStride, len(op.Words)/txn.ShimBDWords
		if id+n > txn.ShimBDs {
			return m.fail("blockwrite of %d BDs from shim BD %d of column %d (offset %#x): BD index %d out of range, a shim tile has %d", n, id, col, off, id+n-1, txn.ShimBDs)
		}
		t := &m.tiles[col]
		for k := 0; k < n; k++ {
			copy(t.regs[id+k][:], op.Words[k*txn.ShimBDWords:])
			t.written[id+k], t.patched[id+k] = true, false
			m.st.BDs++
		}
		return nil
	case txn.OpDDRPatch:
		return m.patch(op, numCols)
	case txn.OpSync:
		return m.sync(op, numCols)
	}
	return m.fail("%s is not part of a GEMV runtime sequence", op.Name())
}

func isCtrl(off uint32) bool {
	return off >= txn.ShimCtrlBase && off <= txn.ShimCtrlBase+0x18 && (off-txn.ShimCtrlBase)%8 == 0
}

// tile checks that a register address lies in a shim tile of the design.
func (m *machine) tile(a uint32, numCols int) error {
	col, row, off := txn.SplitAddr(a)
	switch {
	case col >= numCols || col >= m.cfg.Columns:
		return m.fail("register %#x: column %d outside the %d-column design (header: %d)", a, col, m.cfg.Columns, numCols)
	case row != 0:
		return m.fail("register %#x: row %d offset %#x: the GEMV design's sequence writes only shim tiles (row 0); memtile and core state come from the PDI", a, row, off)
	}
	return nil
}

func (m *machine) write(a, v uint32, numCols int) error {
	if err := m.tile(a, numCols); err != nil {
		return err
	}
	col, _, off := txn.SplitAddr(a)
	if _, id, word, ok := txn.ShimBDAt(a); ok {
		t := &m.tiles[col]
		t.regs[id][word] = v
		t.written[id] = true
		if word == 1 {
			t.patched[id] = false
		}
		return nil
	}
	if c, dir, ch, ok := txn.QueueAt(a); ok {
		p, err := txn.DecodePush(v)
		if err != nil {
			return m.fail("column %d %s: %v", c, dirName(dir), err)
		}
		return m.push(c, dir, ch, p)
	}
	if isCtrl(off) {
		return nil
	}
	return m.fail("register %#x (column %d offset %#x) is not a shim BD, task queue or channel control register", a, col, off)
}

func dirName(d uint8) string {
	if d == txn.MM2S {
		return "MM2S"
	}
	return "S2MM"
}

func (m *machine) patch(op *txn.Op, numCols int) error {
	if err := m.tile(op.Addr, numCols); err != nil {
		return err
	}
	col, id, word, ok := txn.ShimBDAt(op.Addr)
	if !ok {
		_, _, off := txn.SplitAddr(op.Addr)
		return m.fail("patch target %#x (offset %#x): not a shim BD word", op.Addr, off)
	}
	if word != 1 {
		names := [...]string{"buffer_length", "base_address_low", "packet/base_address_high", "d0", "d1", "d2", "iteration", "control"}
		return m.fail("patch on word %d (%s) of shim BD %d of column %d: not an address word (word 1)", word, names[word], id, col)
	}
	t := &m.tiles[col]
	if !t.written[id] {
		return m.fail("patch of shim BD %d of column %d, which this stream has not written", id, col)
	}
	plus := op.ArgPlus
	if op.ArgIdx >= foldArgs {
		if plus&ddrAperture == 0 {
			return m.fail("arg_idx %d >= %d without the DDR aperture %#x folded into arg_plus %#x: the firmware would not translate it", op.ArgIdx, foldArgs, ddrAperture, plus)
		}
		plus -= ddrAperture
	}
	if op.ArgIdx >= uint64(len(m.args)) {
		return m.fail("arg_idx %d: the run passed %d buffers", op.ArgIdx, len(m.args))
	}
	if plus%4 != 0 || plus > uint64(len(m.args[op.ArgIdx])) {
		return m.fail("arg_plus %#x: outside bo%d of %d bytes or not 4-byte aligned", op.ArgPlus, op.ArgIdx, len(m.args[op.ArgIdx]))
	}
	a := argBase(int(op.ArgIdx)) + plus
	t.regs[id][1] = uint32(a)
	t.regs[id][2] = t.regs[id][2]&^0xFFFF | uint32(a>>32)&0xFFFF
	t.patched[id] = true
	m.st.Patches++
	return nil
}

// chain resolves the BD chain starting at id of column col into the
// segments one execution moves.
func (m *machine) chain(col int, id uint8, what string) ([]seg, int, *txn.ShimBD, error) {
	t := &m.tiles[col]
	var segs []seg
	total := 0
	var first *txn.ShimBD
	for hops := 0; ; hops++ {
		if hops == txn.ShimBDs {
			return nil, 0, nil, m.fail("column %d %s: the BD chain from BD %d loops", col, what, id)
		}
		if !t.written[id] {
			return nil, 0, nil, m.fail("column %d %s: shim BD %d was not written by this stream", col, what, id)
		}
		bd, err := txn.DecodeShimBD(t.regs[id])
		if err != nil {
			return nil, 0, nil, m.fail("column %d %s: shim BD %d: %v", col, what, id, err)
		}
		if first == nil {
			first = &bd
		}
		switch {
		case !bd.Valid:
			return nil, 0, nil, m.fail("column %d %s: shim BD %d: valid_bd is 0", col, what, id)
		case !t.patched[id]:
			return nil, 0, nil, m.fail("column %d %s: shim BD %d: base address %#x was never patched to a buffer argument", col, what, id, bd.Addr)
		case bd.LockAcqEn || bd.LockRelValue != 0 || bd.LockAcqValue != 0:
			return nil, 0, nil, m.fail("column %d %s: shim BD %d: lock fields set; the design's shim BDs use no locks", col, what, id)
		case bd.EnablePacket:
			return nil, 0, nil, m.fail("column %d %s: shim BD %d: enable_packet set; the design streams circuit-switched", col, what, id)
		case bd.Burst > m.cfg.Gen.MaxBurst():
			return nil, 0, nil, m.fail("column %d %s: shim BD %d: burst_length %d, %v allows 0..%d", col, what, id, bd.Burst, m.cfg.Gen, m.cfg.Gen.MaxBurst())
		case bd.Length == 0:
			return nil, 0, nil, m.fail("column %d %s: shim BD %d: buffer_length 0", col, what, id)
		}
		arg := int(bd.Addr>>40) - 1
		off := int(bd.Addr & argMask)
		if arg < 0 || arg >= len(m.args) {
			return nil, 0, nil, m.fail("column %d %s: shim BD %d: address %#x is in no buffer argument", col, what, id, bd.Addr)
		}
		ss, err := walk(&bd, off, len(m.args[arg]))
		if err != nil {
			return nil, 0, nil, m.fail("column %d %s: shim BD %d (bo%d, %d bytes): %v", col, what, id, arg, len(m.args[arg]), err)
		}
		for _, s := range ss {
			s.arg = arg
			segs = append(segs, s)
			total += s.n
		}
		if !bd.UseNextBD {
			return segs, total, first, nil
		}
		id = bd.NextBD
	}
}

// walk returns the byte ranges one execution of bd reads or writes, from
// byte off of a buffer of size bytes: Length words, addressed through the
// d0/d1/d2 wraps and strides (npu-contract.md 2.3), coalesced into runs.
func walk(bd *txn.ShimBD, off, size int) ([]seg, error) {
	n := int(bd.Length)
	if bd.Linear() {
		if off+4*n > size || off+4*n < off {
			return nil, fmt.Errorf("buffer_length %d words from byte %d runs past the buffer", n, off)
		}
		return []seg{{off: off, n: 4 * n}}, nil
	}
	if bd.D0Wrap == 0 {
		return nil, fmt.Errorf("d1_wrap %d with d0_wrap 0", bd.D1Wrap)
	}
	if n > 1<<26 {
		return nil, fmt.Errorf("a strided transfer of %d words", n)
	}
	s0, s1 := int(bd.D0Wrap), int(bd.D1Wrap)
	t0, t1, t2 := int(bd.D0Step)+1, int(bd.D1Step)+1, int(bd.D2Step)+1
	var out []seg
	for k := 0; k < n; k++ {
		i0, rest := k%s0, k/s0
		i1, i2 := rest, 0
		if s1 > 0 {
			i1, i2 = rest%s1, rest/s1
		} else {
			i1, i2 = 0, rest
			t2 = t1
		}
		a := off + 4*(i0*t0+i1*t1+i2*t2)
		if a < 0 || a+4 > size {
			return nil, fmt.Errorf("word %d of the transfer at byte %d, past the buffer", k, a)
		}
		if l := len(out); l > 0 && out[l-1].off+out[l-1].n == a {
			out[l-1].n += 4
		} else {
			out = append(out, seg{off: a, n: 4})
		}
	}
	return out, nil
}

func (m *machine) push(col int, dir, ch uint8, p txn.Push) error {
	m.st.Pushes++
	t := &m.tiles[col]
	what := fmt.Sprintf("%s channel %d", dirName(dir), ch)
	segs, total, bd, err := m.chain(col, p.BD, what)
	if err != nil {
		return err
	}
	if dir == txn.S2MM {
		if t.s2mm[ch] != nil {
			return m.fail("column %d %s: a second transfer before the first (op %d) was waited for", col, what, t.s2mm[ch].op)
		}
		if p.Repeat != 0 {
			return m.fail("column %d %s: repeat_count %d on an output transfer", col, what, p.Repeat)
		}
		if t.ran {
			return m.fail("column %d %s: the column's kernel already ran in this stream", col, what)
		}
		t.s2mm[ch] = &dest{segs: segs, bytes: total, token: p.Token, op: m.op}
		return nil
	}
	if p.Token {
		return m.fail("column %d %s: a token on an input transfer, which no sync of the design waits for", col, what)
	}
	if t.ran {
		return m.fail("column %d %s: input pushed after the column's kernel ran", col, what)
	}
	for r := 0; r <= int(p.Repeat); r++ {
		// Repeat r of the chain advances the first BD's iteration
		// dimension (stride-0 iteration = replay).
		shift := 4 * (r % (int(bd.IterWrap) + 1)) * (int(bd.IterStep) + 1)
		if bd.IterWrap == 0 {
			shift = 0
		}
		for _, s := range segs {
			a, b := s.off+shift, s.off+shift+s.n
			if b > len(m.args[s.arg]) {
				return m.fail("column %d %s: repeat %d reads past bo%d", col, what, r, s.arg)
			}
			t.mm2s[ch] = append(t.mm2s[ch], m.args[s.arg][a:b]...)
			if col == 0 && ch == txn.ActChannel {
				m.st.ActBytes += int64(s.n)
			} else {
				m.st.WeightBytes += int64(s.n)
			}
		}
	}
	return nil
}

func (m *machine) sync(op *txn.Op, numCols int) error {
	m.st.Syncs++
	col, ch := int(op.Col), op.Channel
	switch {
	case col >= numCols || col >= m.cfg.Columns:
		return m.fail("column %d outside the %d-column design", col, m.cfg.Columns)
	case op.Row != 0:
		return m.fail("sync on row %d: the design's tokens come from shim DMAs (row 0)", op.Row)
	case ch >= txn.ShimChannels:
		return m.fail("channel %d: a shim tile has %d per direction", ch, txn.ShimChannels)
	case op.ColNum != 1 || op.RowNum != 1:
		return m.fail("col_num %d row_num %d: mlir-aie's dma_wait waits on one tile (1, 1)", op.ColNum, op.RowNum)
	case op.Dir != txn.S2MM:
		return m.fail("sync on column %d MM2S channel %d: the design issues no input tokens; the run would hang", col, ch)
	}
	t := &m.tiles[col]
	d := t.s2mm[ch]
	switch {
	case d == nil:
		return m.fail("sync on column %d S2MM channel %d: no transfer is pending; the run would hang", col, ch)
	case !d.token:
		return m.fail("sync on column %d S2MM channel %d: the transfer pushed by op %d issues no token (enable_token_issue 0); the run would hang", col, ch, d.op)
	}
	if !m.launched {
		m.launch() // before this column's transfer leaves the table: it runs with the others
	}
	t.s2mm[ch] = nil
	return m.runKernel(col, d)
}

// launch runs, in parallel, the kernels of every column whose output
// transfer is pending when the stream first waits (its inputs are all
// pushed by then: a later push to a column is refused), as the columns of
// the array run concurrently; runKernel then takes each column's result.
func (m *machine) launch() {
	m.launched = true
	acts := m.tiles[0].mm2s[txn.ActChannel]
	if len(acts) == 0 {
		return
	}
	m.results = make([]result, len(m.tiles))
	var wg sync.WaitGroup
	for c := range m.tiles {
		d := m.tiles[c].s2mm[txn.OutChannel]
		if d == nil {
			continue // runKernel runs it at its sync, if it has one
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &m.results[c]
			r.d, r.out = d, make([]byte, d.bytes)
			r.n, r.err = m.cfg.Kernel.RunColumn(c, m.tiles[c].mm2s[txn.WeightChannel], acts, r.out)
		}()
	}
	wg.Wait()
}

// result returns column col's result computed ahead for dest d, if any.
func (m *machine) result(col int, d *dest) *result {
	if d == nil || col >= len(m.results) || m.results[col].d != d {
		return nil
	}
	return &m.results[col]
}

// runKernel runs column col's kernel on its input streams and writes its
// outputs through d (nil: the stream drains none).
func (m *machine) runKernel(col int, d *dest) error {
	t := &m.tiles[col]
	t.ran = true
	acts := m.tiles[0].mm2s[txn.ActChannel]
	if len(acts) == 0 {
		if d != nil || len(t.mm2s[txn.WeightChannel]) > 0 {
			return m.fail("column %d: no activation stream was pushed (shim 0 MM2S channel %d)", col, txn.ActChannel)
		}
		return nil
	}
	var out []byte
	var n int
	var err error
	if r := m.result(col, d); r != nil {
		out, n, err = r.out, r.n, r.err
	} else {
		if d != nil {
			out = make([]byte, d.bytes)
		}
		n, err = m.cfg.Kernel.RunColumn(col, t.mm2s[txn.WeightChannel], acts, out)
	}
	if err != nil {
		return m.fail("column %d kernel: %v", col, err)
	}
	if n != len(out) {
		return m.fail("column %d kernel produced %d output bytes, its S2MM descriptors take %d", col, n, len(out))
	}
	if len(t.mm2s[txn.WeightChannel]) > 0 {
		m.st.StreamingColumns++
	}
	m.st.KernelColumns++
	if d == nil {
		return nil
	}
	o := 0
	for _, s := range d.segs {
		copy(m.args[s.arg][s.off:s.off+s.n], out[o:o+s.n])
		o += s.n
	}
	m.st.OutBytes += int64(len(out))
	return nil
}

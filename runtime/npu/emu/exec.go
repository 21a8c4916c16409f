package emu

import (
	"errors"
	"fmt"

	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/txn"
	"github.com/xdna-go/xdna/target"
)

// ExecStats counts what a stream did.
type ExecStats struct {
	Ops, Words    int
	BDs, Patches  int // BD writes and address patches
	Pushes, Syncs int
	WeightBytes   int64 // moved by the weight channels of the shims
	ActBytes      int64 // moved by the activation channel, repeats included
	OutBytes      int64 // written by the output channels
	Array         ArrayStats
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
	s.Array.Add(o.Array)
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
	Err  error // the array's error behind it (a *DeadlockError, ...), if any
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

// Unwrap returns the array's error behind the refusal.
func (e *DeviceError) Unwrap() error { return e.Err }

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
}

type machine struct {
	a     *Array
	words int
	tiles []shimTile
	st    ExecStats
	op    int
	name  string
}

func (m *machine) fail(format string, args ...any) error {
	return &DeviceError{Op: m.op, Name: m.name, Msg: fmt.Sprintf(format, args...)}
}

// failErr is fail for an error of the array, which it wraps.
func (m *machine) failErr(err error) error {
	return &DeviceError{Op: m.op, Name: m.name, Msg: err.Error(), Err: err}
}

// Execute runs one TXN stream as the NPU firmware would on the array,
// against the data buffers args (args[i] is buffer argument i, the device
// view of bo<i>): it decodes the stream, keeps every shim BD's registers,
// applies the address patches, queues each push on its shim channel (whose
// bytes the array then moves through the design's routes, memory tiles and
// cores), and at each sync runs the array until the awaited channel's task
// has issued its token. At the end it lets the array come to rest and
// checks that it did (Array.quiesce). What the hardware refuses, or a
// stream on which it would hang or move bytes outside a buffer, is a
// *DeviceError naming the op, or a *DeadlockError; after any error the
// context is reloaded, as the firmware resets a context that failed.
func (a *Array) Execute(stream []byte, args [][]byte, words int) (ExecStats, error) {
	before := a.Stats()
	m := &machine{a: a, words: words, op: -1, name: "header"}
	a.args = args
	err := m.execute(stream)
	for _, c := range a.chans {
		if c.shim {
			if c.port.Dir == design.MM2S && c.port.Ch == a.d.Shim.ActCh && c.port.Col == a.d.Shim.ActCol {
				m.st.ActBytes += c.moved
			} else if c.port.Dir == design.MM2S {
				m.st.WeightBytes += c.moved
			} else {
				m.st.OutBytes += c.moved
			}
			c.moved = 0
		}
	}
	after := a.Stats()
	m.st.Array = diffStats(after, before)
	a.args = nil
	if err != nil {
		if rerr := a.load(a.d, a.kernel); rerr != nil {
			return m.st, fmt.Errorf("%w (and reloading the design failed: %v)", err, rerr)
		}
		return m.st, err
	}
	a.st.Dispatches++
	m.st.Array.Dispatches = 1
	return m.st, nil
}

func diffStats(a, b ArrayStats) ArrayStats {
	d := newArrayStats()
	for k, v := range a.Written {
		d.Written[k] = v - b.Written[k]
	}
	for k, v := range a.Read {
		d.Read[k] = v - b.Read[k]
	}
	for k, v := range a.LockOps {
		d.LockOps[k] = v - b.LockOps[k]
	}
	d.Calls = a.Calls - b.Calls
	return d
}

func (m *machine) execute(stream []byte) error {
	a := m.a
	gen := txn.Gen(a.d.Target.Gen)
	s, err := txn.Decode(stream)
	if err != nil {
		var fe *txn.FormatError
		if errors.As(err, &fe) {
			m.op, m.name = fe.Op, "decode"
			return m.fail("at byte %d: %s", fe.Offset, fe.Msg)
		}
		return m.fail("%v", err)
	}
	h := s.Header
	switch {
	case h.Version != txn.V01:
		return m.fail("version 1.0 (compact) stream: the device takes version 0.1")
	case h.DevGen != gen:
		return m.fail("devGen %d: a stream for %v, the device is %v", h.DevGen, h.DevGen, gen)
	case h.NumRows != txn.Rows:
		return m.fail("%d rows, %v has %d", h.NumRows, gen, txn.Rows)
	case h.NumCols < 1 || int(h.NumCols) > gen.Columns():
		return m.fail("%d columns, %v has %d", h.NumCols, gen, gen.Columns())
	case m.words > 0 && m.words != int(h.Size/4):
		return m.fail("the run passed %d instruction words, the header says %d bytes (%d words)", m.words, h.Size, h.Size/4)
	}
	m.tiles = make([]shimTile, a.d.Columns)
	m.st.Words, m.st.Ops = int(h.Size/4), len(s.Ops)
	for i := range s.Ops {
		m.op, m.name = i, s.Ops[i].Name()
		if err := m.exec(&s.Ops[i], int(h.NumCols)); err != nil {
			return err
		}
	}
	m.op, m.name = -1, "end of stream"
	for _, c := range a.chans {
		if c.shim && c.port.Dir == design.S2MM && (len(c.tasks) > 0 || c.tokens > 0) {
			return m.fail("%v: a transfer pushed by this stream is never waited for", c)
		}
	}
	if err := a.quiesce(); err != nil {
		return m.failErr(err)
	}
	return nil
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
			if err := m.inUse(col, id+k); err != nil {
				return err
			}
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

// inUse fails if shim BD id of col belongs to a task that has not finished:
// the channel reads a BD when it reaches it, so rewriting it changes a
// transfer in flight.
func (m *machine) inUse(col, id int) error {
	for _, c := range m.a.chans {
		if !c.shim || c.port.Col != col {
			continue
		}
		for _, t := range c.tasks {
			for _, b := range t.bds {
				if b == id {
					return m.fail("shim BD %d of column %d rewritten while the task pushed by op %d on %v still uses it", id, col, t.op, c)
				}
			}
		}
	}
	return nil
}

func isCtrl(off uint32) bool {
	return off >= txn.ShimCtrlBase && off <= txn.ShimCtrlBase+0x18 && (off-txn.ShimCtrlBase)%8 == 0
}

// tile checks that a register address lies in a shim tile of the design.
func (m *machine) tile(a uint32, numCols int) error {
	col, row, off := txn.SplitAddr(a)
	switch {
	case col >= numCols || col >= m.a.d.Columns:
		return m.fail("register %#x: column %d outside the %d-column design (header: %d)", a, col, m.a.d.Columns, numCols)
	case row != target.ShimRow:
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
		if err := m.inUse(col, id); err != nil {
			return err
		}
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
	if op.ArgIdx >= uint64(len(m.a.args)) {
		return m.fail("arg_idx %d: the run passed %d buffers", op.ArgIdx, len(m.a.args))
	}
	if plus%4 != 0 || plus > uint64(len(m.a.args[op.ArgIdx])) {
		return m.fail("arg_plus %#x: outside bo%d of %d bytes or not 4-byte aligned", op.ArgPlus, op.ArgIdx, len(m.a.args[op.ArgIdx]))
	}
	a := argBase(int(op.ArgIdx)) + plus
	t.regs[id][1] = uint32(a)
	t.regs[id][2] = t.regs[id][2]&^0xFFFF | uint32(a>>32)&0xFFFF
	t.patched[id] = true
	m.st.Patches++
	return nil
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
	what := fmt.Sprintf("%s channel %d", dirName(dir), ch)
	d := design.S2MM
	if dir == txn.MM2S {
		d = design.MM2S
	}
	c := m.a.shims[design.Port{Col: col, Row: target.ShimRow, Dir: d, Ch: int(ch)}]
	if c == nil {
		return m.fail("column %d %s: no flow of the design starts or ends there; the push would move bytes nobody takes", col, what)
	}
	segs, total, bd, ids, err := m.chain(col, p.BD, what)
	if err != nil {
		return err
	}
	if q := m.a.d.Target.ShimTile.TaskQueue; len(c.tasks) >= q {
		return m.fail("column %d %s: a push onto a full task queue (%d deep): the hardware drops it and whatever waits for it hangs", col, what, q)
	}
	task := &shimTask{token: p.Token, bds: ids, op: m.op}
	if d == design.S2MM {
		if p.Repeat != 0 {
			return m.fail("column %d %s: repeat_count %d on an output transfer", col, what, p.Repeat)
		}
		task.segs, task.bytes = segs, total
		c.tasks = append(c.tasks, task)
		return nil
	}
	if p.Token {
		return m.fail("column %d %s: a token on an input transfer, which no sync of the design waits for", col, what)
	}
	for r := 0; r <= int(p.Repeat); r++ {
		// Repeat r of the chain advances the first BD's iteration
		// dimension (stride-0 iteration = replay).
		shift := 4 * (r % (int(bd.IterWrap) + 1)) * (int(bd.IterStep) + 1)
		if bd.IterWrap == 0 {
			shift = 0
		}
		for _, s := range segs {
			if s.off+shift+s.n > len(m.a.args[s.arg]) {
				return m.fail("column %d %s: repeat %d reads past bo%d", col, what, r, s.arg)
			}
			task.segs = append(task.segs, seg{arg: s.arg, off: s.off + shift, n: s.n})
			task.bytes += s.n
		}
	}
	c.tasks = append(c.tasks, task)
	return nil
}

func (m *machine) sync(op *txn.Op, numCols int) error {
	m.st.Syncs++
	col, ch := int(op.Col), op.Channel
	switch {
	case col >= numCols || col >= m.a.d.Columns:
		return m.fail("column %d outside the %d-column design", col, m.a.d.Columns)
	case op.Row != 0:
		return m.fail("sync on row %d: the design's tokens come from shim DMAs (row 0)", op.Row)
	case ch >= txn.ShimChannels:
		return m.fail("channel %d: a shim tile has %d per direction", ch, txn.ShimChannels)
	case op.ColNum != 1 || op.RowNum != 1:
		return m.fail("col_num %d row_num %d: mlir-aie's dma_wait waits on one tile (1, 1)", op.ColNum, op.RowNum)
	case op.Dir != txn.S2MM:
		return m.fail("sync on column %d MM2S channel %d: the design issues no input tokens; the run would hang", col, ch)
	}
	c := m.a.shims[design.Port{Col: col, Row: target.ShimRow, Dir: design.S2MM, Ch: int(ch)}]
	if c == nil {
		return m.fail("sync on column %d S2MM channel %d: no flow of the design ends there; the run would hang", col, ch)
	}
	if c.tokens == 0 {
		tok := false
		for _, t := range c.tasks {
			tok = tok || t.token
		}
		if !tok {
			if len(c.tasks) == 0 {
				return m.fail("sync on column %d S2MM channel %d: no transfer is pending; the run would hang", col, ch)
			}
			return m.fail("sync on column %d S2MM channel %d: the transfer pushed by op %d issues no token (enable_token_issue 0); the run would hang", col, ch, c.tasks[0].op)
		}
		if _, err := m.a.run(func() bool { return c.tokens > 0 }); err != nil {
			if errors.Is(err, errStuck) {
				return m.failErr(m.a.deadlock(fmt.Sprintf("the token of %v", c)))
			}
			return m.failErr(err)
		}
	}
	c.tokens--
	return nil
}

// chain resolves the BD chain starting at id of column col into the
// segments one execution moves, its first BD and the ids it reads.
func (m *machine) chain(col int, id uint8, what string) ([]seg, int, *txn.ShimBD, []int, error) {
	t := &m.tiles[col]
	var segs []seg
	var ids []int
	total := 0
	var first *txn.ShimBD
	for hops := 0; ; hops++ {
		if hops == txn.ShimBDs {
			return nil, 0, nil, nil, m.fail("column %d %s: the BD chain from BD %d loops", col, what, id)
		}
		if !t.written[id] {
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d was not written by this stream", col, what, id)
		}
		bd, err := txn.DecodeShimBD(t.regs[id])
		if err != nil {
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d: %v", col, what, id, err)
		}
		if first == nil {
			first = &bd
		}
		switch {
		case !bd.Valid:
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d: valid_bd is 0", col, what, id)
		case !t.patched[id]:
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d: base address %#x was never patched to a buffer argument", col, what, id, bd.Addr)
		case bd.LockAcqEn || bd.LockRelValue != 0 || bd.LockAcqValue != 0:
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d: lock fields set; the design's shim BDs use no locks", col, what, id)
		case bd.EnablePacket:
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d: enable_packet set; the design streams circuit-switched", col, what, id)
		case bd.Burst > m.a.d.Target.MaxBurst:
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d: burst_length %d, %s allows 0..%d", col, what, id, bd.Burst, m.a.d.Target.Name, m.a.d.Target.MaxBurst)
		case bd.Length == 0:
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d: buffer_length 0", col, what, id)
		}
		arg := int(bd.Addr>>40) - 1
		off := int(bd.Addr & argMask)
		if arg < 0 || arg >= len(m.a.args) {
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d: address %#x is in no buffer argument", col, what, id, bd.Addr)
		}
		ss, err := walk(&bd, off, len(m.a.args[arg]))
		if err != nil {
			return nil, 0, nil, nil, m.fail("column %d %s: shim BD %d (bo%d, %d bytes): %v", col, what, id, arg, len(m.a.args[arg]), err)
		}
		for _, s := range ss {
			s.arg = arg
			segs = append(segs, s)
			total += s.n
		}
		ids = append(ids, int(id))
		if !bd.UseNextBD {
			return segs, total, first, ids, nil
		}
		id = bd.NextBD
	}
}

package txn

import (
	"errors"
	"fmt"
)

// ShimMap is which shim channels and BDs a design's instruction streams
// drive (package design fills it; columns are partition-relative, and the
// BD ranges are the stream's budget of each shim tile's 16).
type ShimMap struct {
	// Weights of dispatch column c: shim (c, 0) MM2S channel WeightCh,
	// BDs WeightBD0.. chained when a run needs several.
	WeightCh, WeightBD0, WeightBDs int
	// Activations, broadcast to every core: shim (ActCol, 0) MM2S channel
	// ActCh; BD HeaderBD carries the header object, BDs RecordBD0.. the
	// records (replayed once per row block).
	ActCol, ActCh, HeaderBD, RecordBD0, RecordBDs int
	// Outputs of column c: shim (c, 0) S2MM channel OutCh, BDs OutBD0..
	// chained, pushed with a task-complete token the stream waits for.
	OutCh, OutBD0, OutBDs int
}

// Buffer arguments of the GEMV kernel (arg_idx of the patches).
const (
	ArgWeights = 0
	ArgActs    = 1
	ArgOuts    = 2
)

// MaxBDBytes is the most one shim BD moves: buffer_length is 32 bits of
// words; kept to a 64-byte multiple so that split pieces stay aligned.
const MaxBDBytes = (1<<32 - 1) * 4 &^ 63

// ErrLimit reports a dispatch that the hardware limits cannot carry in one
// stream (too many BDs for a shim tile, a repeat count past 8 bits, ...).
var ErrLimit = errors.New("beyond the hardware limits")

// Range is a byte range of a buffer argument.
type Range struct{ Off, Bytes int }

// GEMV is the data placement of one GEMV dispatch.
type GEMV struct {
	Gen        Gen
	Map        ShimMap
	Weights    []Range // per dispatch column, in arg 0; Bytes 0: the column streams no weights
	Header     Range   // the header object in arg 1
	Records    Range   // activation records in arg 1
	Replays    int     // times the records are streamed (1..MaxReplays)
	Outs       []Range // per dispatch column, in arg 2; Bytes 0: no outputs
	MaxBDBytes int     // split BDs above this many bytes (0: MaxBDBytes); tests lower it
}

// MaxReplays is the most times one stream replays the records: the
// repeat count is 8 bits (256 runs a push) and the records take at most
// 3 pushes of the channel's 4-deep task queue (the header the 4th).
const MaxReplays = 3 * 256

// Counts is what a stream holds, by kind.
type Counts struct {
	Words, Ops       int
	BDs, Patches     int
	Pushes, Syncs    int
	WeightBytes      int64 // bytes the weight BDs move
	ActBytes         int64 // bytes the activation BDs move, repeats included
	OutBytes         int64 // bytes the output BDs move
	HeaderBytes      int64
	ColumnsStreaming int
}

// pieces splits r into BD-sized pieces.
func pieces(r Range, limit int) []Range {
	var out []Range
	for off, n := r.Off, r.Bytes; n > 0; {
		k := min(n, limit)
		out = append(out, Range{off, k})
		off += k
		n -= k
	}
	return out
}

// Build returns the TXN stream of the dispatch, and what it holds. For
// every used column it writes the output BDs and the weight BDs with their
// address patches; the activation column also gets the header and record
// BDs. Then it pushes the outputs (with tokens), the header, the records
// (in pushes of at most 256 repeats) and the weights, and waits for every
// output's token.
func (g *GEMV) Build() ([]uint32, Counts, error) {
	var cnt Counts
	cols := g.Gen.Columns()
	m := g.Map
	if len(g.Weights) != len(g.Outs) || len(g.Weights) < 1 || len(g.Weights) > cols {
		return nil, cnt, fmt.Errorf("txn: gemv: %d weight and %d output ranges on a %d-column %v", len(g.Weights), len(g.Outs), cols, g.Gen)
	}
	if g.Replays < 1 || g.Replays > MaxReplays {
		return nil, cnt, fmt.Errorf("txn: gemv: %d record replays: at most %d (3 pushes of 256 repeats): %w", g.Replays, MaxReplays, ErrLimit)
	}
	if m.ActCol < 0 || m.ActCol >= len(g.Weights) {
		return nil, cnt, fmt.Errorf("txn: gemv: the activation column %d is outside the dispatch's %d", m.ActCol, len(g.Weights))
	}
	limit := g.MaxBDBytes
	if limit <= 0 {
		limit = MaxBDBytes
	}
	check := func(what string, r Range) error {
		if r.Off < 0 || r.Bytes < 0 || r.Off%4 != 0 || r.Bytes%4 != 0 {
			return fmt.Errorf("txn: gemv: %s [%d, +%d): offsets and lengths are whole words", what, r.Off, r.Bytes)
		}
		return nil
	}
	if g.Header.Bytes <= 0 {
		return nil, cnt, fmt.Errorf("txn: gemv: an empty header object")
	}
	ops := make([]Op, 0, 8*len(g.Weights)+8)
	// bds writes the chain of BDs first.. for r, patched on arg.
	bds := func(col int, first, budget int, r Range, arg int, what string) error {
		if err := check(what, r); err != nil {
			return err
		}
		ps := pieces(r, limit)
		if len(ps) > budget {
			return fmt.Errorf("txn: gemv: column %d %s of %d bytes needs %d BDs, the design has %d: %w", col, what, r.Bytes, len(ps), budget, ErrLimit)
		}
		for i, p := range ps {
			bd := ShimBD{Length: uint32(p.Bytes / 4), Burst: g.Gen.MaxBurst(), AxCache: 2, Valid: true}
			if i+1 < len(ps) {
				bd.UseNextBD, bd.NextBD = true, uint8(first+i+1)
			}
			w := bd.Words()
			a := ShimBDAddr(col, first+i)
			ops = append(ops, BlockWrite(a, w[:]...), Patch(a+4, arg, uint64(p.Off)))
			cnt.BDs++
			cnt.Patches++
		}
		return nil
	}
	for c := range g.Weights {
		if o := g.Outs[c]; o.Bytes > 0 {
			if err := bds(c, m.OutBD0, m.OutBDs, o, ArgOuts, "outputs"); err != nil {
				return nil, cnt, err
			}
			cnt.OutBytes += int64(o.Bytes)
		}
		if w := g.Weights[c]; w.Bytes > 0 {
			if err := bds(c, m.WeightBD0, m.WeightBDs, w, ArgWeights, "weights"); err != nil {
				return nil, cnt, err
			}
			cnt.WeightBytes += int64(w.Bytes)
			cnt.ColumnsStreaming++
		}
	}
	if err := bds(m.ActCol, m.HeaderBD, 1, g.Header, ArgActs, "header object"); err != nil {
		return nil, cnt, err
	}
	if g.Records.Bytes > 0 {
		if err := bds(m.ActCol, m.RecordBD0, m.RecordBDs, g.Records, ArgActs, "activation records"); err != nil {
			return nil, cnt, err
		}
	}
	cnt.HeaderBytes = int64(g.Header.Bytes)
	cnt.ActBytes = int64(g.Header.Bytes) + int64(g.Replays)*int64(g.Records.Bytes)
	push := func(col int, dir uint8, ch int, p Push) {
		ops = append(ops, Write32(QueueAddr(col, dir, uint8(ch)), p.Word()))
		cnt.Pushes++
	}
	for c, o := range g.Outs {
		if o.Bytes > 0 {
			push(c, S2MM, m.OutCh, Push{BD: uint8(m.OutBD0), Token: true})
		}
	}
	push(m.ActCol, MM2S, m.ActCh, Push{BD: uint8(m.HeaderBD)})
	if g.Records.Bytes > 0 {
		for left := g.Replays; left > 0; left -= 256 {
			push(m.ActCol, MM2S, m.ActCh, Push{BD: uint8(m.RecordBD0), Repeat: uint8(min(left, 256) - 1)})
		}
	}
	for c, w := range g.Weights {
		if w.Bytes > 0 {
			push(c, MM2S, m.WeightCh, Push{BD: uint8(m.WeightBD0)})
		}
	}
	for c, o := range g.Outs {
		if o.Bytes > 0 {
			ops = append(ops, Sync(c, 0, S2MM, uint8(m.OutCh)))
			cnt.Syncs++
		}
	}
	w, err := EncodeWords(NewHeader(g.Gen), ops)
	if err != nil {
		return nil, cnt, err
	}
	cnt.Words, cnt.Ops = len(w), len(ops)
	return w, cnt, nil
}

// GEMVWords is the length in words of the stream Build writes for a
// dispatch whose used columns stream weights and outputs that each fit one
// BD: the cost model's count, checked against Build by the tests.
func GEMVWords(columns, recordPushes int) int {
	const bd = 4 + ShimBDWords + patchWords01 // one BD and its patch
	return 4 +                                // header
		columns*(2*bd) + 2*bd + // weight and output BDs per column; header and record BDs
		(2*columns+1+recordPushes)*writeWords01 + // pushes
		columns*syncWords
}

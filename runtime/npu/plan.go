package npu

import (
	"errors"
	"fmt"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// ErrTooLarge reports a matrix that a dispatch cannot carry: one of its
// tiles does not fit in a staging buffer, or a column group has more row
// blocks than a stream can replay the records for. It runs on the CPU.
var ErrTooLarge = errors.New("too large for a dispatch")

// Chunk is the part of a matrix staged into one ring buffer: K-tiles
// [Tile0, Tile0+Tiles) of column groups [Group0, Group0+Groups). Each
// group's share is one contiguous weight run in the design's order (its
// row blocks, each K-tile, each core's piece: design.Design), and the runs
// lie back to back in the buffer.
type Chunk struct {
	Group0, Groups int
	Tile0, Tiles   int
	Bytes          int // staged bytes, the sum of the runs
}

// StagedTileBytes is the bytes one K-tile of a column group of rows rows
// takes in a weight run: a piece per core per row block, zero rows past
// the group's end.
func StagedTileBytes(d *design.Design, rows int) int {
	return d.Blocks(rows) * d.Cores() * d.PieceBytes()
}

// PlanChunks splits the matrix g into the chunks that stream it through
// staging buffers of ringSize bytes, in the order they are dispatched, for
// design d.
//
// When one K-tile of every group fits (the usual case), every chunk holds
// all groups, so every run keeps every column busy, and the tiles are split
// into the fewest chunks of near-equal size: a matrix that fits in one
// buffer is one chunk, one dispatch. Otherwise the groups are cut into
// consecutive runs of near-equal count, as many runs as give the fewest
// chunks, and each run is split by tiles in the same way. A single group's
// tile larger than the buffer, or a group of more row blocks than a stream
// replays the records for (txn.MaxReplays), is ErrTooLarge.
func PlanChunks(d *design.Design, g planar.Geometry, ringSize int) ([]Chunk, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	if g.Type != d.Type || g.KTile != d.KTile {
		return nil, fmt.Errorf("npu: a %s matrix in tiles of %d on design %s", g.Type, g.KTile, d.Name())
	}
	if g.Columns > d.Columns {
		return nil, fmt.Errorf("npu: packed for %d columns, design %s is %d wide", g.Columns, d.Name(), d.Columns)
	}
	var tb []int
	for c := 0; c < g.Columns; c++ {
		_, n := g.GroupRows(c)
		if n == 0 {
			break
		}
		if b := d.Blocks(n); b > txn.MaxReplays {
			return nil, fmt.Errorf("%w: group %d of %d rows is %d row blocks, a stream replays the records at most %d times", ErrTooLarge, c, n, b, txn.MaxReplays)
		}
		b := StagedTileBytes(d, n)
		if b > ringSize {
			return nil, fmt.Errorf("%w: group %d tile of %d bytes, buffer of %d", ErrTooLarge, c, b, ringSize)
		}
		tb = append(tb, b)
	}
	tiles := g.Tiles()
	// split returns the runs for r runs, or nil if one does not fit.
	split := func(r int) []Chunk {
		var out []Chunk
		for i := 0; i < r; i++ {
			c0, c1 := i*len(tb)/r, (i+1)*len(tb)/r
			per := 0
			for _, b := range tb[c0:c1] {
				per += b
			}
			if per > ringSize {
				return nil
			}
			tp := min(tiles, ringSize/per)
			nch := (tiles + tp - 1) / tp
			for j := 0; j < nch; j++ {
				t0, t1 := j*tiles/nch, (j+1)*tiles/nch
				out = append(out, Chunk{Group0: c0, Groups: c1 - c0, Tile0: t0, Tiles: t1 - t0, Bytes: (t1 - t0) * per})
			}
		}
		return out
	}
	var best []Chunk
	for r := 1; r <= len(tb); r++ {
		if c := split(r); c != nil && (best == nil || len(c) < len(best)) {
			best = c
		}
	}
	return best, nil
}

// ioLayout is where the dispatches of one group of tokens put their
// header objects and activation records (bo1) and their outputs (bo2).
type ioLayout struct {
	act, out int // bytes of bo1 and bo2 used
	d        []ioDispatch
}

// ioDispatch is one dispatch: chunk ci, tokens [s0, s0+ts) of the group.
type ioDispatch struct {
	ci, s0, ts int
	hdr        int   // header object offset in bo1; the records follow it
	outs       []int // output offset of each dispatch column in bo2
}

// planIO lays out the dispatches of tb tokens over chunks: every chunk is
// run once per MaxTokens tokens; each dispatch's header and records, and
// each of its columns' outputs, start on 64 bytes.
func planIO(d *design.Design, g planar.Geometry, chunks []Chunk, tb int, l *ioLayout) {
	rec := d.RecordBytes()
	*l = ioLayout{d: l.d[:0]} // the dispatches' outs slices are reused: no allocation per call
	for ci, ch := range chunks {
		for s0 := 0; s0 < tb; s0 += MaxTokens {
			ts := min(MaxTokens, tb-s0)
			var outs []int
			if len(l.d) < cap(l.d) {
				outs = l.d[:len(l.d)+1][len(l.d)].outs[:0]
			}
			dp := ioDispatch{ci: ci, s0: s0, ts: ts, hdr: l.act}
			l.act += rec + ch.Tiles*ts*rec
			for c := ch.Group0; c < ch.Group0+ch.Groups; c++ {
				_, rows := g.GroupRows(c)
				outs = append(outs, l.out)
				l.out += align64(outBytes(d, rows, ts))
			}
			dp.outs = outs
			l.d = append(l.d, dp)
		}
	}
}

// outBytes is a column's outputs for ts tokens: per row block, per token,
// the block's rows (design.Design).
func outBytes(d *design.Design, rows, ts int) int { return 4 * d.Blocks(rows) * ts * d.BlockRows() }

// ioTokens returns the most tokens, at least 1 and at most n, whose
// activations and outputs fit in I/O buffers of ioSize bytes.
func ioTokens(d *design.Design, g planar.Geometry, chunks []Chunk, ioSize, n int) int {
	var l ioLayout
	tb := 1
	for ; tb < n; tb++ {
		planIO(d, g, chunks, tb+1, &l)
		if l.act > ioSize || l.out > ioSize {
			break
		}
	}
	return tb
}

// Counts is what the dispatches of one call move and hold: the launches,
// their TXN words and shim BDs, and the bytes each shim channel kind
// carries (weights with their padding rows, activations with the header
// and the replays, outputs with their padding rows).
type Counts struct {
	Dispatches, Words, BDs int
	WeightBytes            int64
	ActBytes, OutBytes     int64
	// The design's predicted time of the dispatches on the array, summed:
	// per dispatch its busiest weight channel, the activation broadcast,
	// its busiest output channel and its busiest core (design.Timing).
	Timing design.Timing
}

// StreamCounts returns the Counts of the dispatches the Backend submits
// for one call of tokens tokens on g over design d, with staging buffers
// of ringSize and I/O buffers of ioSize bytes (0: the defaults): the tokens
// go in groups that fit the I/O buffers, each group streams every chunk,
// and each chunk is run once per MaxTokens tokens of the group.
func StreamCounts(d *design.Design, g planar.Geometry, tokens, ringSize, ioSize int) (Counts, error) {
	var cnt Counts
	ringSize, ioSize = orDefault(ringSize, DefaultRingSize), orDefault(ioSize, DefaultIOSize)
	chunks, err := PlanChunks(d, g, ringSize)
	if err != nil {
		return cnt, err
	}
	per := ioTokens(d, g, chunks, ioSize, tokens)
	var l ioLayout
	for t0 := 0; t0 < tokens; t0 += per {
		planIO(d, g, chunks, min(per, tokens-t0), &l)
		for _, dp := range l.d {
			ch := chunks[dp.ci]
			blocks := 0
			var rows []int
			var wmax, omax int64
			for c := ch.Group0; c < ch.Group0+ch.Groups; c++ {
				_, n := g.GroupRows(c)
				rows = append(rows, n)
				blocks = max(blocks, d.Blocks(n))
				cnt.OutBytes += int64(outBytes(d, n, dp.ts))
				wmax = max(wmax, int64(ch.Tiles*StagedTileBytes(d, n)))
				omax = max(omax, int64(outBytes(d, n, dp.ts)))
			}
			h := d.NewHeader(ch.Tiles, dp.ts, rows)
			tm := d.Predict(&h, wmax, omax)
			cnt.Timing.Weights += tm.Weights
			cnt.Timing.Acts += tm.Acts
			cnt.Timing.Outs += tm.Outs
			cnt.Timing.Compute += tm.Compute
			pushes := (blocks + 255) / 256
			cnt.Dispatches++
			cnt.Words += txn.GEMVWords(ch.Groups, pushes)
			cnt.BDs += 2*ch.Groups + 2
			cnt.WeightBytes += int64(ch.Bytes)
			cnt.ActBytes += int64(d.RecordBytes() + blocks*ch.Tiles*dp.ts*d.RecordBytes())
		}
	}
	return cnt, nil
}

// Dispatches returns the kernel runs of StreamCounts.
func Dispatches(d *design.Design, g planar.Geometry, tokens, ringSize, ioSize int) (int, error) {
	c, err := StreamCounts(d, g, tokens, ringSize, ioSize)
	return c.Dispatches, err
}

func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

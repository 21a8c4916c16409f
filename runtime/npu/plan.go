package npu

import (
	"errors"
	"fmt"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// ErrTooLarge reports a matrix one of whose tiles does not fit in a staging
// buffer; it runs on the CPU.
var ErrTooLarge = errors.New("tile larger than a staging buffer")

// Chunk is the part of a matrix staged into one ring buffer: K-tiles
// [Tile0, Tile0+Tiles) of column groups [Group0, Group0+Groups). Each
// group's share is one contiguous run of the planar blob, and the runs lie
// back to back in the buffer (every run is a multiple of 64 bytes).
type Chunk struct {
	Group0, Groups int
	Tile0, Tiles   int
	Bytes          int // staged bytes, the sum of the runs
}

// PlanChunks splits the matrix g into the chunks that stream it through
// staging buffers of ringSize bytes, in the order they are dispatched.
//
// When one K-tile of every group fits (the usual case), every chunk holds
// all groups, so every run keeps every column busy, and the tiles are split
// into the fewest chunks of near-equal size: a matrix that fits in one
// buffer is one chunk, one dispatch. Otherwise the groups are cut into
// consecutive runs of near-equal count, as many runs as give the fewest
// chunks, and each run is split by tiles in the same way. A single group's
// tile larger than the buffer is ErrTooLarge.
func PlanChunks(g planar.Geometry, ringSize int) ([]Chunk, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	// Per-tile bytes of the non-empty groups (empty ones, past the last row,
	// are at the end).
	var tb []int
	for c := 0; c < g.Columns; c++ {
		_, n := g.GroupRows(c)
		if n == 0 {
			break
		}
		b := StagedTileBytes(g, n)
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

// StagedTileBytes is the bytes one K-tile of a group of rows rows takes
// in a staging buffer: the group's rows in row chunks of RowChunk, each
// chunk's tile with its planes on 64 bytes (params.go).
func StagedTileBytes(g planar.Geometry, rows int) int {
	n := 0
	for r := 0; r < rows; r += RowChunk {
		n += TileBytes(g.Type, g.KTile, min(RowChunk, rows-r))
	}
	return n
}

// ioLayout is where the dispatches of one group of tokens put their
// parameter headers and activation records (bo1) and their outputs (bo2).
type ioLayout struct {
	act, out int // bytes of bo1 and bo2 used
	d        []ioDispatch
}

// ioDispatch is one dispatch: chunk ci, tokens [s0, s0+ts) of the group.
type ioDispatch struct {
	ci, s0, ts int
	hdr        int   // header offset in bo1; the records follow it
	outs       []int // output offset of each dispatch column in bo2
}

// planIO lays out the dispatches of tb tokens over chunks: every chunk is
// run once per MaxTokens tokens; each dispatch's header and records, and
// each of its columns' outputs, start on 64 bytes.
func planIO(g planar.Geometry, chunks []Chunk, tb int, l *ioLayout) {
	rec := ActLayoutOf(g.Type, g.KTile).Stride
	*l = ioLayout{d: l.d[:0]} // the dispatches' outs slices are reused: no allocation per call
	for ci, ch := range chunks {
		for s0 := 0; s0 < tb; s0 += MaxTokens {
			ts := min(MaxTokens, tb-s0)
			var outs []int
			if len(l.d) < cap(l.d) {
				outs = l.d[:len(l.d)+1][len(l.d)].outs[:0]
			}
			d := ioDispatch{ci: ci, s0: s0, ts: ts, hdr: l.act}
			l.act += ParamsBytes + ch.Tiles*ts*rec
			for c := ch.Group0; c < ch.Group0+ch.Groups; c++ {
				_, rows := g.GroupRows(c)
				outs = append(outs, l.out)
				l.out += align64(4 * ts * rows)
			}
			d.outs = outs
			l.d = append(l.d, d)
		}
	}
}

// ioTokens returns the most tokens, at least 1 and at most n, whose
// activations and outputs fit in I/O buffers of ioSize bytes.
func ioTokens(g planar.Geometry, chunks []Chunk, ioSize, n int) int {
	var l ioLayout
	tb := 1
	for ; tb < n; tb++ {
		planIO(g, chunks, tb+1, &l)
		if l.act > ioSize || l.out > ioSize {
			break
		}
	}
	return tb
}

// Dispatches returns the kernel runs the Backend submits for one call of
// tokens tokens on g, with staging buffers of ringSize and I/O buffers of
// ioSize bytes (0: the defaults): the tokens go in groups that fit the I/O
// buffers, each group streams every chunk, and each chunk is run once per
// MaxTokens tokens of the group.
func Dispatches(g planar.Geometry, tokens, ringSize, ioSize int) (int, error) {
	n, _, _, err := StreamCounts(g, tokens, ringSize, ioSize)
	return n, err
}

// StreamCounts returns what Dispatches counts plus the TXN words and shim
// BDs of those dispatches' streams (txn.GEMVWords: one BD per run, as the
// Backend's buffers never need a split).
func StreamCounts(g planar.Geometry, tokens, ringSize, ioSize int) (dispatches, words, bds int, err error) {
	ringSize, ioSize = orDefault(ringSize, DefaultRingSize), orDefault(ioSize, DefaultIOSize)
	chunks, err := PlanChunks(g, ringSize)
	if err != nil {
		return 0, 0, 0, err
	}
	per := ioTokens(g, chunks, ioSize, tokens)
	var l ioLayout
	for t0 := 0; t0 < tokens; t0 += per {
		planIO(g, chunks, min(per, tokens-t0), &l)
		for _, d := range l.d {
			cols := chunks[d.ci].Groups
			dispatches++
			words += txn.GEMVWords(cols)
			bds += 2*cols + 2
		}
	}
	return dispatches, words, bds, nil
}

func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

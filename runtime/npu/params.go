package npu

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// The GEMV device contract (docs/NPU.md): what one dispatch's streams hold.
//
// A dispatch multiplies K-tiles [tile0, tile0+tiles) of up to MaxColumns
// column groups by up to MaxTokens activation vectors. Column c of the
// dispatch streams, through its shim tile, its group's rows in row chunks
// of RowChunk rows; the cores of the column keep f32 accumulators for a
// row chunk and every token, and drain them when the chunk's last tile is
// done. The streams, all little-endian:
//
//	activations (bo1, broadcast to every column): the parameter header
//	  (ParamsBytes), then the records, replayed by the DMA once per row
//	  chunk: for tile i: for token b: one record = ActLayoutOf(type, T) of
//	  token b's inputs [(tile0+i)*T, +T)
//	weights of column c (bo0, one contiguous run): for row chunk r: for
//	  tile i: the planes of the chunk's rows in tile tile0+i, laid out as
//	  RunGeometry(type, rc, T, 1) lays out one tile (each plane on 64 bytes)
//	outputs of column c (bo2): for row chunk r: for token b: f32 y of the
//	  chunk's rows = the sum over the dispatch's tiles, in order, of each
//	  tile's dot product
//
// Per-dispatch parameters travel in the header object, at the front of the
// activation stream, and never in run-time registers: QVAC saw a register
// written by the instruction stream read stale by a running core
// (npu-contract.md 5.1); an object the core acquires is ordered against
// the DMA by construction. The header, 16 words:
//
//	0 ParamsMagic "XDH1"   1 ggml type       2 T (K-tile)     3 tiles
//	4 tokens               5 RowChunk        6 row chunks     7 columns
//	8..15 rows of dispatch column 0..7 (zero past the columns)
const (
	ParamsMagic = 0x31484458            // "XDH1"
	ParamsBytes = txn.ParamsHeaderBytes // 64
	// MaxTokens is the most activation vectors one dispatch multiplies.
	MaxTokens = 16
	// MaxColumns is the widest design (XDNA2's 8 columns).
	MaxColumns = 8
	// RowChunk is the rows of a column whose accumulators its 4 cores hold
	// at once: 128 rows a core x MaxTokens x 4 bytes = 8 KiB of a core's
	// 64 KiB data memory (kernels/README.md has the whole L1 budget).
	RowChunk = 512
	// CoresPerColumn is the compute rows of a column (rows 2..5).
	CoresPerColumn = 4
)

// ErrParams is matched by every parameter-header validation error.
var ErrParams = errors.New("bad parameter header")

// Params is a dispatch's parameter header, decoded.
type Params struct {
	Type      planar.Type
	T, Tiles  int
	Tokens    int
	RowChunk  int
	RowChunks int
	Rows      []int // rows of each dispatch column
}

// NewParams returns the header of a dispatch of tiles K-tiles of t inputs
// over columns with rows[c] rows each, for tokens tokens.
func NewParams(typ planar.Type, t, tiles, tokens int, rows []int) Params {
	p := Params{Type: typ, T: t, Tiles: tiles, Tokens: tokens, RowChunk: RowChunk, Rows: rows}
	m := 0
	for _, r := range rows {
		m = max(m, r)
	}
	p.RowChunks = (m + RowChunk - 1) / RowChunk
	return p
}

// chunkParams returns the header of a dispatch of ts tokens over chunk ch
// of g; rows is reused for the columns' row counts (the header keeps it).
func chunkParams(g planar.Geometry, ch Chunk, ts int, rows []int) Params {
	rows = rows[:0]
	for c := ch.Group0; c < ch.Group0+ch.Groups; c++ {
		_, n := g.GroupRows(c)
		rows = append(rows, n)
	}
	return NewParams(g.Type, g.KTile, ch.Tiles, ts, rows)
}

// Put writes the header into dst[:ParamsBytes].
func (p *Params) Put(dst []byte) {
	w := [16]uint32{ParamsMagic, uint32(p.Type), uint32(p.T), uint32(p.Tiles), uint32(p.Tokens),
		uint32(p.RowChunk), uint32(p.RowChunks), uint32(len(p.Rows))}
	for c, r := range p.Rows {
		w[8+c] = uint32(r)
	}
	for i, v := range w {
		binary.LittleEndian.PutUint32(dst[4*i:], v)
	}
}

// ChunkRows returns the rows of row chunk r of a column of rows rows.
func (p *Params) ChunkRows(rows, r int) int {
	return max(0, min(p.RowChunk, rows-r*p.RowChunk))
}

// RecordBytes is the size of one activation record (one token, one tile).
func (p *Params) RecordBytes() int { return ActLayoutOf(p.Type, p.T).Stride }

// ActBytes is the activation records' size in bo1 (without the header);
// the stream delivers them RowChunks times.
func (p *Params) ActBytes() int { return p.Tiles * p.Tokens * p.RecordBytes() }

// WeightBytes is the size of column c's weight run.
func (p *Params) WeightBytes(c int) int {
	n := 0
	for r := 0; r < p.RowChunks; r++ {
		if rc := p.ChunkRows(p.Rows[c], r); rc > 0 {
			n += p.Tiles * TileBytes(p.Type, p.T, rc)
		}
	}
	return n
}

// OutBytes is the size of column c's outputs.
func (p *Params) OutBytes(c int) int { return 4 * p.Tokens * p.Rows[c] }

// TileBytes is the bytes of one tile of rows rows: every plane of the
// format, each starting on 64 bytes.
func TileBytes(typ planar.Type, t, rows int) int {
	return RunGeometry(typ, rows, t, 1).TileBytes(rows)
}

// RunGeometry returns the planar geometry of rows rows and tiles K-tiles
// of t inputs as one column group; its PlaneOffset(0, i, p) is plane p of
// tile i.
func RunGeometry(typ planar.Type, rows, t, tiles int) planar.Geometry {
	return planar.Geometry{Type: typ, N: rows, K: t * tiles, Columns: 1, KTile: t}
}

// ParseParams decodes and strictly validates the header at the start of
// src for a design of columns columns: magic, a type with a GEMV kernel, T
// a multiple of its block, tiles, tokens in 1..MaxTokens, RowChunk, the
// row-chunk count that the rows imply, 1..columns columns, zero rows past
// them. Errors match ErrParams.
func ParseParams(src []byte, columns int) (*Params, error) {
	bad := func(format string, args ...any) (*Params, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrParams}, args...)...)
	}
	if len(src) < ParamsBytes {
		return bad("%d bytes, the header is %d", len(src), ParamsBytes)
	}
	var w [16]uint32
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(src[4*i:])
	}
	if w[0] != ParamsMagic {
		return bad("magic %#08x, want %#08x", w[0], ParamsMagic)
	}
	p := &Params{Type: planar.Type(w[1]), T: int(w[2]), Tiles: int(w[3]), Tokens: int(w[4]),
		RowChunk: int(w[5]), RowChunks: int(w[6])}
	f, err := planar.FormatOf(p.Type)
	if err != nil {
		return bad("type %d: %v", w[1], err)
	}
	const maxDim = 1 << 24
	ncols := int(w[7])
	switch {
	case p.T <= 0 || p.T > maxDim || p.T%f.Block != 0:
		return bad("K-tile %d for %s blocks of %d", p.T, p.Type, f.Block)
	case p.Tiles < 1 || p.Tiles > maxDim/p.T:
		return bad("%d tiles of %d", p.Tiles, p.T)
	case p.Tokens < 1 || p.Tokens > MaxTokens:
		return bad("%d tokens, want 1..%d", p.Tokens, MaxTokens)
	case p.RowChunk != RowChunk:
		return bad("row chunk %d, the kernels hold %d", p.RowChunk, RowChunk)
	case ncols < 1 || ncols > columns || ncols > MaxColumns:
		return bad("%d columns, the design has %d", ncols, columns)
	}
	p.Rows = make([]int, ncols)
	m := 0
	for c := range w[8:] {
		r := int(w[8+c])
		switch {
		case c >= ncols && r != 0:
			return bad("column %d of %d has %d rows", c, ncols, r)
		case r > maxDim:
			return bad("column %d: %d rows", c, r)
		case c < ncols:
			p.Rows[c] = r
			m = max(m, r)
		}
	}
	if m == 0 {
		return bad("no column has rows")
	}
	if want := (m + RowChunk - 1) / RowChunk; p.RowChunks != want {
		return bad("%d row chunks, %d rows need %d", p.RowChunks, m, want)
	}
	return p, nil
}

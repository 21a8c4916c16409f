package design

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/target"
)

// The parameter header: the first activation object of every dispatch
// (RecordBytes long, zero past HeaderWords words). Per-dispatch parameters
// travel here and never in run-time registers: QVAC saw a register written
// by the instruction stream read stale by a running core (npu-contract.md
// 5.1); an object the core acquires is ordered against the DMA by
// construction. The cores read the words named here; the rest are for the
// host's and the emulator's checks. Words, little-endian uint32:
//
//	0 Magic "XDH2"   1 ggml type   2 T (K-tile)   3 K-tiles    4 tokens
//	5 rows a piece   6 row blocks (the most of any column)    7 columns
//	8..15  row blocks of dispatch column 0..7 (0 past the columns)
//	16..23 rows of dispatch column 0..7
const (
	Magic       = 0x32484458 // "XDH2"
	HdrType     = 1
	HdrT        = 2
	HdrTiles    = 3
	HdrTokens   = 4
	HdrRows     = 5
	HdrBlocks   = 6
	HdrColumns  = 7
	HdrColBlock = 8  // + dispatch column
	HdrColRows  = 16 // + dispatch column
	HeaderWords = 24
	HeaderBytes = 4 * HeaderWords
)

// MaxTokens is the most activation vectors one dispatch multiplies: the
// cores' accumulators hold MaxTokens x Rows f32.
const MaxTokens = 16

// ErrHeader is matched by every header validation error.
var ErrHeader = errors.New("bad parameter header")

// Header is a dispatch's parameter header, decoded.
type Header struct {
	Type   planar.Type
	T      int
	Tiles  int
	Tokens int
	Rows   int   // rows a piece (the design's Rows)
	Blocks int   // row blocks of the dispatch: the most of any column
	Cols   []int // rows of each dispatch column
	// BlockRows is the design's rows a row block (not a header word).
	BlockRows int
}

// NewHeader returns the header of a dispatch of d over tiles K-tiles and
// tokens tokens, whose columns have rows[c] rows.
func (d *Design) NewHeader(tiles, tokens int, rows []int) Header {
	h := Header{Type: d.Type, T: d.KTile, Tiles: tiles, Tokens: tokens, Rows: d.Rows, Cols: rows, BlockRows: d.BlockRows()}
	for _, r := range rows {
		h.Blocks = max(h.Blocks, d.Blocks(r))
	}
	return h
}

// ColBlocks is the row blocks of dispatch column c.
func (h *Header) ColBlocks(c int) int {
	return (h.Cols[c] + h.BlockRows - 1) / h.BlockRows
}

// Put writes the header object into dst (the design's RecordBytes), zero
// past the header's words.
func (h *Header) Put(dst []byte) {
	clear(dst)
	w := [HeaderWords]uint32{Magic, uint32(h.Type), uint32(h.T), uint32(h.Tiles), uint32(h.Tokens),
		uint32(h.Rows), uint32(h.Blocks), uint32(len(h.Cols))}
	for c, r := range h.Cols {
		w[HdrColBlock+c] = uint32(h.ColBlocks(c))
		w[HdrColRows+c] = uint32(r)
	}
	for i, v := range w {
		binary.LittleEndian.PutUint32(dst[4*i:], v)
	}
}

// ParseHeader decodes and strictly validates the header at the start of
// src for design d: magic, type, K-tile and rows a piece of the design,
// tiles, tokens in 1..MaxTokens, 1..d.Columns columns with zero words
// past them, each column's blocks matching its rows, the dispatch's blocks
// the most of them. Errors match ErrHeader.
func (d *Design) ParseHeader(src []byte) (*Header, error) {
	bad := func(format string, args ...any) (*Header, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrHeader}, args...)...)
	}
	if len(src) < HeaderBytes {
		return bad("%d bytes, the header is %d", len(src), HeaderBytes)
	}
	var w [HeaderWords]uint32
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(src[4*i:])
	}
	const maxDim = 1 << 24
	h := &Header{Type: planar.Type(w[HdrType]), T: int(w[HdrT]), Tiles: int(w[HdrTiles]), Tokens: int(w[HdrTokens]),
		Rows: int(w[HdrRows]), Blocks: int(w[HdrBlocks]), BlockRows: d.BlockRows()}
	ncols := int(w[HdrColumns])
	switch {
	case w[0] != Magic:
		return bad("magic %#08x, want %#08x", w[0], Magic)
	case h.Type != d.Type:
		return bad("type %d (%v), the design is %s", w[HdrType], h.Type, d.Type)
	case h.T != d.KTile:
		return bad("K-tile %d, the design's is %d", h.T, d.KTile)
	case h.Rows != d.Rows:
		return bad("%d rows a piece, the design's pieces are %d", h.Rows, d.Rows)
	case h.Tiles < 1 || h.Tiles > maxDim/d.KTile:
		return bad("%d K-tiles", h.Tiles)
	case h.Tokens < 1 || h.Tokens > MaxTokens:
		return bad("%d tokens, want 1..%d", h.Tokens, MaxTokens)
	case ncols < 1 || ncols > d.Columns:
		return bad("%d columns, the design has %d", ncols, d.Columns)
	}
	most := 0
	for c := 0; c < target.MaxColumns; c++ {
		b, r := int(w[HdrColBlock+c]), int(w[HdrColRows+c])
		if c >= ncols {
			if b != 0 || r != 0 {
				return bad("column %d of %d has %d rows in %d blocks", c, ncols, r, b)
			}
			continue
		}
		if r > maxDim || b != d.Blocks(r) {
			return bad("column %d: %d row blocks for %d rows, want %d", c, b, r, d.Blocks(r))
		}
		h.Cols = append(h.Cols, r)
		most = max(most, b)
	}
	if most == 0 || h.Blocks != most {
		return bad("%d row blocks, the columns' most is %d", h.Blocks, most)
	}
	return h, nil
}

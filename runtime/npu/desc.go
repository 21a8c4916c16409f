package npu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/xdna-go/xdna/planar"
)

// The instruction descriptor: what the host writes into the instruction
// buffer of one GEMV run. One kernel artifact per weight format serves every
// shape because the shape travels here, generated per dispatch on the host
// (DESIGN.md, "Kernel slots"). It stands in for the per-shape transaction
// stream (npu-stack.md 3.2) that a real design's host code generates: on
// hardware the same fields become the DMA buffer descriptors of each column
// and the first object of the activation stream (seeds-and-peers.md 2.1:
// per-dispatch counts read from run-time registers were seen stale).
//
// Little-endian 32-bit words; words = HeaderWords + ColumnWords*ncols:
//
//	word field      meaning
//	0    magic      DescMagic, "XDG1"
//	1    words      total words of the descriptor
//	2    type       ggml type id of the weights (planar.Type: 2 = Q4_0, 12 = Q4_K, ...)
//	3    K          inputs of the whole matrix
//	4    N          outputs of the whole matrix
//	5    T          K-tile, inputs per tile (a multiple of the type's block)
//	6    tile0      first K-tile of this run (0 <= tile0 < K/T)
//	7    ntiles     K-tiles each column streams (tile0+ntiles <= K/T)
//	8    tokens     activation vectors (1..MaxTokens)
//	9    actOff     byte offset in bo1 of token 0's activations (multiple of 64)
//	10   actStride  bytes between tokens in bo1 (ActLayoutOf(type, K).Stride)
//	11   outOff     byte offset in bo2 of y[token 0][row 0] (multiple of 4)
//	12   outStride  bytes between tokens in bo2 (>= 4*N, multiple of 4)
//	13   flags      bit 0 FlagAccumulate: add into bo2 instead of storing; others zero
//	14   ncols      column entries (1..the device's columns)
//	15   check      DescCheck of every other word of the descriptor
//	16+4j           column entry j, run by column j:
//	     +0 row0    first output row of the column's group
//	     +1 rows    rows of the group (>= 1)
//	     +2 wOff    byte offset in bo0 of the group's run (multiple of 64)
//	     +3 wBytes  ntiles * TileBytes(rows): the run's size
//
// A column's run in bo0 is its group's tiles [tile0, tile0+ntiles) exactly
// as they lie in the planar blob: per tile, each plane of the group's rows,
// each plane starting on 64 bytes (planar.Geometry.PlaneOffset). Row ranges
// of the columns are disjoint, and so are their runs.
const (
	DescMagic      = 0x31474458 // "XDG1"
	HeaderWords    = 16
	ColumnWords    = 4
	FlagAccumulate = 1
	// MaxTokens is the most activation vectors one run multiplies: each
	// streamed weight tile is applied to every token's activation tile,
	// which must fit in a core's data memory beside the weights.
	MaxTokens = 16
	// MaxColumns bounds ncols (planar.Geometry allows 64 column groups).
	MaxColumns = 64
)

// MaxDescWords is the longest descriptor, in words.
const MaxDescWords = HeaderWords + ColumnWords*MaxColumns

// ErrDescriptor is matched by every descriptor validation error.
var ErrDescriptor = errors.New("bad descriptor")

// Column is one column's share of a run.
type Column struct {
	Row0, Rows   int // output rows [Row0, Row0+Rows)
	WOff, WBytes int // the group's run in bo0
}

// Desc is one GEMV run's descriptor, decoded.
type Desc struct {
	Type              planar.Type
	K, N, T           int
	Tile0, Tiles      int
	Tokens            int
	ActOff, ActStride int
	OutOff, OutStride int
	Flags             uint32
	Cols              []Column
}

// Words returns the descriptor's length in words.
func (d *Desc) Words() int { return HeaderWords + ColumnWords*len(d.Cols) }

// DescCheck is the check word: the XOR of every word but word 15, rotated
// by one bit per word so that swapped words are caught too, XOR 0xA5A5A5A5.
func DescCheck(w []uint32) uint32 {
	c := uint32(0xA5A5A5A5)
	for i, v := range w {
		if i == 15 {
			continue
		}
		c ^= bits.RotateLeft32(v, i%32)
	}
	return c
}

// Encode writes d into dst as little-endian words, with its check word,
// and returns the bytes written. It panics if dst is short or d has more
// than MaxColumns columns.
func (d *Desc) Encode(dst []byte) int {
	n := d.Words()
	var buf [MaxDescWords]uint32
	w := buf[:n]
	w[0] = DescMagic
	w[1] = uint32(n)
	w[2] = uint32(d.Type)
	w[3], w[4], w[5] = uint32(d.K), uint32(d.N), uint32(d.T)
	w[6], w[7], w[8] = uint32(d.Tile0), uint32(d.Tiles), uint32(d.Tokens)
	w[9], w[10] = uint32(d.ActOff), uint32(d.ActStride)
	w[11], w[12] = uint32(d.OutOff), uint32(d.OutStride)
	w[13] = d.Flags
	w[14] = uint32(len(d.Cols))
	for j, c := range d.Cols {
		o := HeaderWords + ColumnWords*j
		w[o], w[o+1], w[o+2], w[o+3] = uint32(c.Row0), uint32(c.Rows), uint32(c.WOff), uint32(c.WBytes)
	}
	w[15] = DescCheck(w)
	for i, v := range w {
		binary.LittleEndian.PutUint32(dst[4*i:], v)
	}
	return 4 * n
}

// Limits are the sizes a descriptor is validated against: the device's
// columns and the sizes of the three data buffers of the run.
type Limits struct {
	Columns                    int
	WBytes, ActBytes, OutBytes int
}

// ParseDesc decodes and strictly validates the descriptor in the words
// bytes of src (words as passed to Run). Every field is checked: magic,
// length, check word, a type with a GEMV kernel, the shape (K a multiple of
// T, T of the type's block), the tile range, the token count, reserved
// flags, the column count, that each column's rows lie in [0, N) and do not
// overlap another's, that each run has exactly ntiles*TileBytes(rows) bytes,
// is 64-byte aligned and inside bo0, and that the activations and outputs
// of every token lie inside bo1 and bo2. Errors match ErrDescriptor.
func ParseDesc(src []byte, words int, lim Limits) (*Desc, error) {
	bad := func(format string, args ...any) (*Desc, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrDescriptor}, args...)...)
	}
	if words < HeaderWords || words > MaxDescWords {
		return bad("%d words, want %d..%d", words, HeaderWords, MaxDescWords)
	}
	if len(src) < 4*words {
		return bad("%d words in an instruction buffer of %d bytes", words, len(src))
	}
	w := make([]uint32, words)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(src[4*i:])
	}
	if w[0] != DescMagic {
		return bad("magic %#08x, want %#08x", w[0], DescMagic)
	}
	if int(w[1]) != words {
		return bad("header says %d words, run passed %d", w[1], words)
	}
	if c := DescCheck(w); c != w[15] {
		return bad("check word %#08x, computed %#08x", w[15], c)
	}
	ncols := int(w[14])
	if ncols < 1 || ncols > lim.Columns || ncols > MaxColumns {
		return bad("%d columns, device has %d", ncols, lim.Columns)
	}
	if words != HeaderWords+ColumnWords*ncols {
		return bad("%d words for %d columns, want %d", words, ncols, HeaderWords+ColumnWords*ncols)
	}
	d := &Desc{
		Type: planar.Type(w[2]), K: int(w[3]), N: int(w[4]), T: int(w[5]),
		Tile0: int(w[6]), Tiles: int(w[7]), Tokens: int(w[8]),
		ActOff: int(w[9]), ActStride: int(w[10]), OutOff: int(w[11]), OutStride: int(w[12]),
		Flags: w[13],
	}
	f, err := planar.FormatOf(d.Type)
	if err != nil {
		return bad("type %d: %v", w[2], err)
	}
	const maxDim = 1 << 24
	switch {
	case d.K <= 0 || d.K > maxDim || d.N <= 0 || d.N > maxDim:
		return bad("shape N=%d K=%d", d.N, d.K)
	case d.T <= 0 || d.T%f.Block != 0 || d.K%d.T != 0:
		return bad("K-tile %d for K=%d and %s blocks of %d", d.T, d.K, d.Type, f.Block)
	case d.Tiles < 1 || d.Tile0 < 0 || d.Tile0 >= d.K/d.T || d.Tiles > d.K/d.T-d.Tile0:
		return bad("tiles [%d, +%d) of %d", d.Tile0, d.Tiles, d.K/d.T)
	case d.Tokens < 1 || d.Tokens > MaxTokens:
		return bad("%d tokens, want 1..%d", d.Tokens, MaxTokens)
	case d.Flags&^FlagAccumulate != 0:
		return bad("reserved flags %#x", d.Flags)
	}
	al := ActLayoutOf(d.Type, d.K)
	if d.ActOff%64 != 0 || d.ActStride != al.Stride {
		return bad("activations at %d stride %d, want a multiple of 64 and stride %d", d.ActOff, d.ActStride, al.Stride)
	}
	if end := int64(d.ActOff) + int64(d.Tokens)*int64(d.ActStride); end > int64(lim.ActBytes) {
		return bad("activations end at %d, bo1 holds %d", end, lim.ActBytes)
	}
	if d.OutOff%4 != 0 || d.OutStride%4 != 0 || d.OutStride < 4*d.N {
		return bad("outputs at %d stride %d for N=%d", d.OutOff, d.OutStride, d.N)
	}
	if end := int64(d.OutOff) + int64(d.Tokens-1)*int64(d.OutStride) + 4*int64(d.N); end > int64(lim.OutBytes) {
		return bad("outputs end at %d, bo2 holds %d", end, lim.OutBytes)
	}
	d.Cols = make([]Column, ncols)
	for j := range d.Cols {
		o := HeaderWords + ColumnWords*j
		c := Column{Row0: int(w[o]), Rows: int(w[o+1]), WOff: int(w[o+2]), WBytes: int(w[o+3])}
		if c.Rows < 1 || c.Row0 < 0 || c.Row0 >= d.N || c.Rows > d.N-c.Row0 {
			return bad("column %d: rows [%d, +%d) outside N=%d", j, c.Row0, c.Rows, d.N)
		}
		g := RunGeometry(d.Type, c.Rows, d.T, d.Tiles)
		if want := int64(d.Tiles) * int64(g.TileBytes(c.Rows)); int64(c.WBytes) != want {
			return bad("column %d: run of %d bytes, %d rows x %d tiles need %d", j, c.WBytes, c.Rows, d.Tiles, want)
		}
		if c.WOff%64 != 0 || int64(c.WOff)+int64(c.WBytes) > int64(lim.WBytes) {
			return bad("column %d: run [%d, +%d) outside bo0 of %d bytes or unaligned", j, c.WOff, c.WBytes, lim.WBytes)
		}
		for i, p := range d.Cols[:j] {
			if c.Row0 < p.Row0+p.Rows && p.Row0 < c.Row0+c.Rows {
				return bad("column %d: rows overlap column %d", j, i)
			}
			if c.WOff < p.WOff+p.WBytes && p.WOff < c.WOff+c.WBytes {
				return bad("column %d: run overlaps column %d", j, i)
			}
		}
		d.Cols[j] = c
	}
	return d, nil
}

// RunGeometry returns the planar geometry of one column's run: rows rows
// and tiles K-tiles of t inputs, as one column group. Its PlaneOffset(0,
// i, p) is plane p of the run's i-th tile, relative to the run's start.
func RunGeometry(typ planar.Type, rows, t, tiles int) planar.Geometry {
	return planar.Geometry{Type: typ, N: rows, K: t * tiles, Columns: 1, KTile: t}
}

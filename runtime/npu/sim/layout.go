package sim

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
)

// ErrStream reports a header, weight, activation or output stream that breaks
// CONTRACT.md.
var ErrStream = errors.New("bad stream")

// Magic is the header object's first word, "XDH1" little-endian.
const Magic = 0x31484458

// Header is the 64-byte header object at the front of the activation stream
// (CONTRACT.md "Per-dispatch parameters").
type Header struct {
	Type      planar.Type
	T         int    // K-tile
	Tiles     int    // K-tiles in this dispatch
	Tokens    int    // 1..16
	RC        int    // rows per row chunk, a multiple of 16
	RowChunks int    // ceil(max rows_c / RC)
	NCols     int    // dispatch columns
	Rows      [8]int // rows_c of dispatch column c
}

// PutHeader writes h into dst[:64].
func PutHeader(dst []byte, h Header) {
	w := [16]uint32{Magic, uint32(h.Type), uint32(h.T), uint32(h.Tiles), uint32(h.Tokens), uint32(h.RC),
		uint32(h.RowChunks), uint32(h.NCols)}
	for c, r := range h.Rows {
		w[8+c] = uint32(r)
	}
	for i, v := range w {
		binary.LittleEndian.PutUint32(dst[4*i:], v)
	}
}

// ParseHeader decodes and validates the header object at the front of acts.
func ParseHeader(acts []byte) (Header, error) {
	if len(acts) < HeaderBytes {
		return Header{}, fmt.Errorf("%w: activation stream of %d bytes, no 64-byte header", ErrStream, len(acts))
	}
	w := func(i int) int { return int(binary.LittleEndian.Uint32(acts[4*i:])) }
	if m := uint32(w(0)); m != Magic {
		return Header{}, fmt.Errorf("%w: header word 0 is %#x, not the magic %#x", ErrStream, m, Magic)
	}
	h := Header{Type: planar.Type(w(1)), T: w(2), Tiles: w(3), Tokens: w(4), RC: w(5), RowChunks: w(6), NCols: w(7)}
	f, err := planar.FormatOf(h.Type)
	switch {
	case err != nil:
		return h, fmt.Errorf("%w: header word 1: %v", ErrStream, err)
	case h.T <= 0 || h.T > 1<<16 || h.T%f.Block != 0:
		return h, fmt.Errorf("%w: header word 2: K-tile %d for %s", ErrStream, h.T, h.Type)
	case h.Tiles <= 0 || h.Tiles > 1<<20:
		return h, fmt.Errorf("%w: header word 3: %d tiles", ErrStream, h.Tiles)
	case h.Tokens < 1 || h.Tokens > MaxTokens:
		return h, fmt.Errorf("%w: header word 4: %d tokens, want 1..%d", ErrStream, h.Tokens, MaxTokens)
	case h.RC <= 0 || h.RC%16 != 0 || h.RC > 1<<20:
		return h, fmt.Errorf("%w: header word 5: row chunk of %d rows, want a positive multiple of 16", ErrStream, h.RC)
	case h.NCols < 1 || h.NCols > 8:
		return h, fmt.Errorf("%w: header word 7: %d columns, want 1..8", ErrStream, h.NCols)
	}
	maxRows := 0
	for c := range h.Rows {
		h.Rows[c] = w(8 + c)
		switch {
		case c >= h.NCols && h.Rows[c] != 0:
			return h, fmt.Errorf("%w: header word %d: %d rows for column %d beyond ncols %d", ErrStream, 8+c, h.Rows[c], c, h.NCols)
		case h.Rows[c] > 1<<24:
			return h, fmt.Errorf("%w: header word %d: %d rows", ErrStream, 8+c, h.Rows[c])
		}
		maxRows = max(maxRows, h.Rows[c])
	}
	if want := (maxRows + h.RC - 1) / h.RC; h.RowChunks != want {
		return h, fmt.Errorf("%w: header word 6: %d row chunks, want ceil(%d/%d) = %d", ErrStream, h.RowChunks, maxRows, h.RC, want)
	}
	return h, nil
}

// chunkRows returns rc_r, the rows of row chunk r of a column of rows rows.
func (h *Header) chunkRows(rows, r int) int { return max(0, min(h.RC, rows-r*h.RC)) }

// WeightBytes returns the length of column c's weight stream.
func (h *Header) WeightBytes(c int) int {
	n := 0
	for r := 0; r < h.RowChunks; r++ {
		if rc := h.chunkRows(h.Rows[c], r); rc > 0 {
			n += h.Tiles * npu.RunGeometry(h.Type, rc, h.T, 1).TileBytes(rc)
		}
	}
	return n
}

// ActBytes returns the length of the activation stream: the header, then the
// records of every tile and token (replayed per row chunk by the DMA).
func (h *Header) ActBytes() int {
	return HeaderBytes + h.Tiles*h.Tokens*npu.ActLayoutOf(h.Type, h.T).Stride
}

// coreRows returns the first row (in the chunk) and the rows of core k (of 4) in a
// chunk of rc rows: ceil(rc/4) rows per core, the last cores short.
func coreRows(rc, k int) (first, n int) {
	q := (rc + 3) / 4
	first = min(k*q, rc)
	return first, min(first+q, rc) - first
}

// Cores is the compute tiles of one column.
const Cores = 4

func align64(n int) int { return (n + 63) &^ 63 }

// ObjectBytes returns the size of one core-layout weight object of rowsPad rows
// (kernels/common/gemv.hpp): the format's planes, each 64-byte aligned.
func ObjectBytes(typ planar.Type, kTile, rowsPad int) (int, error) {
	f, err := planar.FormatOf(typ)
	if err != nil {
		return 0, err
	}
	if kTile <= 0 || kTile%f.Block != 0 {
		return 0, fmt.Errorf("sim: K-tile %d for %s", kTile, typ)
	}
	n := 0
	for _, p := range f.Planes {
		n += align64(rowsPad * p.PerRow(kTile))
	}
	return n, nil
}

// CoreObject writes into dst the core-layout object of core rows [first, first+n) of
// one (row chunk, K-tile) object src of rc rows (the contract's layout,
// npu.RunGeometry(typ, rc, T, 1)), padded to rowsPad rows with zeros: what the
// memtile's MM2S descriptors for that core produce. Planes whose rows are whole
// 4-byte words are word-interleaved (word j of row r at 4*(j*rowsPad + r)); others
// (2 bytes a row) keep their rows in order. dst must hold ObjectBytes(typ, T, rowsPad).
func CoreObject(typ planar.Type, kTile int, src []byte, rc, first, n, rowsPad int, dst []byte) {
	f, _ := planar.FormatOf(typ)
	clear(dst)
	so, do := 0, 0
	for _, p := range f.Planes {
		per := p.PerRow(kTile)
		s := src[so+first*per : so+(first+n)*per]
		d := dst[do : do+rowsPad*per]
		if per%4 == 0 {
			words := per / 4
			for r := 0; r < n; r++ {
				for j := 0; j < words; j++ {
					copy(d[4*(j*rowsPad+r):4*(j*rowsPad+r)+4], s[r*per+4*j:])
				}
			}
		} else {
			copy(d, s)
		}
		so += align64(rc * per)
		do += align64(rowsPad * per)
	}
}

// Package gemv holds the data formats of the NPU GEMV kernel, what its
// buffers hold byte for byte, and its Go model: the weight piece one core
// multiplies per call (the "core layout"), the activation record of one
// token and K-tile, and the functions a core's program calls
// (kernels/common/gemv.hpp implements the same on the AIE; package sim
// compiles that source for the host).
//
// The physical design (package design) moves these buffers; the host
// (package npu) writes pieces and records into the staging and I/O
// buffers with Pack and PutRecord; the emulator calls the Go model on
// the buffers a core holds.
package gemv

import (
	"fmt"

	"github.com/xdna-go/xdna/planar"
)

func align64(n int) int { return (n + 63) &^ 63 }

// PlaneLayout is one plane of a piece.
type PlaneLayout struct {
	Off    int  // byte offset in the piece, a multiple of 64
	PerRow int  // bytes one row has in this plane for the piece's K-tile
	Words  bool // word-interleaved (PerRow a multiple of 4); else row-major
}

// Piece is the core layout of one weight piece: Rows rows (a multiple of
// the lanes) of one K-tile of T inputs. Planes come in the format's order
// (docs/FORMAT.md section 4), each on 64 bytes; plane p keeps, when
// PerRow is a multiple of 4, 4-byte word j of row r at Off + 4*(j*Rows + r)
// (so one aligned load gives word j of consecutive rows: lanes are rows),
// and otherwise (Q6_K's d at K-tile 256: 2 bytes a row) row r at
// Off + r*PerRow.
type Piece struct {
	Type   planar.Type
	T      int
	Rows   int
	Planes []PlaneLayout
	Bytes  int // the piece's size, a multiple of 64
}

// PieceOf returns the piece layout of rows rows of one K-tile of t inputs
// of weights of type typ.
func PieceOf(typ planar.Type, t, rows int) (Piece, error) {
	f, err := planar.FormatOf(typ)
	if err != nil {
		return Piece{}, err
	}
	if len(f.Planes) == 1 {
		return Piece{}, fmt.Errorf("gemv: %s has no NPU kernel", typ)
	}
	if t <= 0 || t%f.Block != 0 {
		return Piece{}, fmt.Errorf("gemv: K-tile %d is not a multiple of %s's block of %d", t, typ, f.Block)
	}
	if rows <= 0 || rows%16 != 0 {
		return Piece{}, fmt.Errorf("gemv: %d rows a piece, want a positive multiple of 16", rows)
	}
	p := Piece{Type: typ, T: t, Rows: rows}
	for _, pl := range f.Planes {
		per := pl.PerRow(t)
		p.Planes = append(p.Planes, PlaneLayout{Off: p.Bytes, PerRow: per, Words: per%4 == 0})
		p.Bytes += align64(rows * per)
	}
	return p, nil
}

// Pack writes into dst (p.Bytes long) the piece of rows [r0, r0+n) of
// column group c, K-tile tile, of the planar blob of geometry g (n <= p.Rows;
// rows past n are zero): what the core's weight buffer holds when the
// design has moved it there.
func (p *Piece) Pack(dst []byte, g planar.Geometry, blob []byte, c, tile, r0, n int) {
	dst = dst[:p.Bytes]
	clear(dst)
	if n <= 0 {
		return
	}
	for i, pl := range p.Planes {
		src, per := g.PlaneOffset(c, tile, i)
		s := blob[src+r0*per : src+(r0+n)*per]
		d := dst[pl.Off : pl.Off+p.Rows*per]
		if !pl.Words {
			copy(d, s)
			continue
		}
		words := per / 4
		for r := 0; r < n; r++ {
			row := s[r*per : (r+1)*per]
			for j := 0; j < words; j++ {
				o := 4 * (j*p.Rows + r)
				copy(d[o:o+4], row[4*j:4*j+4])
			}
		}
	}
}

// Unpack is Pack's inverse: it writes row r of plane i (for r < n) back
// into the planar positions of blob, which has geometry g.
func (p *Piece) Unpack(src []byte, g planar.Geometry, blob []byte, c, tile, r0, n int) {
	for i, pl := range p.Planes {
		off, per := g.PlaneOffset(c, tile, i)
		d := blob[off+r0*per : off+(r0+n)*per]
		s := src[pl.Off : pl.Off+p.Rows*per]
		if !pl.Words {
			copy(d, s[:n*per])
			continue
		}
		words := per / 4
		for r := 0; r < n; r++ {
			for j := 0; j < words; j++ {
				o := 4 * (j*p.Rows + r)
				copy(d[r*per+4*j:r*per+4*j+4], s[o:o+4])
			}
		}
	}
}

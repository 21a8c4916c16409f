// Package sim runs the NPU's GEMV kernel sources (kernels/, aie_api C++) on this
// machine: the kernels compiled with the host C++ compiler against the aie_api shim
// (kernels/aie_api_shim), driven column by column as the IRON designs drive the AIE
// cores. It implements the emulator's column kernel (CONTRACT.md, emu.ColumnKernel),
// so the TXN emulator executes a dispatch with the kernels' own code instead of the
// Go model of runtime/npu/emu.
//
// One column (Column.RunColumn) per the device contract (runtime/npu/params.go): parse
// the header object at the front of the activation stream; for every row chunk, split
// its rows among the column's 4 cores (ceil(rc/4) rows each), lay each core's share of
// every (row chunk, K-tile) weight object out as the memtile DMA delivers it (pieces
// of at most MaxRows rows, CoreObject), run the core (the tile kernel over the chunk's
// K-tiles and pieces, accumulating in f32) and write its rows of the output stream.
//
// The kernels are compiled in with the sim build tag, cgo and a C++ compiler; by
// default they are not (building xdna needs no C++ compiler), and then Available
// returns the reason and every Column fails with it.
package sim

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/emu"
)

// Column runs one (format, K-tile) kernel of a target on the columns of a dispatch
// (or any supported one, by the header, when made for type 0 and K-tile 0). It is safe
// for concurrent use (columns run in parallel).
type Column struct {
	target  string
	typ     planar.Type
	kTile   int
	anyType bool
}

// supported reports whether the kernels have a (typ, kTile) slot.
func supported(typ planar.Type, kTile int) bool {
	switch typ {
	case planar.Q4_0, planar.Q5_0, planar.Q8_0:
		return kTile == 128 || kTile == 256
	case planar.Q4_K, planar.Q5_K, planar.Q6_K:
		return kTile == 256
	}
	return false
}

// New returns target's ("xdna1" or "xdna2") kernel for weights of typ with K-tile
// kTile (typ 0 and kTile 0: whatever supported type each dispatch's header names), or
// an error if the kernels are not compiled in or have no such slot.
func New(target string, typ planar.Type, kTile int) (*Column, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if Lanes(target) == 0 {
		return nil, fmt.Errorf("sim: unknown target %q (want xdna1 or xdna2)", target)
	}
	k := &Column{target: target, typ: typ, kTile: kTile, anyType: typ == 0 && kTile == 0}
	if !k.anyType {
		if err := k.check(typ, kTile); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// check refuses a slot the kernels lack, and a C++ object layout that differs from
// the Go one (CoreObject).
func (k *Column) check(typ planar.Type, kTile int) error {
	if !supported(typ, kTile) {
		return fmt.Errorf("sim: no %s kernel for %s with K-tile %d", k.target, typ, kTile)
	}
	m := MaxRows(k.target, typ, kTile)
	ob, err := ObjectBytes(typ, kTile, m)
	if err != nil {
		return err
	}
	if c := cObjectBytes(k.target, typ, kTile, m); c != ob {
		return fmt.Errorf("sim: %s %s K-tile %d: C++ object of %d bytes, Go layout %d", k.target, typ, kTile, c, ob)
	}
	return nil
}

// KernelsFor returns the emulator's kernel factory for target's kernels:
//
//	cfg, _ := emu.ForTarget(target); cfg.Kernels = sim.KernelsFor(target)
//
// (call Available first to report a build without the compiled kernels).
func KernelsFor(target string) emu.KernelFactory {
	return func(typ planar.Type, kTile int) (emu.ColumnKernel, error) {
		k, err := New(target, typ, kTile)
		if err != nil {
			return nil, err
		}
		return k, nil
	}
}

// alignedBytes returns n zeroed bytes starting on a 64-byte boundary (the alignment
// of every L1 buffer of the designs).
func alignedBytes(n int) []byte {
	b := make([]byte, n+64)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+n : off+n]
}

// coreRows returns the first row (in the chunk) and the rows of core c (of 4) in a
// chunk of rc rows: ceil(rc/4) rows per core, the last cores short.
func coreRows(rc, c int) (first, n int) {
	q := (rc + npu.CoresPerColumn - 1) / npu.CoresPerColumn
	first = min(c*q, rc)
	return first, min(first+q, rc) - first
}

// RunColumn computes dispatch column col from its weight stream and the broadcast
// activation stream (header object first, then the records once per row chunk) into
// out (the column's output stream) and returns the bytes produced (emu.ColumnKernel).
func (k *Column) RunColumn(col int, weights, acts, out []byte) (int, error) {
	p, err := npu.ParseParams(acts, Columns(k.target))
	if err != nil {
		return 0, err
	}
	if k.anyType {
		if err := k.check(p.Type, p.T); err != nil {
			return 0, err
		}
	} else if p.Type != k.typ || p.T != k.kTile {
		return 0, fmt.Errorf("%w: %s tiles of %d, the kernel is a %s GEMV with tiles of %d", npu.ErrParams, p.Type, p.T, k.typ, k.kTile)
	}
	rows := 0
	if col >= 0 && col < len(p.Rows) {
		rows = p.Rows[col]
	}
	if want := 4 * p.Tokens * rows; len(out) != want {
		return 0, fmt.Errorf("%w: column %d: %d rows x %d tokens make %d output bytes, the stream drains %d", ErrStream, col, rows, p.Tokens, want, len(out))
	}
	if want := npu.ParamsBytes + p.RowChunks*p.ActBytes(); len(acts) != want {
		return 0, fmt.Errorf("%w: activation stream of %d bytes, the header implies %d (%d row chunks of %d)", ErrStream, len(acts), want, p.RowChunks, p.ActBytes())
	}
	if rows == 0 {
		if len(weights) != 0 {
			return 0, fmt.Errorf("%w: column %d has no rows but streamed %d weight bytes", ErrStream, col, len(weights))
		}
		return 0, nil
	}
	if want := colWeightBytes(p, rows); len(weights) != want {
		return 0, fmt.Errorf("%w: column %d: weight stream of %d bytes, %d rows x %d tiles need %d", ErrStream, col, len(weights), rows, p.Tiles, want)
	}
	v := Lanes(k.target)
	piece := MaxRows(k.target, p.Type, p.T)
	stride := p.RecordBytes()
	recs := alignedBytes(p.ActBytes())
	yb := alignedBytes(4 * p.Tokens * ((p.RowChunk/npu.CoresPerColumn + v - 1) / v * v))
	wo, oo := 0, 0
	for r := 0; r < p.RowChunks; r++ {
		rc := p.ChunkRows(rows, r)
		if rc == 0 {
			continue
		}
		copy(recs, acts[npu.ParamsBytes+r*p.ActBytes():]) // this chunk's replay of the records
		tb := npu.TileBytes(p.Type, p.T, rc)
		for c := 0; c < npu.CoresPerColumn; c++ {
			first, n := coreRows(rc, c)
			if n == 0 {
				continue
			}
			// The memtile's objects for this core: per tile, per piece of at most
			// piece rows, the core layout of those rows.
			var objs []int
			total := 0
			for r0 := 0; r0 < n; r0 += piece {
				rp := (min(piece, n-r0) + v - 1) / v * v
				ob, _ := ObjectBytes(p.Type, p.T, rp)
				objs = append(objs, rp, ob)
				total += ob
			}
			wbuf := alignedBytes(p.Tiles * total)
			o := 0
			for i := 0; i < p.Tiles; i++ {
				src := weights[wo+i*tb : wo+(i+1)*tb]
				for j, r0 := 0, 0; r0 < n; j, r0 = j+2, r0+piece {
					CoreObject(p.Type, p.T, src, rc, first+r0, min(piece, n-r0), objs[j], wbuf[o:o+objs[j+1]])
					o += objs[j+1]
				}
			}
			ystride := (n + v - 1) / v * v
			y := unsafe.Slice((*float32)(unsafe.Pointer(&yb[0])), p.Tokens*ystride)
			if err := runCore(k.target, p.Type, p.T, wbuf, n, piece, p.Tiles, recs, stride, p.Tokens, y); err != nil {
				return 0, fmt.Errorf("column %d row chunk %d core %d: %w", col, r, c, err)
			}
			for b := 0; b < p.Tokens; b++ {
				for i := 0; i < n; i++ {
					putF32(out[oo+4*(b*rc+first+i):], y[b*ystride+i])
				}
			}
		}
		wo += p.Tiles * tb
		oo += 4 * p.Tokens * rc
	}
	return oo, nil
}

// colWeightBytes is the length of a column's weight stream with rows rows.
func colWeightBytes(p *npu.Params, rows int) int {
	n := 0
	for r := 0; r < p.RowChunks; r++ {
		if rc := p.ChunkRows(rows, r); rc > 0 {
			n += p.Tiles * npu.TileBytes(p.Type, p.T, rc)
		}
	}
	return n
}

// Columns returns the width of target's designs: 4 on XDNA1, 8 on XDNA2.
func Columns(target string) int {
	if target == "xdna1" {
		return 4
	}
	return 8
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

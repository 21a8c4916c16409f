// Package sim runs the NPU's GEMV kernel sources (kernels/, aie_api C++) on this
// machine: the kernels compiled with the host C++ compiler against the aie_api shim
// (kernels/aie_api_shim), driven column by column as the IRON designs drive the AIE
// cores. It implements the emulator's column kernel (CONTRACT.md, emu.ColumnKernel),
// so the TXN emulator executes a dispatch with the kernels' own code instead of the
// Go model of runtime/npu/emu.
//
// One column (Column.RunColumn) per CONTRACT.md: parse the header object at the
// front of the activation stream; for every row chunk, split its rows among the
// column's 4 cores (ceil(rc/4) rows each), lay each core's share of every (row chunk,
// K-tile) weight object out as the memtile DMA delivers it (CoreObject), run the core
// (the tile kernel over the chunk's K-tiles, accumulating in f32) and write its rows
// of the output stream.
//
// The kernels need cgo and a C++ compiler; without them (or with the nosim build tag)
// Available returns the reason and every Column fails with it.
package sim

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
)

// Column runs one (format, K-tile) kernel of a target on the columns of a dispatch.
// It is safe for concurrent use (columns run in parallel).
type Column struct {
	target  string
	typ     planar.Type
	kTile   int
	lanes   int
	maxRows int // rows per core the design's L1 buffers hold
}

// New returns target's ("xdna1" or "xdna2") kernel for weights of typ with K-tile
// kTile, or an error if the kernels are not compiled in or have no such slot.
func New(target string, typ planar.Type, kTile int) (*Column, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	v := Lanes(target)
	if v == 0 {
		return nil, fmt.Errorf("sim: unknown target %q (want xdna1 or xdna2)", target)
	}
	switch {
	case (typ == planar.Q4_0 || typ == planar.Q5_0 || typ == planar.Q8_0) && (kTile == 128 || kTile == 256):
	case (typ == planar.Q4_K || typ == planar.Q5_K || typ == planar.Q6_K) && kTile == 256:
	default:
		return nil, fmt.Errorf("sim: no %s kernel for %s with K-tile %d", target, typ, kTile)
	}
	k := &Column{target: target, typ: typ, kTile: kTile, lanes: v, maxRows: MaxRows(target, typ, kTile)}
	// The C++ layout and the Go one (CoreObject) must agree byte for byte.
	ob, err := ObjectBytes(typ, kTile, k.maxRows)
	if err != nil {
		return nil, err
	}
	if c := cObjectBytes(target, typ, kTile, k.maxRows); c != ob {
		return nil, fmt.Errorf("sim: %s %s K-tile %d: C++ object of %d bytes, Go layout %d", target, typ, kTile, c, ob)
	}
	return k, nil
}

// Factory returns a constructor of target's kernels, the shape of emu.KernelFactory.
func Factory(target string) func(planar.Type, int) (*Column, error) {
	return func(typ planar.Type, kTile int) (*Column, error) { return New(target, typ, kTile) }
}

// alignedBytes returns n zeroed bytes starting on a 64-byte boundary (the alignment
// of every L1 buffer of the designs).
func alignedBytes(n int) []byte {
	b := make([]byte, n+64)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+n : off+n]
}

// RunColumn computes dispatch column col from its weight stream and the broadcast
// activation stream (header object first) into out (tokens*rows_c*4 bytes, the
// column's output stream) and returns the bytes produced.
func (k *Column) RunColumn(col int, weights, acts, out []byte) (int, error) {
	h, err := ParseHeader(acts)
	if err != nil {
		return 0, err
	}
	if h.Type != k.typ || h.T != k.kTile {
		return 0, fmt.Errorf("%w: header says %s K-tile %d, kernel is %s K-tile %d", ErrStream, h.Type, h.T, k.typ, k.kTile)
	}
	if col < 0 || col >= h.NCols {
		return 0, fmt.Errorf("%w: column %d of a %d-column dispatch", ErrStream, col, h.NCols)
	}
	rows := h.Rows[col]
	if want := h.WeightBytes(col); len(weights) != want {
		return 0, fmt.Errorf("%w: column %d weight stream of %d bytes, header implies %d", ErrStream, col, len(weights), want)
	}
	if want := h.ActBytes(); len(acts) < want {
		return 0, fmt.Errorf("%w: activation stream of %d bytes, header implies %d", ErrStream, len(acts), want)
	}
	if want := 4 * h.Tokens * rows; len(out) != want {
		return 0, fmt.Errorf("%w: column %d output of %d bytes, want %d (%d tokens x %d rows x 4)", ErrStream, col, len(out), want, h.Tokens, rows)
	}
	if rows == 0 {
		return 0, nil
	}
	stride := npu.ActLayoutOf(h.Type, h.T).Stride
	recs := alignedBytes(h.ActBytes() - HeaderBytes)
	copy(recs, acts[HeaderBytes:])
	wo, oo := 0, 0
	for r := 0; r < h.RowChunks; r++ {
		rc := h.chunkRows(rows, r)
		if rc == 0 {
			continue
		}
		tb := npu.RunGeometry(h.Type, rc, h.T, 1).TileBytes(rc)
		for c := 0; c < Cores; c++ {
			first, n := coreRows(rc, c)
			if n == 0 {
				continue
			}
			rp := (n + k.lanes - 1) / k.lanes * k.lanes
			if rp > k.maxRows {
				return 0, fmt.Errorf("%w: column %d row chunk %d gives core %d %d rows (padded %d); the %s %s K-tile %d design's L1 holds %d (RC %d, at most %d: sim.RowChunk)",
					ErrStream, col, r, c, n, rp, k.target, k.typ, k.kTile, k.maxRows, h.RC, 4*k.maxRows)
			}
			if rp*h.Tokens*4 > AccBytes {
				return 0, fmt.Errorf("%w: column %d core %d: %d rows x %d tokens of f32 accumulators exceed %d bytes", ErrStream, col, c, rp, h.Tokens, AccBytes)
			}
			ob, _ := ObjectBytes(h.Type, h.T, rp)
			wbuf := alignedBytes(h.Tiles * ob)
			for i := 0; i < h.Tiles; i++ {
				src := weights[wo+i*tb : wo+(i+1)*tb]
				CoreObject(h.Type, h.T, src, rc, first, n, rp, wbuf[i*ob:(i+1)*ob])
			}
			yb := alignedBytes(4 * h.Tokens * rp)
			y := unsafe.Slice((*float32)(unsafe.Pointer(&yb[0])), h.Tokens*rp)
			if err := runCore(k.target, h.Type, h.T, wbuf, ob, rp, h.Tiles, recs, stride, h.Tokens, y); err != nil {
				return 0, fmt.Errorf("column %d row chunk %d core %d: %w", col, r, c, err)
			}
			for b := 0; b < h.Tokens; b++ {
				for i := 0; i < n; i++ {
					o := oo + 4*(b*rc+first+i)
					putF32(out[o:], y[b*rp+i])
				}
			}
		}
		wo += h.Tiles * tb
		oo += 4 * h.Tokens * rc
	}
	return len(out), nil
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

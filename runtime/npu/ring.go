package npu

import (
	"fmt"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/design"
)

// The staging ring and the I/O buffers: two staging buffers the weights
// stream through, each holding one chunk of a matrix as the design's weight
// runs; the activation and output buffers; the instruction buffers.

// ringBuf is one staging buffer.
type ringBuf struct {
	bo    BO
	host  []byte
	owner *mat // what it holds: chunk of owner (a new blob gets a new mat)
	chunk int
	seq   int64 // last submission reading it
	ahead bool  // staged by a prefetch, not used since
}

type ioBuf struct {
	bo   BO
	host []byte
}

type instrBuf struct {
	ioBuf
	seq int64
}

// allocRing allocates the two staging buffers and the instruction buffers.
func (b *Backend) allocRing() error {
	for i := range b.ring {
		bo, host, err := b.alloc(BOData, b.opt.RingSize)
		if err != nil {
			return err
		}
		b.ring[i] = ringBuf{bo: bo, host: host}
	}
	depth := max(1, min(b.info.MaxInFlight, 4))
	for range depth {
		bo, host, err := b.alloc(BOInstr, instrBOSize)
		if err != nil {
			return err
		}
		b.instr = append(b.instr, instrBuf{ioBuf: ioBuf{bo, host}})
	}
	return nil
}

func (b *Backend) alloc(kind BOKind, size int) (BO, []byte, error) {
	bo, err := b.dev.Alloc(kind, size)
	if err != nil {
		return 0, nil, fmt.Errorf("allocate %s buffer of %d bytes: %w", kind, size, err)
	}
	host, err := b.dev.Map(bo)
	if err != nil {
		b.dev.Free(bo)
		return 0, nil, fmt.Errorf("map %s buffer: %w", kind, err)
	}
	b.stats.PinnedBytes += int64(size)
	b.stats.PinnedPeak = max(b.stats.PinnedPeak, b.stats.PinnedBytes)
	return bo, host[:size:size], nil
}

func (b *Backend) free(bo BO, size int) {
	if bo == 0 {
		return
	}
	b.dev.Free(bo)
	b.stats.PinnedBytes -= int64(size)
}

func (b *Backend) freeAll() {
	for _, mt := range b.mats {
		b.dropResident(mt)
	}
	for i := range b.ring {
		b.free(b.ring[i].bo, len(b.ring[i].host))
		b.ring[i] = ringBuf{}
	}
	for _, in := range b.instr {
		b.free(in.bo, len(in.host))
	}
	b.instr = nil
	b.free(b.act.bo, len(b.act.host))
	b.free(b.out.bo, len(b.out.host))
	b.act, b.out = ioBuf{}, ioBuf{}
}

// stage returns the ring buffer holding chunk ci of mt, copying it from the
// blob into the buffer not used by the latest submission if no buffer holds
// it yet. With async, the copy and sync run in the background (a prefetch).
// Each group's run is written in the kernel's order (params.go): by row
// chunk, then tile, then plane.
func (b *Backend) stage(mt *mat, ci int, async bool) (int, error) {
	for i := range b.ring {
		r := &b.ring[i]
		if r.owner == mt && r.chunk == ci {
			switch {
			case async:
			case r.ahead:
				b.stats.PrefetchHits++
			default:
				b.stats.ReusedBytes += int64(mt.chunks[ci].Bytes)
			}
			r.ahead = r.ahead && async
			return i, nil
		}
	}
	i := 0
	if b.lastRing == 0 {
		i = 1
	}
	r := &b.ring[i]
	if err := b.waitSeq(r.seq); err != nil {
		return 0, err
	}
	r.owner, r.chunk, r.ahead = mt, ci, async
	ch := mt.chunks[ci]
	fill := func() error {
		StageChunk(mt.d, mt.m.G, mt.m.Blob, ch, r.host)
		return b.dev.Sync(r.bo, ToDevice, 0, ch.Bytes)
	}
	b.stats.WeightBytes += int64(ch.Bytes)
	b.stats.BytesToDevice += int64(ch.Bytes)
	b.stats.Syncs++
	if !async {
		if err := fill(); err != nil {
			r.owner = nil
			return 0, fmt.Errorf("sync staging buffer: %w", err)
		}
		return i, nil
	}
	b.stats.Prefetches++
	b.pf.Add(1)
	go func() {
		defer b.pf.Done()
		if err := fill(); err != nil {
			b.pfErr = fmt.Errorf("prefetch: sync staging buffer: %w", err)
		}
	}()
	return i, nil
}

// StageChunk copies chunk ch of the planar blob into dst as design d's
// weight runs: the chunk's groups back to back, each as d says a column's
// run is (for each row block, each K-tile, each core: its piece in the
// core layout, zero rows past the group's end). This is the one place the
// weights change layout on their way to the cores (gemv.Piece.Pack); the
// DMAs of the design move the pieces as they are. dst holds ch.Bytes.
func StageChunk(d *design.Design, g planar.Geometry, blob []byte, ch Chunk, dst []byte) {
	pb, R, br := d.PieceBytes(), d.Rows, d.BlockRows()
	off := 0
	for c := ch.Group0; c < ch.Group0+ch.Groups; c++ {
		_, rows := g.GroupRows(c)
		for b := 0; b < d.Blocks(rows); b++ {
			for t := ch.Tile0; t < ch.Tile0+ch.Tiles; t++ {
				for k := 0; k < d.Cores(); k++ {
					r0 := b*br + k*R
					n := max(0, min(R, rows-r0))
					d.Piece.Pack(dst[off:off+pb], g, blob, c, t, r0, n)
					off += pb
				}
			}
		}
	}
}

// prefetch stages, in the background, the first chunk of the NPU call that
// followed this one last time (decode repeats the same sequence every
// token), into the buffer the latest submission does not read, so that the
// copy overlaps the device's run and the host's work until that call.
//
// Resident matrices need no staging: the prefetch goes to the first
// streamed call after them.
func (b *Backend) prefetch(mt *mat) {
	nm := b.mats[b.next[mt.name]]
	for hops := 0; nm != nil && nm.res != nil && hops < len(b.mats); hops++ {
		nm = b.mats[b.next[nm.name]]
	}
	if nm == nil || nm.kernel == 0 || len(nm.chunks) == 0 || nm.res != nil {
		return
	}
	if _, err := b.stage(nm, 0, true); err != nil {
		b.pfErr = err
	}
}

// joinPrefetch waits for a background prefetch; its error faults the
// device at the next call.
func (b *Backend) joinPrefetch() {
	b.pf.Wait()
	if b.pfErr != nil && !b.faulted {
		err := b.pfErr
		b.pfErr = nil
		for i := range b.ring {
			b.ring[i].owner = nil
		}
		b.fault("prefetch", err)
	}
}

// ensureIO grows the activation and output buffers to hold act and out bytes.
func (b *Backend) ensureIO(act, out int) error {
	for _, x := range []struct {
		buf  *ioBuf
		need int
	}{{&b.act, act}, {&b.out, out}} {
		if len(x.buf.host) >= x.need {
			continue
		}
		b.free(x.buf.bo, len(x.buf.host))
		*x.buf = ioBuf{}
		bo, host, err := b.alloc(BOData, max(x.need, b.opt.IOSize))
		if err != nil {
			return err
		}
		*x.buf = ioBuf{bo, host}
	}
	return nil
}

func (b *Backend) sync(bo BO, dir Direction, n int) error {
	if err := b.dev.Sync(bo, dir, 0, n); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	b.stats.Syncs++
	if dir == ToDevice {
		b.stats.BytesToDevice += int64(n)
	} else {
		b.stats.BytesFromDevice += int64(n)
	}
	return nil
}

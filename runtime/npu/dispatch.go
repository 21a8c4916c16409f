package npu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// A call on the device: its dispatches, what each writes into the I/O
// buffers, the stream each submits, and the waits.

type flight struct {
	seq int64
	run Run
}

// run computes the call on the device: per group of tokens that fits the
// I/O buffers, it writes every dispatch's parameter header and activation
// records into bo1, stages each chunk into the ring and submits one TXN
// stream per MaxTokens tokens of it, then reads the columns' outputs back
// into y, adding the partial sums of chunks that split K.
func (b *Backend) run(mt *mat, x, y []float32, n int) error {
	g := mt.m.G
	per := ioTokens(mt.d, g, mt.chunks, b.opt.IOSize, n)
	l := &b.io
	for t0 := 0; t0 < n; t0 += per {
		tb := min(per, n-t0)
		planIO(mt.d, g, mt.chunks, tb, l)
		if err := b.ensureIO(l.act, l.out); err != nil {
			return err
		}
		for i := range l.d {
			b.putActs(mt, &l.d[i], x[t0*g.K:])
		}
		if err := b.sync(b.act.bo, ToDevice, l.act); err != nil {
			return err
		}
		for i := 0; i < len(l.d); {
			ci := l.d[i].ci
			ri := -1 // resident: the chunk's own buffer
			if mt.res == nil {
				var err error
				if ri, err = b.stage(mt, ci, false); err != nil {
					return err
				}
			}
			for ; i < len(l.d) && l.d[i].ci == ci; i++ {
				if err := b.submit(mt, &l.d[i], ri); err != nil {
					return err
				}
			}
		}
		if t0+tb == n {
			b.prefetch(mt)
		}
		if err := b.waitAll(); err != nil {
			return err
		}
		if err := b.sync(b.out.bo, FromDevice, l.out); err != nil {
			return err
		}
		for i := range l.d {
			b.gather(mt, &l.d[i], y[t0*g.N:])
		}
	}
	return nil
}

// header returns the header of dispatch dp of mt.
func (b *Backend) header(mt *mat, dp *ioDispatch) design.Header {
	ch := mt.chunks[dp.ci]
	b.rows = b.rows[:0]
	for c := ch.Group0; c < ch.Group0+ch.Groups; c++ {
		_, n := mt.m.G.GroupRows(c)
		b.rows = append(b.rows, n)
	}
	return mt.d.NewHeader(ch.Tiles, dp.ts, b.rows)
}

// putActs writes dispatch dp's header object and activation records into
// bo1 (x is the token group's activations).
func (b *Backend) putActs(mt *mat, dp *ioDispatch, x []float32) {
	ch := mt.chunks[dp.ci]
	PutRecords(mt.d, mt.m.G, b.header(mt, dp), x[dp.s0*mt.m.G.K:], ch.Tile0, ch.Tiles, dp.ts, b.act.host[dp.hdr:])
}

// PutRecords writes a dispatch's activation objects into dst as design d
// takes them for a matrix of geometry g: the header object h, then per
// K-tile of [tile0, tile0+tiles), per token of x ([tokens][K]), one record,
// the order the cores take them in each row block. dst holds
// (1 + tiles*tokens) records.
func PutRecords(d *design.Design, g planar.Geometry, h design.Header, x []float32, tile0, tiles, tokens int, dst []byte) {
	rec := d.RecordBytes()
	h.Put(dst[:rec])
	o := rec
	for i := 0; i < tiles; i++ {
		k0 := (tile0 + i) * g.KTile
		for t := 0; t < tokens; t++ {
			PutActs(g.Type, x[t*g.K+k0:t*g.K+k0+g.KTile], 1, g.KTile, dst[o:o+rec])
			o += rec
		}
	}
}

// gather moves dispatch dp's outputs from bo2 into y (the token group's
// outputs): per column, per row block, per token, the block's rows (those
// past the group's end are padding); the first K-chunk of a row stores,
// later ones add.
func (b *Backend) gather(mt *mat, dp *ioDispatch, y []float32) {
	g := mt.m.G
	ch := mt.chunks[dp.ci]
	br := mt.d.BlockRows()
	out := b.out.host
	for j, c := 0, ch.Group0; c < ch.Group0+ch.Groups; j, c = j+1, c+1 {
		first, rows := g.GroupRows(c)
		o := dp.outs[j]
		for r0 := 0; r0 < rows; r0 += br {
			n := min(br, rows-r0)
			for t := dp.s0; t < dp.s0+dp.ts; t++ {
				yy := y[t*g.N+first+r0 : t*g.N+first+r0+n]
				for i := range yy {
					v := math.Float32frombits(binary.LittleEndian.Uint32(out[o+4*i:]))
					if ch.Tile0 > 0 {
						v = yy[i] + v
					}
					yy[i] = v
				}
				o += 4 * br
			}
		}
	}
}

// submit builds dispatch d's TXN stream into a free instruction buffer
// and runs mt's kernel over ring buffer ri (-1: mt's resident buffer of the
// dispatch's chunk) and the I/O buffers.
func (b *Backend) submit(mt *mat, d *ioDispatch, ri int) error {
	for len(b.inflight) >= len(b.instr) {
		if err := b.waitSeq(b.inflight[0].seq); err != nil {
			return err
		}
	}
	in := &b.instr[b.seq%int64(len(b.instr))]
	if err := b.waitSeq(in.seq); err != nil {
		return err
	}
	w, cnt, err := buildStream(&b.gemv, mt.d, mt.m.G, mt.chunks[d.ci], d, b.opt.MaxBDBytes)
	if err != nil {
		return fmt.Errorf("dispatch %d: %w", b.seq+1, err)
	}
	if 4*len(w) > len(in.host) {
		return fmt.Errorf("dispatch %d: a stream of %d words, instruction buffers hold %d bytes", b.seq+1, len(w), len(in.host))
	}
	for i, v := range w {
		binary.LittleEndian.PutUint32(in.host[4*i:], v)
	}
	if err := b.sync(in.bo, ToDevice, 4*len(w)); err != nil {
		return err
	}
	wbo := BO(0)
	if ri >= 0 {
		wbo = b.ring[ri].bo
	} else {
		wbo = mt.res[d.ci].bo
	}
	r, err := b.dev.Run(mt.kernel, OpcodeTxn, in.bo, len(w), wbo, b.act.bo, b.out.bo)
	b.seq++
	if err != nil {
		return fmt.Errorf("dispatch %d: run: %w", b.seq, err)
	}
	b.stats.Dispatches++
	b.stats.StreamedBytes += cnt.WeightBytes
	if ri < 0 {
		b.stats.ResidentRead += cnt.WeightBytes
	}
	b.stats.TxnWords += int64(cnt.Words)
	b.stats.BDs += int64(cnt.BDs)
	if b.lastK != 0 && b.lastK != mt.kernel {
		b.stats.ContextSwitches++
	}
	b.lastK = mt.kernel
	b.inflight = append(b.inflight, flight{b.seq, r})
	in.seq = b.seq
	if ri >= 0 {
		b.ring[ri].seq, b.lastRing = b.seq, ri
	}
	return nil
}

// buildStream builds into gv the TXN stream of dispatch dp of chunk ch of
// g on design d: the columns' runs back to back from the start of the
// staging buffer, the header object and records at dp.hdr, the outputs at
// dp.outs, on the shim channels and BDs of d's shim map.
func buildStream(gv *txn.GEMV, d *design.Design, g planar.Geometry, ch Chunk, dp *ioDispatch, maxBD int) ([]uint32, txn.Counts, error) {
	rec := d.RecordBytes()
	*gv = txn.GEMV{Gen: txn.Gen(d.Target.Gen), Map: d.Shim, Weights: gv.Weights[:0], Outs: gv.Outs[:0],
		Header: txn.Range{Off: dp.hdr, Bytes: rec}, Records: txn.Range{Off: dp.hdr + rec, Bytes: ch.Tiles * dp.ts * rec},
		MaxBDBytes: maxBD}
	woff := 0
	for j, c := 0, ch.Group0; c < ch.Group0+ch.Groups; j, c = j+1, c+1 {
		_, rows := g.GroupRows(c)
		wb := ch.Tiles * StagedTileBytes(d, rows)
		gv.Weights = append(gv.Weights, txn.Range{Off: woff, Bytes: wb})
		gv.Outs = append(gv.Outs, txn.Range{Off: dp.outs[j], Bytes: outBytes(d, rows, dp.ts)})
		gv.Replays = max(gv.Replays, d.Blocks(rows))
		woff += wb
	}
	return gv.Build()
}

// FirstStream returns the TXN stream of the first dispatch of a call of
// tokens tokens on matrix g on design d, with staging and I/O buffers of
// the default sizes, as the Backend submits it (the buffer addresses left
// to the patches), and its header.
func FirstStream(d *design.Design, g planar.Geometry, tokens int) ([]uint32, design.Header, txn.Counts, error) {
	chunks, err := PlanChunks(d, g, DefaultRingSize)
	if err != nil {
		return nil, design.Header{}, txn.Counts{}, err
	}
	if tokens < 1 {
		return nil, design.Header{}, txn.Counts{}, fmt.Errorf("npu: %d tokens", tokens)
	}
	var l ioLayout
	planIO(d, g, chunks, min(tokens, ioTokens(d, g, chunks, DefaultIOSize, tokens)), &l)
	dp := &l.d[0]
	ch := chunks[dp.ci]
	var rows []int
	for c := ch.Group0; c < ch.Group0+ch.Groups; c++ {
		_, n := g.GroupRows(c)
		rows = append(rows, n)
	}
	var gv txn.GEMV
	w, cnt, err := buildStream(&gv, d, g, ch, dp, 0)
	return w, d.NewHeader(ch.Tiles, dp.ts, rows), cnt, err
}

// waitSeq waits for every submission up to seq.
func (b *Backend) waitSeq(seq int64) error {
	for b.done < seq && len(b.inflight) > 0 {
		f := b.inflight[0]
		b.inflight = b.inflight[1:]
		if err := b.dev.Wait(f.run, b.opt.Timeout); err != nil {
			if errors.Is(err, ErrTimeout) {
				return fmt.Errorf("dispatch %d: %w after %v", f.seq, err, b.opt.Timeout)
			}
			return fmt.Errorf("dispatch %d: %w", f.seq, err)
		}
		b.done = f.seq
	}
	return nil
}

func (b *Backend) waitAll() error { return b.waitSeq(b.seq) }

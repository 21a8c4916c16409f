package pack

import (
	"context"
	"fmt"
	"hash"
	"io"
	"runtime"
	"sync"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
)

// The tensor stage of Run as a pipeline, so that reading, hashing,
// repacking and writing overlap across cores:
//
//	reader (1): read, in plan order --> hasher (1): the digest, in plan order
//	                                \-> packers (GOMAXPROCS-1): planar.Pack and the blob's crc32c, any order
//	                                \-> writer (the caller): AddBlobChecksum in plan order
//
// The digest (Source.ContentSHA256) is one SHA-256 over every tensor in
// plan order, so it cannot be split; its goroutine is the one stage that
// has a core to itself, and on 2 cores it sets the pace (0.8 s per GB with
// SHA-NI on Zen 3). Every other stage runs beside it: the packers compute
// each blob's checksum right after packing it, while it is in their cache,
// and the writer's blobs are in layout.BlobBuf buffers, which the Writer
// sends to the file with O_DIRECT, so writing costs no CPU copy. The
// output is the serial loop's byte for byte (writeTensorsSerial in the
// tests): blobs go to the Writer in plan order, and the digest sees the
// tensors in plan order. At most inFlight bytes of source and packed
// buffers are held at a time (one entry larger than that runs alone), and
// buffers are reused, so the peak RSS stays near inFlight whatever the
// model's size.

// inFlight bounds the bytes of the entries between reading and writing (a
// variable so that the tests can make entries outgrow it).
var inFlight int64 = 32 << 20

// writeTensors reads, hashes, repacks and writes the tensors of plan, in
// plan order, appending their manifest entries to m. Its tensor stage is
// a variable so that the tests can run the serial reference instead.
var writeTensors = writeTensorsPipelined

// packJob is one plan entry on its way through the pipeline.
type packJob struct {
	e       *Entry
	src     []byte        // the parts' bytes, in row order
	srcOff  int64         // where src starts in the file, if mapped
	mapped  bool          // src is part of the source's mapping, not a pipeline buffer
	dst     []byte        // the packed blob (src itself for raw entries)
	crc     uint32        // layout.Checksum(dst)
	cost    int64         // bytes held against inFlight
	err     error         // a pack error, set before packed is closed
	hashErr error         // a fault while hashing, set before hashed is closed
	packed  chan struct{} // closed when dst and crc are ready
	hashed  chan struct{} // closed when the digest has taken src
}

func writeTensorsPipelined(ctx context.Context, opt *Options, g *layout.GGUF, src io.ReaderAt, plan *Plan, w *layout.Writer, m *layout.Manifest, digest hash.Hash) (err error) {
	var total, done int64
	for _, e := range plan.Entries {
		total += e.Size
	}
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	budget := newBudget(inFlight)
	var bufs bufPool
	toHash := make(chan *packJob, len(plan.Entries))
	toPack := make(chan *packJob, len(plan.Entries))
	toWrite := make(chan *packJob, len(plan.Entries))
	var wg sync.WaitGroup
	srcs := openSource(g, src)
	defer srcs.close()

	// The reader: every entry's parts, mapped or in a buffer, in plan order.
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(toWrite)
		defer close(toPack)
		defer close(toHash)
		for _, e := range plan.Entries {
			n := int64(0)
			for _, t := range e.parts {
				n += t.Size
			}
			j := &packJob{e: e, cost: n, packed: make(chan struct{}), hashed: make(chan struct{})}
			if e.Format != layout.FormatRaw {
				j.cost += e.Size
			}
			if !budget.acquire(j.cost) {
				return
			}
			var err error
			j.src, j.srcOff, j.mapped, err = srcs.entry(e, bufs.get)
			if err != nil {
				readErr = err
				if !j.mapped && j.src != nil {
					bufs.put(j.src)
				}
				budget.release(j.cost)
				return
			}
			toHash <- j
			toPack <- j
			toWrite <- j
		}
	}()

	// The hasher.
	wg.Add(1)
	go func() {
		defer wg.Done()
		failed := false
		for j := range toHash {
			off := 0
			for _, t := range j.e.parts {
				if !failed {
					j.hashErr = catchFault(g.Path, t.Name, func() { hashTensor(digest, t, j.src[off:off+int(t.Size)]) })
					failed = j.hashErr != nil
				}
				off += int(t.Size)
			}
			close(j.hashed)
		}
	}()

	// The packers.
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range toPack {
				j.dst = j.src
				if j.e.Format != layout.FormatRaw {
					j.dst = bufs.get(int(j.e.Size))
				}
				var err error
				if fault := catchFault(g.Path, j.e.Name, func() {
					if j.e.Format != layout.FormatRaw {
						err = planar.Pack(j.e.geom, j.src, j.dst)
					}
					j.crc = layout.Checksum(j.dst)
				}); fault != nil {
					j.err = fault
				} else if err != nil {
					j.err = fmt.Errorf("%s: tensor %q: %w", opt.Input, j.e.Name, err)
				}
				close(j.packed)
			}
		}()
	}

	// The writer (this goroutine): blobs in plan order. On an error it
	// stops the reader (budget.cancel) and waits for the other stages to
	// finish what they hold before returning.
	defer func() {
		if err != nil {
			budget.cancel()
		}
		wg.Wait()
		if err == nil && readErr != nil {
			err = readErr
		}
	}()
	for j := range toWrite {
		if err := ctx.Err(); err != nil {
			return err
		}
		<-j.packed
		if j.err != nil {
			return j.err
		}
		ref, err := w.AddBlobChecksum(j.dst, j.crc)
		if err != nil {
			return err
		}
		j.e.BlobRef = ref
		m.Tensors = append(m.Tensors, j.e.TensorEntry)
		done += j.e.Size
		if opt.Progress != nil {
			opt.Progress(done, total, j.e.Name)
		}
		if j.e.Format != layout.FormatRaw {
			bufs.put(j.dst)
		}
		<-j.hashed
		if j.hashErr != nil {
			return j.hashErr
		}
		if j.mapped {
			srcs.release(j.srcOff, int64(len(j.src)))
		} else {
			bufs.put(j.src)
		}
		budget.release(j.cost)
	}
	return readErr
}

// budget is a counting semaphore of bytes.
type budget struct {
	mu       sync.Mutex
	cond     *sync.Cond
	free     int64
	limit    int64
	canceled bool
}

func newBudget(n int64) *budget {
	b := &budget{free: n, limit: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes are free (or, for n above the limit, until
// nothing is held) and takes them; it returns false once cancel has been
// called.
func (b *budget) acquire(n int64) bool {
	n = min(n, b.limit)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n && !b.canceled {
		b.cond.Wait()
	}
	if b.canceled {
		return false
	}
	b.free -= n
	return true
}

// cancel makes every waiting and later acquire return false.
func (b *budget) cancel() {
	b.mu.Lock()
	b.canceled = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *budget) release(n int64) {
	n = min(n, b.limit)
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// bufPool hands out byte buffers and takes them back, keeping at most
// inFlight bytes of idle ones: the pipeline's buffers are reused rather
// than left to the garbage collector, which would let the heap grow to
// twice what is live.
type bufPool struct {
	mu   sync.Mutex
	free [][]byte
	idle int
}

// get returns a buffer of length n, the smallest idle one that fits, else a
// new layout.BlobBuf (every buffer is one: its capacity is a multiple of
// layout.BlobAlign, so any buffer that fits n bytes fits their padding).
func (p *bufPool) get(n int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		p.free[best] = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.idle -= cap(b)
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return layout.BlobBuf(n)
}

// put returns b to the pool, dropping the largest idle buffers while the
// idle bytes exceed inFlight.
func (p *bufPool) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b)
	p.idle += cap(b)
	for int64(p.idle) > inFlight && len(p.free) > 0 {
		big := 0
		for i, f := range p.free {
			if cap(f) > cap(p.free[big]) {
				big = i
			}
		}
		p.idle -= cap(p.free[big])
		p.free[big] = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
	}
}

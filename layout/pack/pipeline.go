package pack

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
)

// The tensor stage of Run as a pipeline, so that reading, hashing,
// repacking and writing overlap across cores:
//
//	reader (1): each entry's bytes, in plan order, to the hasher and the dispatcher
//	hasher (1): hashes each entry, in plan order (the digest's order)
//	dispatcher (1): hands each entry to the packers, in plan order, with a buffer for its packed blob (arena)
//	packers (cores-1 packing, 2 more writing): planar.Pack, crc32c, WriteBlobAt; any order
//	the caller: manifest entries and progress, in plan order
//
// The digest (Source.ContentSHA256) is one SHA-256 over every tensor in
// plan order, so it cannot be split: the hasher sets the pace (0.7-0.9 s
// per GB with SHA-NI on the development VM), does nothing but hash, and
// every other stage runs beside it:
//   - The reader hands out entries from the GGUF file's mapping (source):
//     no read copy for entries whose parts lie back to back; it populates
//     their pages (or copies the parts of the others) ahead of the hasher.
//   - The reader holds source bytes only (a budget of 1.5 inFlight), the
//     packers' blobs are in a region of their own (arena, at most inFlight): the
//     reader and the hasher run ahead of packing and writing and are not
//     held up by a slow write.
//   - Every blob's offset is fixed before the pipeline starts
//     (Writer.Reserve, in plan order, where AddBlob would have put it), and
//     the file is preallocated to them, so each packer writes the blob it
//     packed itself, at once: there is no writer goroutine that would have
//     to wait for a P after every write (on 2 cores, both busy, that wait
//     stalled the whole pipeline).
//   - Packed blobs, raw ones included, are in BlobAlign-aligned buffers, which
//     the Writer splices into the file's page cache (layout.Writer): a
//     packer blocked in a write leaves its P to the others. The Writer
//     starts the write-back and syncs the file in the background as it
//     grows.
//   - The packers compute each blob's checksum right after packing it,
//     while it is in their cache.
//   - The pipeline runs with one P more than there are cores (morePs).
//
// The output is the serial loop's byte for byte (writeTensorsSerial in the
// tests): the blobs lie where AddBlob in plan order would have put them,
// and the digest sees the tensors in plan order. At most 1.5 inFlight bytes
// of source (mapped, or copied into a buffer when an entry's parts are not
// back to back) and the arena's bytes of packed buffers (at most inFlight)
// are held at a time (an entry larger than a budget holds all of it),
// source bytes are given back as soon as both the hasher and the packer
// are done with them, and buffers are reused, so the peak RSS stays near
// 2.5 inFlight (its anonymous part near the arena's size when the source
// is mapped) whatever the model's size (the pool of source copies keeps at
// most inFlight more of idle buffers).

// inFlight bounds the packed bytes between packing and writing (the arena),
// and 2/3 of the source bytes between reading and packing (a variable so that the
// tests can make entries outgrow it).
var inFlight int64 = 64 << 20

// writeTensors reads, hashes, repacks and writes the tensors of plan, in
// plan order, appending their manifest entries to m. Its tensor stage is
// a variable so that the tests can run the serial reference instead.
var writeTensors = writeTensorsPipelined

// packJob is one plan entry on its way through the pipeline.
type packJob struct {
	e       *Entry
	off     int64         // where the blob goes (Writer.Reserve)
	src     []byte        // the parts' bytes, in row order
	srcOff  int64         // where src starts in the file, if mapped
	mapped  bool          // src is part of the source's mapping, not a pipeline buffer
	unread  bool          // the reader stopped before this entry
	dst     []byte        // the packed blob (a copy of src for raw entries), from the arena
	dstSpan *span         // dst's span in the arena
	crc     uint32        // layout.Checksum(dst)
	srcCost int64         // bytes of src held against the source budget
	users   atomic.Int32  // stages still reading src (the hasher, the packer)
	err     error         // a pack or write error, set before done is closed
	done    chan struct{} // closed when the blob is written (or err is set)
}

func writeTensorsPipelined(ctx context.Context, opt *Options, g *layout.GGUF, src io.ReaderAt, plan *Plan, w *layout.Writer, m *layout.Manifest, digest hash.Hash) (err error) {
	var total int64
	jobs := make([]*packJob, len(plan.Entries))
	for i, e := range plan.Entries {
		total += e.Size
		off, err := w.Reserve(e.Size)
		if err != nil {
			return err
		}
		jobs[i] = &packJob{e: e, off: off, done: make(chan struct{})}
		jobs[i].users.Store(2)
	}
	if err := w.Preallocate(); err != nil {
		return err
	}
	// At most cores-1 packers pack at a time (cpu; one on one core), so that
	// the reader keeps a core, and two more goroutines can be in their
	// writes meanwhile.
	computing := max(1, runtime.GOMAXPROCS(0)-1)
	defer morePs()()
	workers := computing + 2
	cpu := make(chan struct{}, computing)
	// The arena holds a quarter of inFlight, or the largest blob (up to
	// inFlight): with the hasher running ahead on its own budget, packers
	// that wait for a write cost nothing, and each page of the arena is
	// faulted in once (on the development VM, first touches of fresh memory
	// cost 0.1 s for 64 MiB).
	arenaSize := inFlight / 4
	for _, e := range plan.Entries {
		arenaSize = max(arenaSize, min(e.Size, inFlight))
	}
	srcBudget, dsts := newBudget(inFlight+inFlight/2), newArena(arenaSize)
	defer dsts.free() // after the stages are done (the deferred wait below runs first)
	var bufs bufPool
	toDispatch := make(chan *packJob, len(jobs))
	toPack := make(chan *packJob, len(jobs))
	var wg sync.WaitGroup
	srcs := openSource(g, src)
	defer srcs.close()

	// doneWithSrc is called by the hasher and by the packer when they no
	// longer read j.src; the second call gives it back.
	doneWithSrc := func(j *packJob) {
		if j.users.Add(-1) != 0 {
			return
		}
		if j.mapped {
			srcs.release(j.srcOff, int64(len(j.src)))
		} else if j.src != nil {
			bufs.put(j.src)
		}
		srcBudget.release(j.srcCost)
	}

	// The reader: every entry's parts, mapped (and their pages populated) or
	// copied into a buffer, in plan order, handed on to be packed and to be
	// hashed. It waits for nothing but its budget of source bytes (1.5
	// inFlight): the packers wait for buffers of their own. If it stops
	// early (a read error, or a cancel by the hasher or the caller), the
	// entries it did not hand on are done with no src.
	var readErr error
	toHash := make(chan *packJob, len(jobs))
	wg.Go(func() {
		defer close(toDispatch)
		defer close(toHash)
		for i, j := range jobs {
			stop := func(from int) {
				for _, j := range jobs[from:] {
					j.unread = true
					close(j.done)
				}
			}
			n := int64(0)
			for _, t := range j.e.parts {
				n += t.Size
			}
			// An entry larger than its budget takes all of it.
			j.srcCost = min(n, srcBudget.limit)
			if !srcBudget.acquire(j.srcCost) {
				stop(i)
				return
			}
			var err error
			j.src, j.srcOff, j.mapped, err = srcs.entry(j.e, bufs.get)
			if err != nil {
				readErr = err
				if !j.mapped && j.src != nil {
					bufs.put(j.src)
				}
				srcBudget.release(j.srcCost)
				stop(i)
				return
			}
			toDispatch <- j
			toHash <- j
		}
	})

	// The hasher: every entry's parts in plan order (the digest's order).
	// The hash is the pipeline's pace (one SHA-256 over the whole model), so
	// it does nothing else: the reader maps or copies ahead of it, and it
	// runs ahead of the packers rather than in step with their writes (on
	// the development VM, as the reader that also hashed, it waited 0.3-0.9
	// s of 2.3 s for them when one budget held both). A fault while hashing
	// (the file truncated under us) stops the reader; after a cancel it
	// hashes nothing more.
	var hashErr error
	wg.Go(func() {
		for j := range toHash {
			off := 0
			for _, t := range j.e.parts {
				if hashErr == nil && !srcBudget.isCanceled() {
					if hashErr = catchFault(g.Path, t.Name, func() { hashTensor(digest, t, j.src[off:off+int(t.Size)]) }); hashErr != nil {
						srcBudget.cancel()
					}
				}
				off += int(t.Size)
			}
			doneWithSrc(j)
		}
	})

	// The dispatcher: each entry the reader handed on, in plan order, to
	// the packers once the arena has room for its packed blob. An
	// entry it cannot dispatch (the caller's cancel) is done unpacked.
	wg.Go(func() {
		defer close(toPack)
		for j := range toDispatch {
			var ok bool
			if j.dst, j.dstSpan, ok = dsts.get(int(j.e.Size)); !ok {
				j.err = errCanceled
				doneWithSrc(j)
				close(j.done)
				continue
			}
			toPack <- j
		}
	})

	// The packers: pack, checksum and write each blob.
	for range workers {
		wg.Go(func() {
			for j := range toPack {
				j.err = pack(opt, g, w, j, cpu)
				dsts.put(j.dstSpan)
				doneWithSrc(j)
				close(j.done)
			}
		})
	}

	// The caller: manifest entries and progress in plan order. On an error
	// it stops the reader and the dispatcher (cancel); it waits for the
	// other stages to finish what they hold before returning, and then
	// returns the hasher's or the reader's error, if any (a fault while
	// hashing, which may come after the entry's blob was written, or a read
	// error).
	var done int64
	nTensors := len(m.Tensors)
	defer func() {
		if err != nil {
			srcBudget.cancel()
			dsts.cancel()
		}
		wg.Wait()
		if err == nil && hashErr != nil {
			err = hashErr // an entry before any the reader failed on
		}
		if err == nil && readErr != nil {
			err = readErr
		}
		if err == nil && len(m.Tensors) != nTensors+len(jobs) {
			err = fmt.Errorf("%s: the pipeline stopped after %d of %d tensors", opt.Input, len(m.Tensors)-nTensors, len(jobs))
		}
	}()
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-j.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if j.unread {
			return nil // the reader stopped: its error is returned above
		}
		if j.err != nil {
			return j.err
		}
		j.e.BlobRef = layout.BlobRef{Offset: j.off, Size: j.e.Size, CRC32C: j.crc}
		m.Tensors = append(m.Tensors, j.e.TensorEntry)
		done += j.e.Size
		if opt.Progress != nil {
			opt.Progress(done, total, j.e.Name)
		}
	}
	return nil
}

// morePs gives the pipeline one P more than the machine has cores and
// returns the function that puts GOMAXPROCS back. The reader and the
// packers leave their P at every system call (populating and dropping
// mapped pages, the writes); with one P a core, each return from
// a call waited for a P until a busy goroutine was preempted (up to 10 ms),
// and the reader is the pipeline's pace. With a P more, the kernel, which
// lets a thread woken from a call run at once, decides instead: 1.23 s
// against 1.35 s for the 1 GB Q4_0 model on the 2-core development VM
// (medians of 8, interleaved). A GOMAXPROCS already above the core count
// is left as it is. Setting GOMAXPROCS stops the runtime's automatic
// updates of it (from the cgroup quota), so restore gives them back with
// SetDefaultGOMAXPROCS unless the GOMAXPROCS variable had set the value.
func morePs() (restore func()) {
	n := runtime.GOMAXPROCS(0)
	if n > runtime.NumCPU() {
		return func() {}
	}
	runtime.GOMAXPROCS(n + 1)
	if os.Getenv("GOMAXPROCS") == "" {
		return runtime.SetDefaultGOMAXPROCS
	}
	return func() { runtime.GOMAXPROCS(n) }
}

// pack packs j.src into j.dst (a raw entry is copied: the blob goes to the
// file from an arena buffer, padded to whole pages, as every other blob does),
// computes its checksum and writes it at j.off.
func pack(opt *Options, g *layout.GGUF, w *layout.Writer, j *packJob, cpu chan struct{}) error {
	var err error
	cpu <- struct{}{}
	fault := catchFault(g.Path, j.e.Name, func() {
		if j.e.Format != layout.FormatRaw {
			err = planar.Pack(j.e.geom, j.src, j.dst)
		} else if copy(j.dst, j.src) != len(j.dst) {
			err = fmt.Errorf("%d bytes of data for a raw blob of %d", len(j.src), len(j.dst))
		}
		j.crc = layout.Checksum(j.dst)
	})
	<-cpu
	if fault != nil {
		return fault
	}
	if err != nil {
		return fmt.Errorf("%s: tensor %q: %w", opt.Input, j.e.Name, err)
	}
	if err := w.WriteBlobAt(j.dst, j.off); err != nil {
		return fmt.Errorf("tensor %q: %w", j.e.Name, err)
	}
	return nil
}

// errCanceled is the error of an entry left unpacked after the pipeline was
// canceled (the caller has returned its own error by then).
var errCanceled = errors.New("pipeline canceled")

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

// isCanceled reports whether cancel has been called.
func (b *budget) isCanceled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.canceled
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

package pack

import (
	"sync"

	"github.com/xdna-go/xdna/internal/hugepage"
	"github.com/xdna-go/xdna/layout"
)

// arena hands out the pipeline's buffers (the source bytes of entries, the
// packed blobs: an arena each) from one region allocated once, in the
// order they are asked for (plan order: the reader and the dispatcher
// ask), and takes them back in any order (the hasher and the packers
// finish in any order). Space is reused once every buffer handed out
// before it has come back, so the region is a ring: after its first lap,
// the pipeline touches no new memory (no page faults, no garbage for the
// collector; on the development VM the pool of buffers it replaces spent
// 5-9% of the pack's CPU time in both).
// Every buffer starts on a layout.BlobAlign boundary of the region and has
// its length rounded up to one as capacity: the Writer writes it, padding
// included, in whole pages.
//
// The region is mapped anonymous memory, in huge pages where the system
// gives them (hugepage.Alloc): faulting in 64 MiB a 4 KiB page at a time
// took 5% of the pack's CPU time on the development VM. free unmaps it.
//
// A buffer larger than the region waits until the region is empty, gets a
// layout.BlobBuf of its own, and holds the whole region until it comes back,
// so the bytes held stay within max(size, the largest buffer). That buffer
// is kept for the next one larger than the region (one is out at a time),
// so that a model whose entries outgrow the region does not allocate a
// buffer and leave it to the collector for each of them.
type arena struct {
	mu       sync.Mutex
	cond     *sync.Cond
	buf      []byte       // [size] the region, BlobAlign-aligned; allocated at the first get
	unmap    func() error // buf is an anonymous mapping, which this unmaps; else nil
	big      []byte       // [cap] the last buffer larger than the region, from the heap
	size     int64        // a multiple of layout.BlobAlign
	head     int64        // position of the next buffer: ring offset head%size, lap head/size
	spans    []*span      // handed out, in order; spans[0] starts at the tail
	canceled bool
}

// span is one buffer handed out: ring positions [start, end) (a buffer
// that would not fit before the end of the lap starts the next one, and
// the skipped bytes belong to it).
type span struct {
	start, end int64
	back       bool
}

func newArena(size int64) *arena {
	a := &arena{size: max(layout.Padded(size), layout.BlobAlign)}
	a.cond = sync.NewCond(&a.mu)
	return a
}

// get returns a buffer of length n and the span to give back with put. It
// waits for room; it returns false once cancel has been called.
func (a *arena) get(n int) ([]byte, *span, bool) {
	c := layout.Padded(int64(n))
	a.mu.Lock()
	defer a.mu.Unlock()
	if c > a.size {
		for len(a.spans) > 0 && !a.canceled {
			a.cond.Wait()
		}
		if a.canceled {
			return nil, nil, false
		}
		s := &span{start: a.head, end: a.head + a.size}
		a.head = s.end
		a.spans = append(a.spans, s)
		if int64(cap(a.big)) < c {
			a.big = layout.BlobBuf(n)
		}
		return a.big[:n:c], s, true
	}
	for !a.canceled {
		start := a.head
		if off := start % a.size; off+c > a.size {
			start += a.size - off // the rest of this lap goes with this buffer
		}
		tail := start // nothing out: the whole region is free
		if len(a.spans) > 0 {
			tail = a.spans[0].start
		}
		if start+c-tail <= a.size {
			if a.buf == nil {
				a.alloc()
			}
			s := &span{start: a.head, end: start + c}
			a.head = s.end
			a.spans = append(a.spans, s)
			off := start % a.size
			return a.buf[off : off+int64(n) : off+c], s, true
		}
		a.cond.Wait()
	}
	return nil, nil, false
}

// alloc maps the region, or takes it from the heap if it cannot be mapped.
func (a *arena) alloc() {
	b, unmap, err := hugepage.Alloc(int(a.size))
	if err != nil {
		a.buf = layout.BlobBuf(int(a.size))
		return
	}
	a.buf, a.unmap = b, unmap
}

// free unmaps the region. No buffer of the arena may be used after it.
func (a *arena) free() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.unmap != nil {
		a.unmap()
	}
	a.buf, a.unmap, a.big = nil, nil, nil
}

// put gives back the buffer of span s.
func (a *arena) put(s *span) {
	a.mu.Lock()
	s.back = true
	i := 0
	for i < len(a.spans) && a.spans[i].back {
		i++
	}
	if i > 0 {
		a.spans = append(a.spans[:0], a.spans[i:]...)
	}
	a.mu.Unlock()
	if i > 0 {
		a.cond.Broadcast()
	}
}

// cancel makes every waiting and later get return false.
func (a *arena) cancel() {
	a.mu.Lock()
	a.canceled = true
	a.mu.Unlock()
	a.cond.Broadcast()
}

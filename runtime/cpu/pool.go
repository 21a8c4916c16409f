package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Task is a unit of parallel work: Run computes the index range [lo, hi) on
// thread worker (0 <= worker < Pool.Threads(); 0 is the calling goroutine),
// so that a task can keep per-thread scratch. Implementations are usually
// pointers to structs kept by the caller, so that handing one to Pool.For
// does not allocate.
type Task interface {
	Run(worker, lo, hi int)
}

// Pool is a fixed set of worker goroutines, created once by NewPool, that
// run the row ranges of the matrix kernels (and any other Task). The calling
// goroutine takes part in every job, so a Pool of n threads starts n-1
// goroutines. A job hands out its ranges through an atomic counter, so a
// slow worker does not hold the others back, and nothing is allocated.
// The chunks are dealt in contiguous segments, one per thread, each with
// its own counter: a thread takes its own segment's chunks in order and
// then those left in the others'. So a thread reads one run of a
// matrix's rows, which its prefetches (and the hardware's) follow from
// chunk to chunk, instead of every other chunk; and a thread held back
// still loses its chunks to the others.
//
// After a job a helper polls for the next one for a short while (spinFor)
// before it blocks on its channel: a decoding step runs a hundred or so
// small products back to back, and waking a blocked goroutine costs tens of
// microseconds, as much as a 0.5 MB product. The caller likewise polls for
// the helpers to finish (after prefetching the start of its own segment of
// the next matrix, when that is known), for as long, and then blocks until
// the last one wakes it: on a machine whose cores are shared, a helper
// that the system has taken off its core can hold a job back for
// milliseconds, and a caller that keeps polling holds a core that could
// run it.
//
// A Pool runs one job at a time: concurrent callers are serialised. It also
// owns the scratch buffers of the kernels (quantised activations), which
// grow to the largest call seen and are then reused.
//
// A nil *Pool is valid everywhere a pool is taken: the work then runs on the
// calling goroutine, with a shared package-level scratch.
type Pool struct {
	mu      sync.Mutex // held for the whole of a kernel call or For
	threads int
	wake    []chan struct{} // one per helper goroutine
	state   []atomic.Int32  // one per helper: helperSpinning, helperParked or helperBusy
	pending atomic.Int32    // helpers still running the current job
	waiting atomic.Bool     // the caller has stopped polling pending and blocks on done
	done    chan struct{}   // the last helper of a job wakes a blocked caller
	closed  bool
	exited  sync.WaitGroup // helpers that have not returned yet

	// the job being run
	task  Task
	n     int // index range [0, n)
	grain int // indices per chunk
	parts int // threads taking part: segments of the chunks
	segs  []segment

	// ahead is what the job after this one will read (the next matrix's
	// weights), which the helpers prefetch once they are done (see
	// prefetchAhead); nil if unknown.
	ahead []byte

	scratch scratch
	mm      mmJob
}

// segment is one thread's share of a job's chunks: next is the next
// chunk to take, up to hi. Each sits on a cache line of its own, so that
// the threads' counters do not share one.
type segment struct {
	next atomic.Int64
	hi   int64
	_    [48]byte
}

// serial serves nil pools.
var serial = &Pool{threads: 1}

// NewPool starts a pool of threads workers (the caller counts as one);
// threads <= 0 means runtime.GOMAXPROCS(0).
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads, wake: make([]chan struct{}, threads-1), state: make([]atomic.Int32, threads-1),
		done: make(chan struct{}, 1), segs: make([]segment, threads)}
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
		p.exited.Add(1)
		go p.worker(i)
	}
	return p
}

// The states of a helper.
const (
	helperSpinning int32 = iota // polling for a job
	helperParked                // blocked on its wake channel
	helperBusy                  // handed a job
)

// spinFor is how long a helper polls for the next job, and the caller for
// the helpers' end, before blocking.
const spinFor = 200 * time.Microsecond

// spin polls done until it returns true or spinFor has passed, yielding to
// other goroutines now and then (so that it makes progress even with fewer
// Ps than threads). It reports whether done returned true.
func spin(done func() bool) bool {
	start := time.Now()
	for n := 1; ; n++ {
		if done() {
			return true
		}
		if n%256 == 0 {
			if time.Since(start) > spinFor {
				return false
			}
			runtime.Gosched()
		}
	}
}

// Threads returns the number of threads, the caller included.
func (p *Pool) Threads() int {
	if p == nil {
		return 1
	}
	return p.threads
}

// Close stops the helper goroutines. The pool must not be used afterwards
// (a nil pool never needs closing).
func (p *Pool) Close() {
	if p == nil || p == serial {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for _, w := range p.wake {
		close(w)
	}
	p.mu.Unlock()
	// A helper may still be spinning (up to spinFor) before it sees the
	// closed channel; Close returns only when every helper has.
	p.exited.Wait()
}

// worker runs the jobs of helper i (thread i+1) until the pool closes.
func (p *Pool) worker(i int) {
	defer p.exited.Done()
	st := &p.state[i]
	busy := func() bool { return st.Load() == helperBusy }
	for {
		if !spin(busy) && st.CompareAndSwap(helperSpinning, helperParked) {
			if _, ok := <-p.wake[i]; !ok {
				return
			}
		}
		p.drain(i + 1)
		// Read before the caller can see the job done and set the next.
		ahead, parts := p.ahead, p.parts
		st.Store(helperSpinning) // before the caller can see the job done
		if p.pending.Add(-1) == 0 && p.waiting.CompareAndSwap(true, false) {
			p.done <- struct{}{}
		}
		if ahead != nil {
			prefetchAhead(ahead, i+1, parts, st)
		}
	}
}

// aheadBytes is how much of a thread's segment of the next matrix a
// helper prefetches while it waits (see prefetchAhead). It stops when it
// is handed the next job, so a long gap (the attention, the caller's
// element-wise work) can fill more than the L2 cache. Decoding token by
// token with 2 MiB and with 192 KiB (the value before), alternated in one
// process (Zen 5 VM, 2 threads, 2026-12-05 07:40 UTC, the medians of
// 300-400 per-token time ratios, three runs a model): 0.5-1.1% less time a
// token on the 0.5B shape in Q4_0, Q8_0 and Q4_K_M, 1.4-4.4% on the 1B
// shape; 1 MiB took 0.3-1.6% and 1.3-3.9% less, 4 MiB 0.2-0.9% on the
// 0.5B shape (other runs).
const aheadBytes = 2 << 20

// prefetchAhead is what helper id (of parts threads) does between the end
// of its part of a job and the next job, when the next job's memory is
// known (Pool.ahead: decoding reads the matrices of a model in a fixed
// order): it asks for the first aheadBytes of its own segment of it and,
// helper 1, of the caller's, a few KiB at a time, and stops as soon as it
// is handed a job. Between two products of a decoding step the caller
// runs the norms, rope, attention or an activation alone, and memory would
// sit idle; with this the small products (qkv, attn_output) and the first
// lines of the large ones come from the caches instead. Prefetches never
// fault and change no result.
func prefetchAhead(b []byte, id, parts int, st *atomic.Int32) {
	if !asmOn() || len(b) == 0 {
		return
	}
	busy := func() bool { return st.Load() == helperBusy }
	if prefetchSeg(b, id, parts, busy) && id == 1 {
		prefetchSeg(b, 0, parts, busy)
	}
}

// prefetchSeg asks for the first aheadBytes of segment k (of parts) of b,
// a few KiB at a time, and stops, reporting false, as soon as stop says
// so.
func prefetchSeg(b []byte, k, parts int, stop func() bool) bool {
	lo := (k * len(b) / parts) &^ 63
	hi := min(len(b), lo+aheadBytes) &^ 63
	for ; lo < hi; lo += 4 << 10 {
		if stop() {
			return false
		}
		prefetchLinesAVX2(&b[lo], min(4<<10, hi-lo))
	}
	return true
}

// drain runs chunks of the current job on thread id until none is left:
// its own segment's first, then the others'.
func (p *Pool) drain(id int) {
	for k := 0; k < p.parts; k++ {
		s := &p.segs[(id+k)%p.parts]
		for {
			c := s.next.Add(1) - 1
			if c >= s.hi {
				break
			}
			lo := int(c) * p.grain
			p.task.Run(id, lo, min(lo+p.grain, p.n))
		}
	}
}

// For runs t over [0, n) in chunks of at least grain indices, spread over
// the pool's threads, and returns when all are done. Ranges never overlap
// and cover [0, n) exactly once.
func (p *Pool) For(n, grain int, t Task) {
	if p == nil {
		p = serial
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run(n, grain, t)
}

// run is For with p.mu held.
func (p *Pool) run(n, grain int, t Task) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	helpers := 0
	if p.threads > 1 && n > grain && !p.closed {
		// About four chunks per thread balances the load without making the
		// chunks so small that the counter dominates.
		grain = max(grain, (n+4*p.threads-1)/(4*p.threads))
		helpers = min(p.threads-1, (n+grain-1)/grain-1)
	}
	if helpers == 0 {
		t.Run(0, 0, n)
		return
	}
	p.task, p.n, p.grain = t, n, grain
	chunks := (n + grain - 1) / grain
	p.parts = helpers + 1
	for i := 0; i < p.parts; i++ {
		p.segs[i].next.Store(int64(i * chunks / p.parts))
		p.segs[i].hi = int64((i + 1) * chunks / p.parts)
	}
	p.pending.Store(int32(helpers))
	for i := 0; i < helpers; i++ {
		// A polling helper takes the job by itself; a blocked one is woken.
		if !p.state[i].CompareAndSwap(helperSpinning, helperBusy) {
			p.state[i].Store(helperBusy)
			p.wake[i] <- struct{}{}
		}
	}
	p.drain(0)
	done := func() bool { return p.pending.Load() == 0 }
	if p.ahead != nil && asmOn() && !done() {
		// While the helpers finish, the start of the caller's own segment
		// of the next matrix (decoding, token by token with this and
		// without, alternated in one process: 1.0-1.6% less time a token
		// on the 0.5B shape in Q4_0, Q8_0 and Q4_K_M, 0-2.7% on the 1B).
		prefetchSeg(p.ahead, 0, p.parts, done)
	}
	if !spin(done) {
		// Block. The last helper and this check both take waiting
		// back from true; whichever does, only a helper that does sends.
		p.waiting.Store(true)
		if p.pending.Load() != 0 || !p.waiting.CompareAndSwap(true, false) {
			<-p.done
		}
	}
	p.task = nil
}

package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
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
// slow worker does not hold the others back; starting one costs one channel
// send per helper and nothing is allocated.
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
	done    sync.WaitGroup
	closed  bool

	// the job being run
	task   Task
	n      int // index range [0, n)
	grain  int // indices per chunk
	chunks int // ceil(n / grain)
	next   atomic.Int64

	scratch scratch
	mm      mmJob
}

// serial serves nil pools.
var serial = &Pool{threads: 1}

// NewPool starts a pool of threads workers (the caller counts as one);
// threads <= 0 means runtime.GOMAXPROCS(0).
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads, wake: make([]chan struct{}, threads-1)}
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
		go p.worker(i+1, p.wake[i])
	}
	return p
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
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, w := range p.wake {
		close(w)
	}
}

func (p *Pool) worker(id int, wake chan struct{}) {
	for range wake {
		p.drain(id)
		p.done.Done()
	}
}

// drain runs chunks of the current job on thread id until none is left.
func (p *Pool) drain(id int) {
	for {
		c := int(p.next.Add(1) - 1)
		if c >= p.chunks {
			return
		}
		lo := c * p.grain
		p.task.Run(id, lo, min(lo+p.grain, p.n))
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
	p.chunks = (n + grain - 1) / grain
	p.next.Store(0)
	p.done.Add(helpers)
	for i := 0; i < helpers; i++ {
		p.wake[i] <- struct{}{}
	}
	p.drain(0)
	p.done.Wait()
	p.task = nil
}

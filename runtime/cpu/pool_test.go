package cpu

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdna-go/xdna/planar"
)

type countTask struct {
	hits    []atomic.Int32
	threads int
	bad     atomic.Bool
}

func (c *countTask) Run(w, lo, hi int) {
	if w < 0 || w >= c.threads {
		c.bad.Store(true)
	}
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
}

// TestPoolFor checks that For covers [0, n) exactly once, for many n and
// grains, and allocates nothing.
func TestPoolFor(t *testing.T) {
	for _, threads := range []int{1, 2, 5} {
		p := NewPool(threads)
		for _, n := range []int{0, 1, 2, 7, 64, 1000, 4097} {
			for _, grain := range []int{0, 1, 3, 100, 10000} {
				c := &countTask{hits: make([]atomic.Int32, n), threads: threads}
				p.For(n, grain, c)
				if c.bad.Load() {
					t.Fatalf("threads %d: worker index out of range", threads)
				}
				for i := range c.hits {
					if h := c.hits[i].Load(); h != 1 {
						t.Fatalf("threads %d n %d grain %d: index %d run %d times", threads, n, grain, i, h)
					}
				}
			}
		}
		c := &countTask{hits: make([]atomic.Int32, 1000), threads: threads}
		before := settledGoroutines()
		for i := 0; i < 200; i++ {
			p.For(1000, 10, c)
		}
		if after := runtime.NumGoroutine(); after != before {
			t.Errorf("threads %d: %d goroutines before 200 calls, %d after", threads, before, after)
		}
		if a := testing.AllocsPerRun(50, func() { p.For(1000, 10, c) }); a != 0 {
			t.Errorf("threads %d: For allocates %v per call", threads, a)
		}
		p.Close()
		p.Close() // idempotent
	}
	var nilPool *Pool
	c := &countTask{hits: make([]atomic.Int32, 10), threads: 1}
	nilPool.For(10, 1, c)
	if c.hits[9].Load() != 1 || nilPool.Threads() != 1 {
		t.Fatal("nil pool")
	}
}

// settledGoroutines returns runtime.NumGoroutine once it has held still
// for 20 ms (waiting at most 2 s): the workers of pools that earlier tests
// closed may still be exiting, and one that exits between two counts of a
// test would look like a change made by the code under test (a CI run
// counted 3 goroutines before 200 calls of For and 2 after).
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			break
		}
		n = m
	}
	return n
}

// TestPoolConcurrentCallers runs MatVec from several goroutines on one pool:
// calls are serialised and each gets its own correct result.
func TestPoolConcurrentCallers(t *testing.T) {
	for _, k := range levelModes() {
		t.Run(SIMDName(k), func(t *testing.T) { withKernels(k, func() { testPoolConcurrentCallers(t) }) })
	}
}

func testPoolConcurrentCallers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	g := planar.Geometry{Type: planar.Q8_0, N: 300, K: 256, Columns: 4, KTile: 128}
	m := pack(t, g, randomGGUF(rng, g.Type, g.N, g.K))
	p := NewPool(2)
	defer p.Close()
	const callers = 4
	xs := make([][]float32, callers)
	want := make([][]float32, callers)
	for i := range xs {
		xs[i] = randomX(rng, g.K)
		want[i] = make([]float32, g.N)
		MatVec(m, xs[i], want[i], nil)
	}
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			y := make([]float32, g.N)
			for r := 0; r < 50; r++ {
				MatVec(m, xs[i], y, p)
				for n := range y {
					if y[n] != want[i][n] {
						t.Errorf("caller %d round %d row %d: %v, want %v", i, r, n, y[n], want[i][n])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// slowTask is countTask whose helpers take longer than spinFor over each
// range, so that the caller stops polling and blocks until they finish.
type slowTask struct{ countTask }

func (s *slowTask) Run(w, lo, hi int) {
	if w != 0 {
		time.Sleep(2 * spinFor)
	}
	s.countTask.Run(w, lo, hi)
}

// TestPoolSlowHelper checks that a caller which blocks for slow helpers
// is woken once they finish, every index run once, and that the pool is
// then as good as new (a fast job after each slow one).
func TestPoolSlowHelper(t *testing.T) {
	for _, threads := range []int{2, 3} {
		p := NewPool(threads)
		for r := 0; r < 20; r++ {
			s := &slowTask{countTask{hits: make([]atomic.Int32, 8), threads: threads}}
			p.For(8, 1, s)
			c := &countTask{hits: make([]atomic.Int32, 100), threads: threads}
			p.For(100, 1, c)
			for _, h := range [][]atomic.Int32{s.hits, c.hits} {
				for i := range h {
					if n := h[i].Load(); n != 1 {
						t.Fatalf("threads %d round %d: index %d run %d times", threads, r, i, n)
					}
				}
			}
		}
		p.Close()
	}
}

// segTask records which worker ran each index; the caller's chunks take
// 5 ms each and a helper's first chunk 200 ms.
type segTask struct {
	by    []atomic.Int32
	first [8]atomic.Bool
}

func (s *segTask) Run(w, lo, hi int) {
	if w == 0 {
		time.Sleep(5 * time.Millisecond)
	} else if s.first[w].CompareAndSwap(false, true) {
		time.Sleep(200 * time.Millisecond)
	}
	for i := lo; i < hi; i++ {
		s.by[i].Store(int32(w) + 1)
	}
}

// TestPoolSegments checks that each thread first runs its own contiguous
// segment of the chunks: the caller all of the first half of eight
// chunks, which a helper stuck in its first chunk (the second half's
// first) cannot reach before it; and that the caller then takes the
// stuck helper's other chunks.
func TestPoolSegments(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	s := &segTask{by: make([]atomic.Int32, 8)}
	p.For(8, 1, s)
	var by [8]int32
	for i := range by {
		by[i] = s.by[i].Load() - 1
	}
	for i := 0; i < 4; i++ {
		if by[i] != 0 {
			t.Fatalf("workers by index %v: index %d of the caller's segment run by worker %d", by, i, by[i])
		}
	}
	for i := 4; i < 8; i++ {
		if by[i] < 0 {
			t.Fatalf("workers by index %v: index %d not run", by, i)
		}
	}
	if by[4] == 1 && (by[5] != 0 || by[6] != 0 || by[7] != 0) {
		t.Fatalf("workers by index %v: the caller left a stuck helper's chunks", by)
	}
}

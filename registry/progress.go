package registry

import "time"

// progress calls fn with the bytes done of total as they pass, at most
// every 100 ms, and once at the end (done).
type progress struct {
	fn       func(done, total int64)
	n, total int64
	last     time.Time
}

func newProgress(fn func(done, total int64), total, have int64) *progress {
	p := &progress{fn: fn, total: total, n: have, last: time.Now()}
	fn(have, total)
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if time.Since(p.last) >= 100*time.Millisecond {
		p.last = time.Now()
		p.fn(p.n, p.total)
	}
	return len(b), nil
}

func (p *progress) done() { p.fn(p.n, p.total) }

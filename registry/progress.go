package registry

import (
	"fmt"
	"io"
	"time"
)

// progress draws a one-line bar on a terminal: label, bytes, percent, rate.
type progress struct {
	w      io.Writer
	label  string
	total  int64
	n      int64
	start  time.Time
	last   time.Time
	resume int64
}

func newProgress(w io.Writer, label string, total, have int64) *progress {
	p := &progress{w: w, label: label, total: total, n: have, resume: have, start: time.Now()}
	p.draw()
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if time.Since(p.last) > 100*time.Millisecond {
		p.draw()
	}
	return len(b), nil
}

func (p *progress) draw() {
	p.last = time.Now()
	const width = 30
	fill := 0
	if p.total > 0 {
		fill = int(int64(width) * p.n / p.total)
	}
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if i < fill {
			bar[i] = '='
		}
	}
	rate := float64(p.n-p.resume) / max(time.Since(p.start).Seconds(), 1e-3) / (1 << 20)
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.n) / float64(p.total)
	}
	fmt.Fprintf(p.w, "\r%s [%s] %.1f/%.1f MiB %3.0f%% %.1f MiB/s ", p.label, bar, float64(p.n)/(1<<20), float64(p.total)/(1<<20), pct, rate)
}

func (p *progress) done() {
	p.draw()
	fmt.Fprintln(p.w)
}

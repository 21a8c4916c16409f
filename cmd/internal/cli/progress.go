package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// Human formats a byte count: "1.50 GiB", "12.0 MiB", "3.0 KiB", "12 B".
func Human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Progress draws a bar on a terminal, and a line every 10% elsewhere.
type Progress struct {
	w     io.Writer
	label string
	tty   bool
	last  int
	start time.Time
}

// NewProgress starts a progress report labelled label on w.
func NewProgress(w io.Writer, label string) *Progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &Progress{w: w, label: label, tty: tty, last: -1, start: time.Now()}
}

// Update reports done of total bytes, name being the item just finished.
func (p *Progress) Update(done, total int64, name string) {
	pct := 100
	if total > 0 {
		pct = int(done * 100 / total)
	}
	if p.tty {
		const width = 30
		fill := pct * width / 100
		rate := float64(done) / (1 << 20) / max(time.Since(p.start).Seconds(), 1e-9)
		if len(name) > 32 {
			name = name[:32]
		}
		fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %7.1f MB/s %-32s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, rate, name)
		return
	}
	if pct/10 != p.last/10 || p.last < 0 {
		fmt.Fprintf(p.w, "%s: %d%% (%s of %s)\n", p.label, pct, Human(done), Human(total))
	}
	p.last = pct
}

// Done ends the bar's line.
func (p *Progress) Done() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

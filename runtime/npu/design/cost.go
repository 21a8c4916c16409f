package design

import (
	"time"

	"github.com/xdna-go/xdna/planar"
)

// cyclesPerBlock is the estimated cycles of the GEMV kernel for one block
// of the format's elements over one vector of rows (the target's lanes),
// from the operation counts of the kernels as first written (loads,
// shuffles, macs and the rescale, overlapped in the VLIW slots). The
// kernels now run one accumulator chain with rolled loops
// (kernels/README.md), which may cost more cycles; these figures are not
// re-derived for them. Estimates, not measurements: nothing has run on an
// AIE.
var cyclesPerBlock = map[planar.Type]int{
	planar.Q4_0: 60, planar.Q8_0: 55, planar.Q5_0: 120,
	planar.Q4_K: 300, planar.Q5_K: 600, planar.Q6_K: 400,
}

// callOverhead is the estimated cycles of one kernel call beyond its
// blocks: the call, the loop set-up, the partial's load and store.
const callOverhead = 64

// CallCycles estimates the cycles of one kernel call (one piece, one
// record) on a core.
func (d *Design) CallCycles() int {
	f, _ := planar.FormatOf(d.Type)
	return d.KTile/f.Block*cyclesPerBlock[d.Type]*(d.Rows/d.Target.Lanes) + callOverhead
}

// Timing is the predicted time of one dispatch on the array, per stream
// and for the cores, from the bytes each channel carries and the kernel's
// cycle estimates: each channel moves StreamBytes a cycle at the target's
// clock; the columns' weight channels run in parallel; the dispatch takes
// the longest of them (the DMAs and the cores overlap through the double
// buffers). Predicted, not measured.
type Timing struct {
	Weights, Acts, Outs, Compute time.Duration
}

// Max is the longest part: the dispatch's time on the array.
func (t Timing) Max() time.Duration { return max(t.Weights, t.Acts, t.Outs, t.Compute) }

// Predict returns the Timing of a dispatch of h over design d whose
// busiest column streams weightBytes and drains outBytes.
func (d *Design) Predict(h *Header, weightBytes, outBytes int64) Timing {
	hz := float64(d.Target.ClockMHz) * 1e6
	bw := float64(d.Target.StreamBytes) * hz // bytes a second a channel
	dur := func(s float64) time.Duration { return time.Duration(s * 1e9) }
	acts := float64(d.RecordBytes() * (1 + h.Blocks*h.Tiles*h.Tokens))
	calls := 0
	for c := range h.Cols {
		calls = max(calls, h.ColBlocks(c)*h.Tiles*h.Tokens)
	}
	return Timing{
		Weights: dur(float64(weightBytes) / bw),
		Acts:    dur(acts / bw),
		Outs:    dur(float64(outBytes) / bw),
		Compute: dur(float64(calls) * float64(d.CallCycles()) / hz),
	}
}

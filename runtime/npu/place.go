package npu

import (
	"cmp"
	"fmt"
	"unsafe"

	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu/design"
)

// mat is one matrix as the Backend runs it.
type mat struct {
	name   string
	m      cpu.Matrix // as last seen (geometry and blob)
	kernel Kernel     // 0: runs on the CPU
	d      *design.Design
	chunks []Chunk
	why    string   // why it runs on the CPU, if it does
	res    []resBuf // resident chunks (resident.go); nil: streamed through the ring
}

// place returns the state of the matrix called name, deciding on first
// sight (or when its blob changes) whether it can run on the device.
func (b *Backend) place(name string, m *cpu.Matrix) *mat {
	mt := b.mats[name]
	if mt != nil && mt.m.G == m.G && sameBytes(mt.m.Blob, m.Blob) {
		return mt
	}
	if mt != nil {
		b.dropResident(mt)
	}
	mt = &mat{name: name, m: *m} // a new blob is a new mat: what is staged of the old one no longer matches
	b.mats[name] = mt
	e := b.entries[name]
	switch {
	case e == nil:
		mt.why = "not in the manifest"
		return mt
	case e.Device != "npu":
		mt.why = cmp.Or(e.Reason, "planned on the CPU")
		return mt
	}
	k := b.kernels[e.Slot]
	if k == 0 {
		mt.why = "slot " + e.Slot + " not loaded"
		return mt
	}
	cpuOnly := func(format string, args ...any) *mat {
		mt.why = fmt.Sprintf(format, args...)
		msg := fmt.Sprintf("%s: planned on the NPU, runs on the CPU: %s", name, mt.why)
		b.notes = append(b.notes, msg)
		if !b.warned[mt.why] { // one line per reason; Notes lists every tensor
			b.warned[mt.why] = true
			fmt.Fprintf(b.warn, "npu: %s\n", msg)
		}
		return mt
	}
	g := m.G
	if err := m.Check(); err != nil {
		return cpuOnly("%v", err)
	}
	if len(e.Shape) != 2 || e.Shape[0] != g.K || e.Shape[1] != g.N || e.Type != g.Type.String() || e.KTile != g.KTile {
		return cpuOnly("matrix %s [%d][%d] tile %d does not match the manifest's %s %v tile %d", g.Type, g.N, g.K, g.KTile, e.Type, e.Shape, e.KTile)
	}
	d := b.designs[e.Slot]
	if g.Type != d.Type || g.KTile != d.KTile {
		return cpuOnly("a %s matrix in tiles of %d, slot %s's design is %s in tiles of %d", g.Type, g.KTile, e.Slot, d.Type, d.KTile)
	}
	if g.Columns > d.Columns {
		return cpuOnly("packed for %d columns, slot %s's design is %d wide", g.Columns, e.Slot, d.Columns)
	}
	chunks, err := PlanChunks(d, g, b.opt.RingSize)
	if err != nil {
		return cpuOnly("%v", err)
	}
	mt.kernel, mt.d, mt.chunks = k, d, chunks
	b.makeResident(mt)
	return mt
}

func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

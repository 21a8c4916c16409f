//go:build cgo && sim

package sim

/*
#cgo CXXFLAGS: -std=c++20 -O2 -I${SRCDIR}/../../../kernels/aie_api_shim -I${SRCDIR}/../../../kernels
#include "sim.h"
static const xdna_sim_slot* slots_of(int gen, int* n) {
	*n = gen == 1 ? xdna1_nslots : xdna2_nslots;
	return gen == 1 ? xdna1_slots : xdna2_slots;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/target"
)

// Available reports whether the kernels were compiled into this build: nil
// when they were and every compiled slot has its target's lanes.
func Available() error {
	for _, tg := range []*target.Target{target.XDNA1, target.XDNA2} {
		for _, s := range compiledSlots(tg.Name) {
			if int(s.lanes) != tg.Lanes {
				return fmt.Errorf("sim: the compiled %s %s K-tile %d kernel has %d lanes, the target %d", tg.Name, planar.Type(s.fmt), s.k_tile, s.lanes, tg.Lanes)
			}
		}
	}
	return nil
}

// compiledSlots returns the slots compiled for target name (xdna1.cc, xdna2.cc).
func compiledSlots(name string) []C.xdna_sim_slot {
	gen := map[string]C.int{"xdna1": 1, "xdna2": 2}[name]
	if gen == 0 {
		return nil
	}
	var n C.int
	p := C.slots_of(gen, &n)
	return unsafe.Slice(p, int(n))
}

// cSlot is one compiled slot.
type cSlot struct {
	s     *C.xdna_sim_slot
	gen   int // 1 or 2: the aie_api rules the shim applies
	lanes int
}

// lookup returns the compiled slot of target for typ and K-tile t.
func lookup(name string, typ planar.Type, t int) (cSlot, bool) {
	ss := compiledSlots(name)
	for i := range ss {
		if int(ss[i].fmt) == int(typ) && int(ss[i].k_tile) == t {
			gen := 2
			if name == "xdna1" {
				gen = 1
			}
			return cSlot{s: &ss[i], gen: gen, lanes: int(ss[i].lanes)}, true
		}
	}
	return cSlot{}, false
}

// compiled lists (type, K-tile) of every slot compiled for target name.
func compiled(name string) [][2]int {
	var out [][2]int
	for _, s := range compiledSlots(name) {
		out = append(out, [2]int{int(s.fmt), int(s.k_tile)})
	}
	return out
}

// slotLayout is what a compiled slot computes of its buffers (entry.inc's
// xdna_gemv_layout).
type slotLayout struct {
	Planes                      [4]int // plane offsets in the piece, 0 past the last
	Bytes                       int    // the piece's size
	Stride, Scales, Sums, Lanes int    // the record's and the lanes
}

func (c cSlot) layout() slotLayout {
	var off [8]C.uint
	n := C.xdna_sim_layout(c.s, &off[0])
	l := slotLayout{Bytes: int(n), Stride: int(off[4]), Scales: int(off[5]), Sums: int(off[6]), Lanes: int(off[7])}
	for i := range l.Planes {
		l.Planes[i] = int(off[i])
	}
	return l
}

// modes is a core's rounding and saturation modes (aie::rounding_mode,
// aie::saturation_mode).
type modes [2]C.int

func powerUp() modes {
	var m modes
	C.xdna_sim_power_up(&m[0])
	return m
}

// The functions of call.
const (
	fnInit = int(C.XDNA_SIM_INIT)
	fnAcc  = int(C.XDNA_SIM_ACC)
	fnOut  = int(C.XDNA_SIM_OUT)
)

// call runs function fn of the slot for a core whose modes are m (updated).
// The buffers' sizes were checked by the caller; nil ones are not passed.
func (c cSlot) call(fn int, m *modes, w, rec, acc, out []byte, t, first int32) error {
	var msg [256]C.char
	p := func(b []byte) unsafe.Pointer {
		if len(b) == 0 {
			return nil
		}
		return unsafe.Pointer(&b[0])
	}
	rc := C.xdna_sim_call(c.s, C.int(c.gen), C.int(fn), (*C.uint8_t)(p(w)), (*C.int32_t)(p(rec)), (*C.float)(p(acc)), (*C.float)(p(out)),
		C.int32_t(t), C.int32_t(first), &m[0], &msg[0], C.int(len(msg)))
	if rc == 0 {
		return nil
	}
	return fmt.Errorf("sim: the compiled kernel broke an aie_api rule: %s", C.GoString(&msg[0]))
}

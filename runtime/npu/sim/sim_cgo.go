//go:build cgo && sim

package sim

/*
#cgo CXXFLAGS: -std=c++17 -O2 -I${SRCDIR}/../../../kernels/aie_api_shim -I${SRCDIR}/../../../kernels
#include <stdint.h>
int xdna1_lanes(void);
int xdna2_lanes(void);
unsigned xdna1_obj_bytes(int fmt, unsigned T, unsigned rp);
unsigned xdna2_obj_bytes(int fmt, unsigned T, unsigned rp);
int xdna1_run(int fmt, unsigned T, const uint8_t* w, unsigned rows, unsigned piece, unsigned tiles,
              const uint8_t* acts, unsigned rec_stride, unsigned tokens, float* y, char* err, int errlen);
int xdna2_run(int fmt, unsigned T, const uint8_t* w, unsigned rows, unsigned piece, unsigned tiles,
              const uint8_t* acts, unsigned rec_stride, unsigned tokens, float* y, char* err, int errlen);
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/target"
)

// Available reports whether the kernels were compiled into this build (nil here).
func Available() error {
	if C.xdna1_lanes() != C.int(target.XDNA1.Lanes) || C.xdna2_lanes() != C.int(target.XDNA2.Lanes) {
		return fmt.Errorf("sim: compiled kernels have %d/%d lanes, want %d/%d", C.xdna1_lanes(), C.xdna2_lanes(), target.XDNA1.Lanes, target.XDNA2.Lanes)
	}
	return errNotRebuilt
}

func cObjectBytes(target string, typ planar.Type, kTile, rowsPad int) int {
	if target == "xdna1" {
		return int(C.xdna1_obj_bytes(C.int(typ), C.uint(kTile), C.uint(rowsPad)))
	}
	return int(C.xdna2_obj_bytes(C.int(typ), C.uint(kTile), C.uint(rowsPad)))
}

// runCore runs one core's row chunk of rows rows: the tile kernel over the weight
// objects in w (per tile, per piece of at most piece rows) and the records acts, into
// y [tokens][rows padded to the lanes].
func runCore(target string, typ planar.Type, kTile int, w []byte, rows, piece, tiles int, acts []byte, stride, tokens int, y []float32) error {
	var msg [256]byte
	wp := (*C.uint8_t)(unsafe.Pointer(&w[0]))
	ap := (*C.uint8_t)(unsafe.Pointer(&acts[0]))
	yp := (*C.float)(unsafe.Pointer(&y[0]))
	ep := (*C.char)(unsafe.Pointer(&msg[0]))
	var rc C.int
	if target == "xdna1" {
		rc = C.xdna1_run(C.int(typ), C.uint(kTile), wp, C.uint(rows), C.uint(piece), C.uint(tiles), ap, C.uint(stride), C.uint(tokens), yp, ep, C.int(len(msg)))
	} else {
		rc = C.xdna2_run(C.int(typ), C.uint(kTile), wp, C.uint(rows), C.uint(piece), C.uint(tiles), ap, C.uint(stride), C.uint(tokens), yp, ep, C.int(len(msg)))
	}
	switch rc {
	case 0:
		return nil
	case -2:
		return fmt.Errorf("sim: %s kernel has no %s K-tile %d", target, typ, kTile)
	}
	n := 0
	for n < len(msg) && msg[n] != 0 {
		n++
	}
	return fmt.Errorf("sim: %s %s kernel broke an aie_api rule: %s", target, typ, msg[:n])
}

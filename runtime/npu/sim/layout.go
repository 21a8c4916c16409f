package sim

import (
	"errors"
	"fmt"

	"github.com/xdna-go/xdna/planar"
)

// ErrStream reports a weight, activation or output stream that breaks the device
// contract (runtime/npu/params.go), or a shape the designs cannot hold.
var ErrStream = errors.New("bad stream")

func align64(n int) int { return (n + 63) &^ 63 }

// ObjectBytes returns the size of one core-layout weight object of rowsPad rows
// (kernels/common/gemv.hpp): the format's planes, each 64-byte aligned.
func ObjectBytes(typ planar.Type, kTile, rowsPad int) (int, error) {
	f, err := planar.FormatOf(typ)
	if err != nil {
		return 0, err
	}
	if kTile <= 0 || kTile%f.Block != 0 {
		return 0, fmt.Errorf("sim: K-tile %d for %s", kTile, typ)
	}
	n := 0
	for _, p := range f.Planes {
		n += align64(rowsPad * p.PerRow(kTile))
	}
	return n, nil
}

// CoreObject writes into dst the core-layout object of core rows [first, first+n) of
// one (row chunk, K-tile) object src of rc rows (the contract's layout,
// npu.RunGeometry(typ, rc, T, 1)), padded to rowsPad rows with zeros: what the
// memtile's MM2S descriptors for that core produce. Planes whose rows are whole
// 4-byte words are word-interleaved (word j of row r at 4*(j*rowsPad + r)); others
// (2 bytes a row) keep their rows in order. dst must hold ObjectBytes(typ, T, rowsPad).
func CoreObject(typ planar.Type, kTile int, src []byte, rc, first, n, rowsPad int, dst []byte) {
	f, _ := planar.FormatOf(typ)
	clear(dst)
	so, do := 0, 0
	for _, p := range f.Planes {
		per := p.PerRow(kTile)
		s := src[so+first*per : so+(first+n)*per]
		d := dst[do : do+rowsPad*per]
		if per%4 == 0 {
			words := per / 4
			for r := 0; r < n; r++ {
				for j := 0; j < words; j++ {
					copy(d[4*(j*rowsPad+r):4*(j*rowsPad+r)+4], s[r*per+4*j:])
				}
			}
		} else {
			copy(d, s)
		}
		so += align64(rc * per)
		do += align64(rowsPad * per)
	}
}

// Package avoutil holds what the avo generators of package cpu (this
// folder's main and gemm) share.
package avoutil

import (
	"encoding/binary"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// Table declares the read-only table name holding b (a multiple of 8
// bytes), written as 64-bit words.
func Table(name string, b []byte) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < len(b); i += 8 {
		DATA(i, U64(binary.LittleEndian.Uint64(b[i:])))
	}
	return m
}

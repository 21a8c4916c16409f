// Command _generate writes package blake3's AVX-512 kernels with avo:
//
//	cd internal/blake3 && go generate
//
// runs `go run . -out ../blake3_amd64.s -stubs ../stubs_amd64.go -pkg
// blake3` here. This is its own module so that the main module does not
// depend on avo; the generated files are committed.
//
// Both kernels compress 16 independent blocks at once, one per 32-bit lane
// of the zmm registers, by the specification's compression function
// (https://github.com/BLAKE3-team/BLAKE3-specs/blob/master/blake3.pdf (not pinned: no commit of it was at hand offline),
// section 2.2): the 16 state words in 16 registers and the 16 message
// words in the other 16, so a round is VPADDD, VPXORD and VPRORD on
// registers alone, and the message permutation between rounds only renames
// registers here. The 16 blocks are loaded one per register and
// transposed (transpose16), so that register w holds message word w of
// every lane; the 16 chaining values out are transposed back (store8x16).
//
//   - hashChunksAVX512: 16 whole chunks, lane i the chunk at in+1024*i with
//     counter counter+i, their 16 blocks in a loop with the chaining
//     values kept in Z0-Z7.
//   - hashParentsAVX512: 16 parents, lane i the 64-byte block at in+64*i.
//
// Their Go twins, the reference, are hashChunksGo and hashParentsGo.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Flags and sizes (specification, table 3; package blake3's constants).
const (
	chunkStart = 1
	chunkEnd   = 2
	parentFlag = 4
	blockLen   = 64
	chunkLen   = 1024
)

var iv = [8]uint32{
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
}

// msgPerm is the permutation of the message words between rounds
// (specification, table 2).
var msgPerm = [16]int{2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8}

var (
	ivMem   Mem // the 8 IV words, each broadcast to a state row
	iotaMem Mem // 0, 1, ..., 15: the lanes' chunk counter offsets
	oneMem  Mem // 1: the carry into the counters' high words
)

func main() {
	ConstraintExpr("!noasm,gc")

	ivMem = GLOBL("blake3IV", RODATA|NOPTR)
	for i, w := range iv {
		DATA(4*i, U32(w))
	}
	iotaMem = GLOBL("blake3Iota", RODATA|NOPTR)
	for i := range 16 {
		DATA(4*i, U32(i))
	}
	oneMem = GLOBL("blake3One", RODATA|NOPTR)
	DATA(0, U32(1))

	chunks()
	parents()
	Generate()
}

// zmm is register Zi.
func zmm(i int) VecPhysical {
	return []VecPhysical{
		Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31,
	}[i]
}

// pool hands out the registers a transpose writes to and takes back the
// ones it has read for the last time.
type pool []VecPhysical

func (p *pool) get() VecPhysical {
	r := (*p)[0]
	*p = (*p)[1:]
	return r
}

func (p *pool) put(rs ...VecPhysical) { *p = append(*p, rs...) }

// transpose16 turns rows (row i: the 16 words of lane i's block) into
// the message registers (register w: word w of lanes 0-15), with the
// registers of free as scratch. It returns the message registers and
// what is then free. Three steps: interleave the words of row pairs
// (VPUNPCK[LH]DQ), then the word pairs of pair pairs (VPUNPCK[LH]QDQ),
// after which 128-bit block l of u[g][j] is word 4l+j of rows 4g-4g+3;
// then a 4x4 transpose of those blocks (VSHUFI32X4, twice).
func transpose16(rows [16]VecPhysical, free pool) (m [16]VecPhysical, rest pool) {
	var t [16]VecPhysical
	for i := 0; i < 16; i += 2 {
		a, b := rows[i], rows[i+1]
		t[i], t[i+1] = free.get(), free.get()
		VPUNPCKLDQ(b, a, t[i])   // a0 b0 a1 b1 in each 128-bit block
		VPUNPCKHDQ(b, a, t[i+1]) // a2 b2 a3 b3
		free.put(a, b)
	}
	var u [4][4]VecPhysical // [row group][word in block]
	for g := range 4 {
		a, b, c, d := t[4*g], t[4*g+1], t[4*g+2], t[4*g+3]
		for j := range 4 {
			u[g][j] = free.get()
		}
		VPUNPCKLQDQ(c, a, u[g][0])
		VPUNPCKHQDQ(c, a, u[g][1])
		VPUNPCKLQDQ(d, b, u[g][2])
		VPUNPCKHQDQ(d, b, u[g][3])
		free.put(a, b, c, d)
	}
	for j := range 4 {
		x, y, x2, y2 := free.get(), free.get(), free.get(), free.get()
		// VSHUFI32X4 imm, b, a, dst: dst's blocks are a[imm1:0],
		// a[imm3:2], b[imm5:4], b[imm7:6].
		VSHUFI32X4(U8(0x44), u[1][j], u[0][j], x)  // u0.0 u0.1 u1.0 u1.1
		VSHUFI32X4(U8(0x44), u[3][j], u[2][j], y)  // u2.0 u2.1 u3.0 u3.1
		VSHUFI32X4(U8(0xee), u[1][j], u[0][j], x2) // u0.2 u0.3 u1.2 u1.3
		VSHUFI32X4(U8(0xee), u[3][j], u[2][j], y2) // u2.2 u2.3 u3.2 u3.3
		free.put(u[0][j], u[1][j], u[2][j], u[3][j])
		for l, src := range [][2]VecPhysical{{x, y}, {x, y}, {x2, y2}, {x2, y2}} {
			m[4*l+j] = free.get()
			imm := U8(0x88) // blocks 0 and 2 of each: u0.l u1.l u2.l u3.l
			if l%2 == 1 {
				imm = U8(0xdd) // blocks 1 and 3
			}
			VSHUFI32X4(imm, src[1], src[0], m[4*l+j])
		}
		free.put(x, y, x2, y2)
	}
	return m, free
}

// store8x16 writes the 16 chaining values in h (register w: word w of
// lanes 0-15) to out, 32 bytes a lane, with registers of free as scratch:
// the first two steps of transpose16, after which 128-bit block l of
// u[half][j] is words 4*half to 4*half+3 of lane 4l+j, stored as they are.
func store8x16(h [8]VecPhysical, out GPPhysical, free pool) {
	var t [8]VecPhysical
	for i := 0; i < 8; i += 2 {
		t[i], t[i+1] = free.get(), free.get()
		VPUNPCKLDQ(h[i+1], h[i], t[i])
		VPUNPCKHDQ(h[i+1], h[i], t[i+1])
	}
	for half := range 2 {
		a, b, c, d := t[4*half], t[4*half+1], t[4*half+2], t[4*half+3]
		var u [4]VecPhysical
		for j := range 4 {
			u[j] = free.get()
		}
		VPUNPCKLQDQ(c, a, u[0])
		VPUNPCKHQDQ(c, a, u[1])
		VPUNPCKLQDQ(d, b, u[2])
		VPUNPCKHQDQ(d, b, u[3])
		for j := range 4 {
			for l := range 4 {
				VEXTRACTI32X4(U8(l), u[j], Mem{Base: out, Disp: 32*(4*l+j) + 16*half})
			}
		}
		free.put(u[:]...)
	}
}

// g4 is four quarter-rounds G (specification, section 2.2) side by side:
// state columns (or diagonals) idx[k], message words x[k] and y[k].
func g4(v [16]VecPhysical, idx [4][4]int, x, y [4]VecPhysical) {
	each := func(f func(a, b, c, d VecPhysical, k int)) {
		for k, i := range idx {
			f(v[i[0]], v[i[1]], v[i[2]], v[i[3]], k)
		}
	}
	half := func(m [4]VecPhysical, r1, r2 int) {
		each(func(a, b, c, d VecPhysical, k int) { VPADDD(b, a, a); VPADDD(m[k], a, a) })   // a += b + m
		each(func(a, b, c, d VecPhysical, k int) { VPXORD(a, d, d); VPRORD(U8(r1), d, d) }) // d = (d ^ a) >>> r1
		each(func(a, b, c, d VecPhysical, k int) { VPADDD(d, c, c) })                       // c += d
		each(func(a, b, c, d VecPhysical, k int) { VPXORD(c, b, b); VPRORD(U8(r2), b, b) }) // b = (b ^ c) >>> r2
	}
	half(x, 16, 12)
	half(y, 8, 7)
}

// rounds runs the 7 rounds on state v with message m, then sets v[0:8] to
// the chaining value v[i] ^ v[i+8].
func rounds(v, m [16]VecPhysical) {
	for r := range 7 {
		Comment(fmt.Sprintf("Round %d.", r+1))
		g4(v, [4][4]int{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}},
			[4]VecPhysical{m[0], m[2], m[4], m[6]}, [4]VecPhysical{m[1], m[3], m[5], m[7]})
		g4(v, [4][4]int{{0, 5, 10, 15}, {1, 6, 11, 12}, {2, 7, 8, 13}, {3, 4, 9, 14}},
			[4]VecPhysical{m[8], m[10], m[12], m[14]}, [4]VecPhysical{m[9], m[11], m[13], m[15]})
		var p [16]VecPhysical
		for i, j := range msgPerm {
			p[i] = m[j]
		}
		m = p
	}
	for i := range 8 {
		VPXORD(v[i+8], v[i], v[i])
	}
}

// loadBlocks loads the 16 blocks at base+stride*i and transposes them
// into the message registers, with Z8-Z31 free; the 8 registers left over
// become state rows 8-15: the IV, the counters' low and high words (which
// counters sets), the block length and the flags in flags. The chaining
// values are in Z0-Z7, state rows 0-7.
func loadBlocks(base GPPhysical, stride int, counters func(lo, hi VecPhysical), flags GPPhysical) (v, m [16]VecPhysical) {
	var free pool
	for i := 8; i < 32; i++ {
		free.put(zmm(i))
	}
	var rows [16]VecPhysical
	for i := range rows {
		rows[i] = free.get()
		VMOVDQU32(Mem{Base: base, Disp: stride * i}, rows[i])
	}
	m, free = transpose16(rows, free)
	for i := range 8 {
		v[i] = zmm(i)
		v[i+8] = free.get()
	}
	for i := range 4 {
		VPBROADCASTD(ivMem.Offset(4*i), v[8+i])
	}
	counters(v[12], v[13])
	MOVL(U32(blockLen), EAX)
	VPBROADCASTD(EAX, v[14])
	VPBROADCASTD(flags.As32(), v[15])
	return v, m
}

// loadKey broadcasts the 8 key words at key to Z0-Z7.
func loadKey(key GPPhysical) {
	for i := range 8 {
		VPBROADCASTD(Mem{Base: key, Disp: 4 * i}, zmm(i))
	}
}

func chunks() {
	TEXT("hashChunksAVX512", NOSPLIT, "func(key *[8]uint32, in *[16384]byte, counter uint64, flags uint32, out *[16][8]uint32)")
	Doc("hashChunksAVX512 is hashChunksGo with AVX-512F: one chunk per 32-bit lane.")
	counters := AllocLocal(128) // the lanes' counters: 16 low words, then 16 high words
	key, in, ctr, flags, out := RDX, RSI, RBX, R8, RDI
	Load(Param("key"), key)
	Load(Param("in"), in)
	Load(Param("counter"), ctr)
	Load(Param("flags"), flags.As32())
	Load(Param("out"), out)

	Comment("Lane i's counter is counter+i: the low words wrap, and a lane whose",
		"low word came out below counter's carries 1 into its high word.")
	VPBROADCASTD(ctr.As32(), Z0)
	VPADDD(iotaMem, Z0, Z1)
	VPCMPUD(U8(1), Z0, Z1, K1) // K1 = lanes where Z1 < Z0 (the 1 predicate is LT)
	SHRQ(U8(32), ctr)
	VPBROADCASTD(ctr.As32(), Z2)
	VPADDD_BCST(oneMem, Z2, K1, Z2)
	VMOVDQU32(Z1, counters)
	VMOVDQU32(Z2, counters.Offset(64))

	loadKey(key)
	blk, f := RCX, R9
	XORL(blk.As32(), blk.As32())
	Label("block")
	Comment("The block's flags: flags, CHUNK_START on the first, CHUNK_END on the last.")
	MOVL(flags.As32(), f.As32())
	CMPQ(blk, U8(0))
	JNE(LabelRef("notFirst"))
	ORL(U8(chunkStart), f.As32())
	Label("notFirst")
	CMPQ(blk, U8(chunkLen/blockLen-1))
	JNE(LabelRef("notLast"))
	ORL(U8(chunkEnd), f.As32())
	Label("notLast")
	v, m := loadBlocks(in, chunkLen, func(lo, hi VecPhysical) {
		VMOVDQU32(counters, lo)
		VMOVDQU32(counters.Offset(64), hi)
	}, f)
	rounds(v, m)
	ADDQ(U8(blockLen), in)
	INCQ(blk)
	CMPQ(blk, U8(chunkLen/blockLen))
	JNE(LabelRef("block"))

	storeOut(out)
}

func parents() {
	TEXT("hashParentsAVX512", NOSPLIT, "func(key *[8]uint32, in *[32][8]uint32, flags uint32, out *[16][8]uint32)")
	Doc("hashParentsAVX512 is hashParentsGo with AVX-512F: one parent per 32-bit lane.")
	key, in, flags, out := RDX, RSI, R8, RDI
	Load(Param("key"), key)
	Load(Param("in"), in)
	Load(Param("flags"), flags.As32())
	Load(Param("out"), out)
	ORL(U8(parentFlag), flags.As32())
	loadKey(key)
	v, m := loadBlocks(in, blockLen, func(lo, hi VecPhysical) {
		// Every parent has counter 0.
		VPXORD(lo, lo, lo)
		VPXORD(hi, hi, hi)
	}, flags)
	rounds(v, m)
	storeOut(out)
}

// storeOut writes the chaining values in Z0-Z7 to out and returns.
func storeOut(out GPPhysical) {
	Comment("The chaining values, lane by lane, to out.")
	var free pool
	for i := 8; i < 32; i++ {
		free.put(zmm(i))
	}
	store8x16([8]VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7}, out, free)
	VZEROUPPER()
	RET()
}

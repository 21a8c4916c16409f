//go:build !noasm && gc

#include "textflag.h"

// AVX2 forms of the nibble shuffle in packrow.go (see the comment there and
// nibblesToSeqRef), written by hand rather than generated with avo like
// runtime/cpu's kernels: two short loops with no register allocation to
// speak of. For a run of 2h bytes q, with lo = q&0x0f and hi = q>>4 per
// byte, VPMADDUBSW by the byte pairs (1, 16) makes word i of lo the byte
// lo[2i] | lo[2i+1]<<4 = out[i] and word i of hi out[h+i]; VPACKUSWB packs
// those words (all below 256) into bytes. For h = 8 (Q4_0, Q5_0) one
// 128-bit lane is a whole block; for h = 16 (one 64-element chunk of Q4_K,
// Q5_K) the lanes hold out[0:8], out[16:24] and out[8:16], out[24:32], which
// VPERMQ $0xd8 puts in order. The pure-Go kernels in packrow.go are the
// reference; TestAVX2MatchesGo compares them, and TestRowKernelsMatchRef
// compares both with the byte loops of packref_test.go.

// NIBBLE_CONSTS sets Y14 to the bytes 0x0f and Y13 to the byte pairs
// (1, 16), VPMADDUBSW's signed operand. It clobbers AX.
#define NIBBLE_CONSTS \
	MOVQ         $0x0f0f0f0f0f0f0f0f, AX; \
	MOVQ         AX, X14; \
	VPBROADCASTQ X14, Y14; \
	MOVQ         $0x1001100110011001, AX; \
	MOVQ         AX, X13; \
	VPBROADCASTQ X13, Y13

// func q4BlocksAVX2(codes, scales, src *byte, rows, nb, stride, bstride, qoff int)
// For r < rows, b < nb, the block at src + r*stride + b*bstride: its 16-bit
// scale at offset 0 to scales[2(r*nb+b):], its 16 code bytes at offset qoff,
// shuffled, to codes[16(r*nb+b):].
TEXT ·q4BlocksAVX2(SB), NOSPLIT, $0-64
	MOVQ codes+0(FP), DI
	MOVQ scales+8(FP), R11
	MOVQ src+16(FP), SI
	MOVQ rows+24(FP), CX
	MOVQ nb+32(FP), DX
	MOVQ stride+40(FP), R8
	MOVQ bstride+48(FP), BX
	MOVQ qoff+56(FP), R12
	NIBBLE_CONSTS
	TESTQ CX, CX
	JZ    q4done
	TESTQ DX, DX
	JZ    q4done

q4row:
	MOVQ SI, R9
	MOVQ DX, R10

q4pair:
	CMPQ R10, $2
	JLT  q4single
	LEAQ (R9)(BX*1), R13
	VMOVDQU     (R9)(R12*1), X0
	VINSERTI128 $1, (R13)(R12*1), Y0, Y0
	MOVW        (R9), AX
	MOVW        AX, (R11)
	MOVW        (R13), AX
	MOVW        AX, 2(R11)
	VPSRLW      $4, Y0, Y1
	VPAND       Y14, Y0, Y0
	VPAND       Y14, Y1, Y1
	VPMADDUBSW  Y13, Y0, Y0
	VPMADDUBSW  Y13, Y1, Y1
	VPACKUSWB   Y1, Y0, Y0
	VMOVDQU     Y0, (DI)
	ADDQ        $32, DI
	ADDQ        $4, R11
	LEAQ        (R13)(BX*1), R9
	SUBQ        $2, R10
	JMP         q4pair

q4single:
	TESTQ      R10, R10
	JZ         q4next
	VMOVDQU    (R9)(R12*1), X0
	MOVW       (R9), AX
	MOVW       AX, (R11)
	VPSRLW     $4, X0, X1
	VPAND      X14, X0, X0
	VPAND      X14, X1, X1
	VPMADDUBSW X13, X0, X0
	VPMADDUBSW X13, X1, X1
	VPACKUSWB  X1, X0, X0
	VMOVDQU    X0, (DI)
	ADDQ       $16, DI
	ADDQ       $2, R11

q4next:
	ADDQ R8, SI
	DECQ CX
	JNZ  q4row

q4done:
	VZEROUPPER
	RET

// func nibbles128AVX2(codes, src *byte, rows, nb, stride, bstride int)
// For r < rows, b < nb, the 128 bytes qs at src + r*stride + b*bstride (four
// chunks of h = 16), shuffled, to codes[128(r*nb+b):].
TEXT ·nibbles128AVX2(SB), NOSPLIT, $0-48
	MOVQ codes+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ nb+24(FP), DX
	MOVQ stride+32(FP), R8
	MOVQ bstride+40(FP), BX
	NIBBLE_CONSTS
	TESTQ CX, CX
	JZ    kdone
	TESTQ DX, DX
	JZ    kdone

krow:
	MOVQ SI, R9
	MOVQ DX, R10

kblock:
	VMOVDQU    (R9), Y0
	VMOVDQU    32(R9), Y2
	VMOVDQU    64(R9), Y4
	VMOVDQU    96(R9), Y6
	VPSRLW     $4, Y0, Y1
	VPSRLW     $4, Y2, Y3
	VPSRLW     $4, Y4, Y5
	VPSRLW     $4, Y6, Y7
	VPAND      Y14, Y0, Y0
	VPAND      Y14, Y1, Y1
	VPAND      Y14, Y2, Y2
	VPAND      Y14, Y3, Y3
	VPAND      Y14, Y4, Y4
	VPAND      Y14, Y5, Y5
	VPAND      Y14, Y6, Y6
	VPAND      Y14, Y7, Y7
	VPMADDUBSW Y13, Y0, Y0
	VPMADDUBSW Y13, Y1, Y1
	VPMADDUBSW Y13, Y2, Y2
	VPMADDUBSW Y13, Y3, Y3
	VPMADDUBSW Y13, Y4, Y4
	VPMADDUBSW Y13, Y5, Y5
	VPMADDUBSW Y13, Y6, Y6
	VPMADDUBSW Y13, Y7, Y7
	VPACKUSWB  Y1, Y0, Y0
	VPACKUSWB  Y3, Y2, Y2
	VPACKUSWB  Y5, Y4, Y4
	VPACKUSWB  Y7, Y6, Y6
	VPERMQ     $0xd8, Y0, Y0
	VPERMQ     $0xd8, Y2, Y2
	VPERMQ     $0xd8, Y4, Y4
	VPERMQ     $0xd8, Y6, Y6
	VMOVDQU    Y0, (DI)
	VMOVDQU    Y2, 32(DI)
	VMOVDQU    Y4, 64(DI)
	VMOVDQU    Y6, 96(DI)
	ADDQ       $128, DI
	ADDQ       BX, R9
	DECQ       R10
	JNZ        kblock

	ADDQ R8, SI
	DECQ CX
	JNZ  krow

kdone:
	VZEROUPPER
	RET

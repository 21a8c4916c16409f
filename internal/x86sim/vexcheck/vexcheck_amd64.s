// Code generated for TestNativeMatchesSim (the list of instructions is in funcs_amd64.go). DO NOT EDIT.

//go:build amd64 && !noasm && gc

#include "textflag.h"

// func vaddps(a, b, c, out *byte)
TEXT ·vaddps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VADDPS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vsubps(a, b, c, out *byte)
TEXT ·vsubps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VSUBPS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vmulps(a, b, c, out *byte)
TEXT ·vmulps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMULPS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vdivps(a, b, c, out *byte)
TEXT ·vdivps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VDIVPS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vmaxps(a, b, c, out *byte)
TEXT ·vmaxps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMAXPS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vminps(a, b, c, out *byte)
TEXT ·vminps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMINPS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vsqrtps(a, b, c, out *byte)
TEXT ·vsqrtps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VSQRTPS Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vandps(a, b, c, out *byte)
TEXT ·vandps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VANDPS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vfmadd231ps(a, b, c, out *byte)
TEXT ·vfmadd231ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VFMADD231PS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vfmadd213ps(a, b, c, out *byte)
TEXT ·vfmadd213ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VFMADD213PS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vfmadd132ps(a, b, c, out *byte)
TEXT ·vfmadd132ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VFMADD132PS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vfnmadd231ps(a, b, c, out *byte)
TEXT ·vfnmadd231ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VFNMADD231PS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vfmsub231ps(a, b, c, out *byte)
TEXT ·vfmsub231ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VFMSUB231PS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vfnmsub213ps(a, b, c, out *byte)
TEXT ·vfnmsub213ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VFNMSUB213PS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vfmadd231pd(a, b, c, out *byte)
TEXT ·vfmadd231pd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VFMADD231PD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vaddpd(a, b, c, out *byte)
TEXT ·vaddpd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VADDPD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vmaxpd(a, b, c, out *byte)
TEXT ·vmaxpd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMAXPD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtps2dq(a, b, c, out *byte)
TEXT ·vcvtps2dq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPS2DQ Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvttps2dq(a, b, c, out *byte)
TEXT ·vcvttps2dq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTTPS2DQ Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtdq2ps(a, b, c, out *byte)
TEXT ·vcvtdq2ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTDQ2PS Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtph2ps(a, b, c, out *byte)
TEXT ·vcvtph2ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPH2PS X1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtps2ph0(a, b, c, out *byte)
TEXT ·vcvtps2ph0(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPS2PH $0, Y1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtps2ph1(a, b, c, out *byte)
TEXT ·vcvtps2ph1(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPS2PH $1, Y1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtps2ph2(a, b, c, out *byte)
TEXT ·vcvtps2ph2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPS2PH $2, Y1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtps2ph3(a, b, c, out *byte)
TEXT ·vcvtps2ph3(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPS2PH $3, Y1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtps2ph4(a, b, c, out *byte)
TEXT ·vcvtps2ph4(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPS2PH $4, Y1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vroundps0(a, b, c, out *byte)
TEXT ·vroundps0(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VROUNDPS $0, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vroundps1(a, b, c, out *byte)
TEXT ·vroundps1(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VROUNDPS $1, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vroundps2(a, b, c, out *byte)
TEXT ·vroundps2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VROUNDPS $2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vroundps3(a, b, c, out *byte)
TEXT ·vroundps3(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VROUNDPS $3, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vaddss(a, b, c, out *byte)
TEXT ·vaddss(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VADDSS X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vdivss(a, b, c, out *byte)
TEXT ·vdivss(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VDIVSS X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vmaxss(a, b, c, out *byte)
TEXT ·vmaxss(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMAXSS X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtss2sd(a, b, c, out *byte)
TEXT ·vcvtss2sd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTSS2SD X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcvtsd2ss(a, b, c, out *byte)
TEXT ·vcvtsd2ss(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTSD2SS X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vaddsd(a, b, c, out *byte)
TEXT ·vaddsd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VADDSD X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vfmadd231ss(a, b, c, out *byte)
TEXT ·vfmadd231ss(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VFMADD231SS X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vblendvps(a, b, c, out *byte)
TEXT ·vblendvps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VBLENDVPS Y0, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vmovmskps(a, b, c, out *byte)
TEXT ·vmovmskps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMOVMSKPS Y1, AX
	MOVQ AX, (DX)
	VZEROUPPER
	RET

// func vpmaddubsw(a, b, c, out *byte)
TEXT ·vpmaddubsw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMADDUBSW Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpmaddwd(a, b, c, out *byte)
TEXT ·vpmaddwd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMADDWD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpsignb(a, b, c, out *byte)
TEXT ·vpsignb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSIGNB Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpabsb(a, b, c, out *byte)
TEXT ·vpabsb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPABSB Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpackusdw(a, b, c, out *byte)
TEXT ·vpackusdw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPACKUSDW Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpackssdw(a, b, c, out *byte)
TEXT ·vpackssdw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPACKSSDW Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpackuswb(a, b, c, out *byte)
TEXT ·vpackuswb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPACKUSWB Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpacksswb(a, b, c, out *byte)
TEXT ·vpacksswb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPACKSSWB Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpshufb(a, b, c, out *byte)
TEXT ·vpshufb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSHUFB Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpermd(a, b, c, out *byte)
TEXT ·vpermd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPERMD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpermps(a, b, c, out *byte)
TEXT ·vpermps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPERMPS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpermq(a, b, c, out *byte)
TEXT ·vpermq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPERMQ $0x9c, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vperm2i128(a, b, c, out *byte)
TEXT ·vperm2i128(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPERM2I128 $0x21, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpshufd(a, b, c, out *byte)
TEXT ·vpshufd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSHUFD $0x1b, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vphaddd(a, b, c, out *byte)
TEXT ·vphaddd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPHADDD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpunpcklbw(a, b, c, out *byte)
TEXT ·vpunpcklbw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPUNPCKLBW Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpunpckhdq(a, b, c, out *byte)
TEXT ·vpunpckhdq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPUNPCKHDQ Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpunpckhqdq(a, b, c, out *byte)
TEXT ·vpunpckhqdq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPUNPCKHQDQ Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpsraw(a, b, c, out *byte)
TEXT ·vpsraw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSRAW $3, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpsrlw(a, b, c, out *byte)
TEXT ·vpsrlw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSRLW X2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpsllvd(a, b, c, out *byte)
TEXT ·vpsllvd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSLLVD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpsravd(a, b, c, out *byte)
TEXT ·vpsravd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSRAVD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpmulhw(a, b, c, out *byte)
TEXT ·vpmulhw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMULHW Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpmulld(a, b, c, out *byte)
TEXT ·vpmulld(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMULLD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpmuldq(a, b, c, out *byte)
TEXT ·vpmuldq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMULDQ Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpaddsw(a, b, c, out *byte)
TEXT ·vpaddsw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPADDSW Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpsubusb(a, b, c, out *byte)
TEXT ·vpsubusb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSUBUSB Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpminsd(a, b, c, out *byte)
TEXT ·vpminsd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMINSD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpmaxub(a, b, c, out *byte)
TEXT ·vpmaxub(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMAXUB Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpcmpgtb(a, b, c, out *byte)
TEXT ·vpcmpgtb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPCMPGTB Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpcmpeqw(a, b, c, out *byte)
TEXT ·vpcmpeqw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPCMPEQW Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpavgb(a, b, c, out *byte)
TEXT ·vpavgb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPAVGB Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpalignr(a, b, c, out *byte)
TEXT ·vpalignr(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPALIGNR $5, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpblendd(a, b, c, out *byte)
TEXT ·vpblendd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPBLENDD $0xa5, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpmovsxbw(a, b, c, out *byte)
TEXT ·vpmovsxbw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMOVSXBW X1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpmovzxwd(a, b, c, out *byte)
TEXT ·vpmovzxwd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMOVZXWD X1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpbroadcastb(a, b, c, out *byte)
TEXT ·vpbroadcastb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPBROADCASTB X1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vshufps(a, b, c, out *byte)
TEXT ·vshufps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VSHUFPS $0x4e, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vmovshdup(a, b, c, out *byte)
TEXT ·vmovshdup(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMOVSHDUP Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vmovhlps(a, b, c, out *byte)
TEXT ·vmovhlps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMOVHLPS X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vextracti128(a, b, c, out *byte)
TEXT ·vextracti128(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VEXTRACTI128 $1, Y1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vinserti128(a, b, c, out *byte)
TEXT ·vinserti128(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VINSERTI128 $1, X2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpinsrd(a, b, c, out *byte)
TEXT ·vpinsrd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	MOVL 4(BX), R8
	VPINSRD $2, R8, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpextrq(a, b, c, out *byte)
TEXT ·vpextrq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPEXTRQ $1, X1, AX
	MOVQ AX, (DX)
	VZEROUPPER
	RET

// func vpsadbw(a, b, c, out *byte)
TEXT ·vpsadbw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSADBW Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpmovmskb(a, b, c, out *byte)
TEXT ·vpmovmskb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMOVMSKB Y1, AX
	MOVQ AX, (DX)
	VZEROUPPER
	RET

// func vcmpps0(a, b, c, out *byte)
TEXT ·vcmpps0(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $0, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps1(a, b, c, out *byte)
TEXT ·vcmpps1(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $1, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps2(a, b, c, out *byte)
TEXT ·vcmpps2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $2, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps3(a, b, c, out *byte)
TEXT ·vcmpps3(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $3, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps4(a, b, c, out *byte)
TEXT ·vcmpps4(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $4, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps5(a, b, c, out *byte)
TEXT ·vcmpps5(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $5, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps6(a, b, c, out *byte)
TEXT ·vcmpps6(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $6, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps7(a, b, c, out *byte)
TEXT ·vcmpps7(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $7, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps8(a, b, c, out *byte)
TEXT ·vcmpps8(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $8, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps9(a, b, c, out *byte)
TEXT ·vcmpps9(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $9, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps10(a, b, c, out *byte)
TEXT ·vcmpps10(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $10, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps11(a, b, c, out *byte)
TEXT ·vcmpps11(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $11, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps12(a, b, c, out *byte)
TEXT ·vcmpps12(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $12, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps13(a, b, c, out *byte)
TEXT ·vcmpps13(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $13, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps14(a, b, c, out *byte)
TEXT ·vcmpps14(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $14, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps15(a, b, c, out *byte)
TEXT ·vcmpps15(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $15, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps16(a, b, c, out *byte)
TEXT ·vcmpps16(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $16, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps17(a, b, c, out *byte)
TEXT ·vcmpps17(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $17, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps18(a, b, c, out *byte)
TEXT ·vcmpps18(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $18, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps19(a, b, c, out *byte)
TEXT ·vcmpps19(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $19, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps20(a, b, c, out *byte)
TEXT ·vcmpps20(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $20, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps21(a, b, c, out *byte)
TEXT ·vcmpps21(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $21, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps22(a, b, c, out *byte)
TEXT ·vcmpps22(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $22, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps23(a, b, c, out *byte)
TEXT ·vcmpps23(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $23, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps24(a, b, c, out *byte)
TEXT ·vcmpps24(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $24, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps25(a, b, c, out *byte)
TEXT ·vcmpps25(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $25, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps26(a, b, c, out *byte)
TEXT ·vcmpps26(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $26, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps27(a, b, c, out *byte)
TEXT ·vcmpps27(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $27, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps28(a, b, c, out *byte)
TEXT ·vcmpps28(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $28, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps29(a, b, c, out *byte)
TEXT ·vcmpps29(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $29, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps30(a, b, c, out *byte)
TEXT ·vcmpps30(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $30, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpps31(a, b, c, out *byte)
TEXT ·vcmpps31(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPPS $31, Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpss0(a, b, c, out *byte)
TEXT ·vcmpss0(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPSS $0, X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpss1(a, b, c, out *byte)
TEXT ·vcmpss1(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPSS $1, X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpss3(a, b, c, out *byte)
TEXT ·vcmpss3(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPSS $3, X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpss4(a, b, c, out *byte)
TEXT ·vcmpss4(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPSS $4, X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpss14(a, b, c, out *byte)
TEXT ·vcmpss14(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPSS $14, X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vcmpss30(a, b, c, out *byte)
TEXT ·vcmpss30(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCMPSS $30, X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpermilpsv(a, b, c, out *byte)
TEXT ·vpermilpsv(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPERMILPS Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpermilpsi(a, b, c, out *byte)
TEXT ·vpermilpsi(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPERMILPS $0x1b, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpermilpdv(a, b, c, out *byte)
TEXT ·vpermilpdv(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPERMILPD Y2, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func vpermilpdi(a, b, c, out *byte)
TEXT ·vpermilpdi(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPERMILPD $0x5, Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vpaddd(a, b, c, out *byte)
TEXT ·m_vpaddd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPADDD (BX), Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vbroadcastss(a, b, c, out *byte)
TEXT ·m_vbroadcastss(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VBROADCASTSS (BX), Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vpbroadcastb(a, b, c, out *byte)
TEXT ·m_vpbroadcastb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPBROADCASTB (BX), Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func x_vpbroadcastq(a, b, c, out *byte)
TEXT ·x_vpbroadcastq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPBROADCASTQ X2, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vmovss(a, b, c, out *byte)
TEXT ·m_vmovss(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMOVSS (BX), X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func x_vmovss(a, b, c, out *byte)
TEXT ·x_vmovss(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMOVSS X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vmovd(a, b, c, out *byte)
TEXT ·m_vmovd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMOVD (BX), X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vmovq(a, b, c, out *byte)
TEXT ·m_vmovq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMOVQ (BX), X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vpinsrw(a, b, c, out *byte)
TEXT ·m_vpinsrw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPINSRW $3, (BX), X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vcvtph2ps(a, b, c, out *byte)
TEXT ·m_vcvtph2ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPH2PS (BX), Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func x_vcvtph2ps(a, b, c, out *byte)
TEXT ·x_vcvtph2ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPH2PS X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func x_vcvtps2ph(a, b, c, out *byte)
TEXT ·x_vcvtps2ph(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPS2PH $0, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vpmovsxbw(a, b, c, out *byte)
TEXT ·m_vpmovsxbw(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPMOVSXBW (BX), Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vinserti128(a, b, c, out *byte)
TEXT ·m_vinserti128(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VINSERTI128 $1, (BX), Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vfmadd231ps(a, b, c, out *byte)
TEXT ·m_vfmadd231ps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VFMADD231PS (BX), Y1, Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vmaxss(a, b, c, out *byte)
TEXT ·m_vmaxss(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMAXSS (BX), X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vcvtss2sd(a, b, c, out *byte)
TEXT ·m_vcvtss2sd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTSS2SD (BX), X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func x_vpshufb(a, b, c, out *byte)
TEXT ·x_vpshufb(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPSHUFB X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func x_vaddps(a, b, c, out *byte)
TEXT ·x_vaddps(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VADDPS X2, X1, X0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vpermq(a, b, c, out *byte)
TEXT ·m_vpermq(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPERMQ $0x4e, (BX), Y0
	VMOVDQU Y0, (DX)
	VZEROUPPER
	RET

// func m_vcvtps2ph(a, b, c, out *byte)
TEXT ·m_vcvtps2ph(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VCVTPS2PH $0, Y1, (DX)
	VZEROUPPER
	RET

// func m_vextracti128(a, b, c, out *byte)
TEXT ·m_vextracti128(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VEXTRACTI128 $1, Y1, (DX)
	VZEROUPPER
	RET

// func m_vpextrd(a, b, c, out *byte)
TEXT ·m_vpextrd(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VPEXTRD $2, X1, (DX)
	VZEROUPPER
	RET

// func m_vmovss_st(a, b, c, out *byte)
TEXT ·m_vmovss_st(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	VMOVDQU (AX), Y1
	VMOVDQU (BX), Y2
	VMOVDQU (CX), Y0
	VMOVSS X1, (DX)
	VZEROUPPER
	RET

// func f_cmp(a, b, c, out *byte)
TEXT ·f_cmp(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	CMPQ R8, R9
	SETEQ 0(DX)
	SETNE 1(DX)
	SETLT 2(DX)
	SETGE 3(DX)
	SETLE 4(DX)
	SETGT 5(DX)
	SETCS 6(DX)
	SETCC 7(DX)
	SETLS 8(DX)
	SETHI 9(DX)
	SETMI 10(DX)
	SETPL 11(DX)
	SETOS 12(DX)
	SETOC 13(DX)
	SETPS 14(DX)
	SETPC 15(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	CMPL R8, R9
	SETEQ 24(DX)
	SETNE 25(DX)
	SETLT 26(DX)
	SETGE 27(DX)
	SETLE 28(DX)
	SETGT 29(DX)
	SETCS 30(DX)
	SETCC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_add(a, b, c, out *byte)
TEXT ·f_add(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	ADDQ R9, R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETLT 2(DX)
	SETGE 3(DX)
	SETLE 4(DX)
	SETGT 5(DX)
	SETCS 6(DX)
	SETCC 7(DX)
	SETLS 8(DX)
	SETHI 9(DX)
	SETMI 10(DX)
	SETPL 11(DX)
	SETOS 12(DX)
	SETOC 13(DX)
	SETPS 14(DX)
	SETPC 15(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	ADDL R9, R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETLT 26(DX)
	SETGE 27(DX)
	SETLE 28(DX)
	SETGT 29(DX)
	SETCS 30(DX)
	SETCC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_sub(a, b, c, out *byte)
TEXT ·f_sub(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	SUBQ R9, R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETLT 2(DX)
	SETGE 3(DX)
	SETLE 4(DX)
	SETGT 5(DX)
	SETCS 6(DX)
	SETCC 7(DX)
	SETLS 8(DX)
	SETHI 9(DX)
	SETMI 10(DX)
	SETPL 11(DX)
	SETOS 12(DX)
	SETOC 13(DX)
	SETPS 14(DX)
	SETPC 15(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	SUBL R9, R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETLT 26(DX)
	SETGE 27(DX)
	SETLE 28(DX)
	SETGT 29(DX)
	SETCS 30(DX)
	SETCC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_neg(a, b, c, out *byte)
TEXT ·f_neg(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	NEGQ R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETLT 2(DX)
	SETGE 3(DX)
	SETLE 4(DX)
	SETGT 5(DX)
	SETCS 6(DX)
	SETCC 7(DX)
	SETLS 8(DX)
	SETHI 9(DX)
	SETMI 10(DX)
	SETPL 11(DX)
	SETOS 12(DX)
	SETOC 13(DX)
	SETPS 14(DX)
	SETPC 15(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	NEGL R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETLT 26(DX)
	SETGE 27(DX)
	SETLE 28(DX)
	SETGT 29(DX)
	SETCS 30(DX)
	SETCC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_and(a, b, c, out *byte)
TEXT ·f_and(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	ANDQ R9, R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETLT 2(DX)
	SETGE 3(DX)
	SETLE 4(DX)
	SETGT 5(DX)
	SETCS 6(DX)
	SETCC 7(DX)
	SETLS 8(DX)
	SETHI 9(DX)
	SETMI 10(DX)
	SETPL 11(DX)
	SETOS 12(DX)
	SETOC 13(DX)
	SETPS 14(DX)
	SETPC 15(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	ANDL R9, R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETLT 26(DX)
	SETGE 27(DX)
	SETLE 28(DX)
	SETGT 29(DX)
	SETCS 30(DX)
	SETCC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_test(a, b, c, out *byte)
TEXT ·f_test(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	TESTQ R9, R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETLT 2(DX)
	SETGE 3(DX)
	SETLE 4(DX)
	SETGT 5(DX)
	SETCS 6(DX)
	SETCC 7(DX)
	SETLS 8(DX)
	SETHI 9(DX)
	SETMI 10(DX)
	SETPL 11(DX)
	SETOS 12(DX)
	SETOC 13(DX)
	SETPS 14(DX)
	SETPC 15(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	TESTB R9, R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETLT 26(DX)
	SETGE 27(DX)
	SETLE 28(DX)
	SETGT 29(DX)
	SETCS 30(DX)
	SETCC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_inc(a, b, c, out *byte)
TEXT ·f_inc(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	ADDQ R9, R8
	INCQ R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETLT 2(DX)
	SETGE 3(DX)
	SETLE 4(DX)
	SETGT 5(DX)
	SETCS 6(DX)
	SETCC 7(DX)
	SETLS 8(DX)
	SETHI 9(DX)
	SETMI 10(DX)
	SETPL 11(DX)
	SETOS 12(DX)
	SETOC 13(DX)
	SETPS 14(DX)
	SETPC 15(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	ADDL R9, R8
	INCL R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETLT 26(DX)
	SETGE 27(DX)
	SETLE 28(DX)
	SETGT 29(DX)
	SETCS 30(DX)
	SETCC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_dec(a, b, c, out *byte)
TEXT ·f_dec(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	SUBQ R9, R8
	DECQ R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETLT 2(DX)
	SETGE 3(DX)
	SETLE 4(DX)
	SETGT 5(DX)
	SETCS 6(DX)
	SETCC 7(DX)
	SETLS 8(DX)
	SETHI 9(DX)
	SETMI 10(DX)
	SETPL 11(DX)
	SETOS 12(DX)
	SETOC 13(DX)
	SETPS 14(DX)
	SETPC 15(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	SUBL R9, R8
	DECL R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETLT 26(DX)
	SETGE 27(DX)
	SETLE 28(DX)
	SETGT 29(DX)
	SETCS 30(DX)
	SETCC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_shl(a, b, c, out *byte)
TEXT ·f_shl(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	SHLQ CX, R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETCS 2(DX)
	SETCC 3(DX)
	SETMI 4(DX)
	SETPL 5(DX)
	SETPS 6(DX)
	SETPC 7(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	SHLL CX, R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETCS 26(DX)
	SETCC 27(DX)
	SETMI 28(DX)
	SETPL 29(DX)
	SETPS 30(DX)
	SETPC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_sar(a, b, c, out *byte)
TEXT ·f_sar(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	SARQ CX, R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETCS 2(DX)
	SETCC 3(DX)
	SETMI 4(DX)
	SETPL 5(DX)
	SETPS 6(DX)
	SETPC 7(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	SARL CX, R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETCS 26(DX)
	SETCC 27(DX)
	SETMI 28(DX)
	SETPL 29(DX)
	SETPS 30(DX)
	SETPC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_shr1(a, b, c, out *byte)
TEXT ·f_shr1(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	SHRQ $1, R8
	SETEQ 0(DX)
	SETNE 1(DX)
	SETLT 2(DX)
	SETGE 3(DX)
	SETLE 4(DX)
	SETGT 5(DX)
	SETCS 6(DX)
	SETCC 7(DX)
	SETLS 8(DX)
	SETHI 9(DX)
	SETMI 10(DX)
	SETPL 11(DX)
	SETOS 12(DX)
	SETOC 13(DX)
	SETPS 14(DX)
	SETPC 15(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	SHRL $1, R8
	SETEQ 24(DX)
	SETNE 25(DX)
	SETLT 26(DX)
	SETGE 27(DX)
	SETLE 28(DX)
	SETGT 29(DX)
	SETCS 30(DX)
	SETCC 31(DX)
	MOVL R8, 32(DX)
	RET

// func f_imul(a, b, c, out *byte)
TEXT ·f_imul(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	IMULQ R9, R8
	SETOS 0(DX)
	SETOC 1(DX)
	SETCS 2(DX)
	SETCC 3(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	IMULL R9, R8
	SETOS 24(DX)
	SETOC 25(DX)
	SETCS 26(DX)
	SETCC 27(DX)
	MOVL R8, 32(DX)
	RET

// func f_imul3(a, b, c, out *byte)
TEXT ·f_imul3(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVBQZX (CX), CX
	MOVQ $0, R10
	CMPQ R10, R10
	IMUL3Q $-3, R9, R8
	SETOS 0(DX)
	SETOC 1(DX)
	SETCS 2(DX)
	SETCC 3(DX)
	MOVQ R8, 16(DX)
	MOVQ (AX), R8
	MOVQ (BX), R9
	CMPQ R10, R10
	IMUL3L $100000, R9, R8
	SETOS 24(DX)
	SETOC 25(DX)
	SETCS 26(DX)
	SETCC 27(DX)
	MOVL R8, 32(DX)
	RET

// func f_cmov(a, b, c, out *byte)
TEXT ·f_cmov(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ out+24(FP), DX
	MOVQ (AX), R8
	MOVQ (BX), R9
	MOVQ 8(AX), R10
	CMPQ R8, R9
	CMOVQLT R10, R9
	MOVQ R9, (DX)
	CMPL R8, R10
	CMOVLHI R10, R8
	MOVQ R8, 8(DX)
	RET

// Code generated with vexcheck_amd64.s. DO NOT EDIT.

//go:build amd64 && !noasm && gc

package vexcheck

// Funcs are the instruction checks, by name: each loads Y1 from a, Y2 from
// b, Y0 from c, executes one instruction, and stores Y0 (or what the
// instruction stores) to out; the f_ checks run an integer instruction on
// the first qwords of a and b (shift count: c's first byte), 64- then
// 32-bit, and store the flags (SETcc) and results in out's first 36 bytes.
var Funcs = map[string]func(a, b, c, out *byte){
	"vaddps":         vaddps,
	"vsubps":         vsubps,
	"vmulps":         vmulps,
	"vdivps":         vdivps,
	"vmaxps":         vmaxps,
	"vminps":         vminps,
	"vsqrtps":        vsqrtps,
	"vandps":         vandps,
	"vfmadd231ps":    vfmadd231ps,
	"vfmadd213ps":    vfmadd213ps,
	"vfmadd132ps":    vfmadd132ps,
	"vfnmadd231ps":   vfnmadd231ps,
	"vfmsub231ps":    vfmsub231ps,
	"vfnmsub213ps":   vfnmsub213ps,
	"vfmadd231pd":    vfmadd231pd,
	"vaddpd":         vaddpd,
	"vmaxpd":         vmaxpd,
	"vcvtps2dq":      vcvtps2dq,
	"vcvttps2dq":     vcvttps2dq,
	"vcvtdq2ps":      vcvtdq2ps,
	"vcvtph2ps":      vcvtph2ps,
	"vcvtps2ph0":     vcvtps2ph0,
	"vcvtps2ph1":     vcvtps2ph1,
	"vcvtps2ph2":     vcvtps2ph2,
	"vcvtps2ph3":     vcvtps2ph3,
	"vcvtps2ph4":     vcvtps2ph4,
	"vroundps0":      vroundps0,
	"vroundps1":      vroundps1,
	"vroundps2":      vroundps2,
	"vroundps3":      vroundps3,
	"vaddss":         vaddss,
	"vdivss":         vdivss,
	"vmaxss":         vmaxss,
	"vcvtss2sd":      vcvtss2sd,
	"vcvtsd2ss":      vcvtsd2ss,
	"vaddsd":         vaddsd,
	"vfmadd231ss":    vfmadd231ss,
	"vblendvps":      vblendvps,
	"vmovmskps":      vmovmskps,
	"vpmaddubsw":     vpmaddubsw,
	"vpmaddwd":       vpmaddwd,
	"vpsignb":        vpsignb,
	"vpabsb":         vpabsb,
	"vpackusdw":      vpackusdw,
	"vpackssdw":      vpackssdw,
	"vpackuswb":      vpackuswb,
	"vpacksswb":      vpacksswb,
	"vpshufb":        vpshufb,
	"vpermd":         vpermd,
	"vpermps":        vpermps,
	"vpermq":         vpermq,
	"vperm2i128":     vperm2i128,
	"vpshufd":        vpshufd,
	"vphaddd":        vphaddd,
	"vpunpcklbw":     vpunpcklbw,
	"vpunpckhdq":     vpunpckhdq,
	"vpunpckhqdq":    vpunpckhqdq,
	"vpsraw":         vpsraw,
	"vpsrlw":         vpsrlw,
	"vpsllvd":        vpsllvd,
	"vpsravd":        vpsravd,
	"vpmulhw":        vpmulhw,
	"vpmulld":        vpmulld,
	"vpmuldq":        vpmuldq,
	"vpaddsw":        vpaddsw,
	"vpsubusb":       vpsubusb,
	"vpminsd":        vpminsd,
	"vpmaxub":        vpmaxub,
	"vpcmpgtb":       vpcmpgtb,
	"vpcmpeqw":       vpcmpeqw,
	"vpavgb":         vpavgb,
	"vpalignr":       vpalignr,
	"vpblendd":       vpblendd,
	"vpmovsxbw":      vpmovsxbw,
	"vpmovzxwd":      vpmovzxwd,
	"vpbroadcastb":   vpbroadcastb,
	"vshufps":        vshufps,
	"vmovshdup":      vmovshdup,
	"vmovhlps":       vmovhlps,
	"vextracti128":   vextracti128,
	"vinserti128":    vinserti128,
	"vpinsrd":        vpinsrd,
	"vpextrq":        vpextrq,
	"vpsadbw":        vpsadbw,
	"vpmovmskb":      vpmovmskb,
	"vcmpps0":        vcmpps0,
	"vcmpps1":        vcmpps1,
	"vcmpps2":        vcmpps2,
	"vcmpps3":        vcmpps3,
	"vcmpps4":        vcmpps4,
	"vcmpps5":        vcmpps5,
	"vcmpps6":        vcmpps6,
	"vcmpps7":        vcmpps7,
	"vcmpps8":        vcmpps8,
	"vcmpps9":        vcmpps9,
	"vcmpps10":       vcmpps10,
	"vcmpps11":       vcmpps11,
	"vcmpps12":       vcmpps12,
	"vcmpps13":       vcmpps13,
	"vcmpps14":       vcmpps14,
	"vcmpps15":       vcmpps15,
	"vcmpps16":       vcmpps16,
	"vcmpps17":       vcmpps17,
	"vcmpps18":       vcmpps18,
	"vcmpps19":       vcmpps19,
	"vcmpps20":       vcmpps20,
	"vcmpps21":       vcmpps21,
	"vcmpps22":       vcmpps22,
	"vcmpps23":       vcmpps23,
	"vcmpps24":       vcmpps24,
	"vcmpps25":       vcmpps25,
	"vcmpps26":       vcmpps26,
	"vcmpps27":       vcmpps27,
	"vcmpps28":       vcmpps28,
	"vcmpps29":       vcmpps29,
	"vcmpps30":       vcmpps30,
	"vcmpps31":       vcmpps31,
	"vcmpss0":        vcmpss0,
	"vcmpss1":        vcmpss1,
	"vcmpss3":        vcmpss3,
	"vcmpss4":        vcmpss4,
	"vcmpss14":       vcmpss14,
	"vcmpss30":       vcmpss30,
	"vpermilpsv":     vpermilpsv,
	"vpermilpsi":     vpermilpsi,
	"vpermilpdv":     vpermilpdv,
	"vpermilpdi":     vpermilpdi,
	"m_vpaddd":       m_vpaddd,
	"m_vbroadcastss": m_vbroadcastss,
	"m_vpbroadcastb": m_vpbroadcastb,
	"x_vpbroadcastq": x_vpbroadcastq,
	"m_vmovss":       m_vmovss,
	"x_vmovss":       x_vmovss,
	"m_vmovd":        m_vmovd,
	"m_vmovq":        m_vmovq,
	"m_vpinsrw":      m_vpinsrw,
	"m_vcvtph2ps":    m_vcvtph2ps,
	"x_vcvtph2ps":    x_vcvtph2ps,
	"x_vcvtps2ph":    x_vcvtps2ph,
	"m_vpmovsxbw":    m_vpmovsxbw,
	"m_vinserti128":  m_vinserti128,
	"m_vfmadd231ps":  m_vfmadd231ps,
	"m_vmaxss":       m_vmaxss,
	"m_vcvtss2sd":    m_vcvtss2sd,
	"x_vpshufb":      x_vpshufb,
	"x_vaddps":       x_vaddps,
	"m_vpermq":       m_vpermq,
	"m_vcvtps2ph":    m_vcvtps2ph,
	"m_vextracti128": m_vextracti128,
	"m_vpextrd":      m_vpextrd,
	"m_vmovss_st":    m_vmovss_st,
	"f_cmp":          f_cmp,
	"f_add":          f_add,
	"f_sub":          f_sub,
	"f_neg":          f_neg,
	"f_and":          f_and,
	"f_test":         f_test,
	"f_inc":          f_inc,
	"f_dec":          f_dec,
	"f_shl":          f_shl,
	"f_sar":          f_sar,
	"f_shr1":         f_shr1,
	"f_imul":         f_imul,
	"f_imul3":        f_imul3,
	"f_cmov":         f_cmov,
}

//go:noescape
func vaddps(a, b, c, out *byte)

//go:noescape
func vsubps(a, b, c, out *byte)

//go:noescape
func vmulps(a, b, c, out *byte)

//go:noescape
func vdivps(a, b, c, out *byte)

//go:noescape
func vmaxps(a, b, c, out *byte)

//go:noescape
func vminps(a, b, c, out *byte)

//go:noescape
func vsqrtps(a, b, c, out *byte)

//go:noescape
func vandps(a, b, c, out *byte)

//go:noescape
func vfmadd231ps(a, b, c, out *byte)

//go:noescape
func vfmadd213ps(a, b, c, out *byte)

//go:noescape
func vfmadd132ps(a, b, c, out *byte)

//go:noescape
func vfnmadd231ps(a, b, c, out *byte)

//go:noescape
func vfmsub231ps(a, b, c, out *byte)

//go:noescape
func vfnmsub213ps(a, b, c, out *byte)

//go:noescape
func vfmadd231pd(a, b, c, out *byte)

//go:noescape
func vaddpd(a, b, c, out *byte)

//go:noescape
func vmaxpd(a, b, c, out *byte)

//go:noescape
func vcvtps2dq(a, b, c, out *byte)

//go:noescape
func vcvttps2dq(a, b, c, out *byte)

//go:noescape
func vcvtdq2ps(a, b, c, out *byte)

//go:noescape
func vcvtph2ps(a, b, c, out *byte)

//go:noescape
func vcvtps2ph0(a, b, c, out *byte)

//go:noescape
func vcvtps2ph1(a, b, c, out *byte)

//go:noescape
func vcvtps2ph2(a, b, c, out *byte)

//go:noescape
func vcvtps2ph3(a, b, c, out *byte)

//go:noescape
func vcvtps2ph4(a, b, c, out *byte)

//go:noescape
func vroundps0(a, b, c, out *byte)

//go:noescape
func vroundps1(a, b, c, out *byte)

//go:noescape
func vroundps2(a, b, c, out *byte)

//go:noescape
func vroundps3(a, b, c, out *byte)

//go:noescape
func vaddss(a, b, c, out *byte)

//go:noescape
func vdivss(a, b, c, out *byte)

//go:noescape
func vmaxss(a, b, c, out *byte)

//go:noescape
func vcvtss2sd(a, b, c, out *byte)

//go:noescape
func vcvtsd2ss(a, b, c, out *byte)

//go:noescape
func vaddsd(a, b, c, out *byte)

//go:noescape
func vfmadd231ss(a, b, c, out *byte)

//go:noescape
func vblendvps(a, b, c, out *byte)

//go:noescape
func vmovmskps(a, b, c, out *byte)

//go:noescape
func vpmaddubsw(a, b, c, out *byte)

//go:noescape
func vpmaddwd(a, b, c, out *byte)

//go:noescape
func vpsignb(a, b, c, out *byte)

//go:noescape
func vpabsb(a, b, c, out *byte)

//go:noescape
func vpackusdw(a, b, c, out *byte)

//go:noescape
func vpackssdw(a, b, c, out *byte)

//go:noescape
func vpackuswb(a, b, c, out *byte)

//go:noescape
func vpacksswb(a, b, c, out *byte)

//go:noescape
func vpshufb(a, b, c, out *byte)

//go:noescape
func vpermd(a, b, c, out *byte)

//go:noescape
func vpermps(a, b, c, out *byte)

//go:noescape
func vpermq(a, b, c, out *byte)

//go:noescape
func vperm2i128(a, b, c, out *byte)

//go:noescape
func vpshufd(a, b, c, out *byte)

//go:noescape
func vphaddd(a, b, c, out *byte)

//go:noescape
func vpunpcklbw(a, b, c, out *byte)

//go:noescape
func vpunpckhdq(a, b, c, out *byte)

//go:noescape
func vpunpckhqdq(a, b, c, out *byte)

//go:noescape
func vpsraw(a, b, c, out *byte)

//go:noescape
func vpsrlw(a, b, c, out *byte)

//go:noescape
func vpsllvd(a, b, c, out *byte)

//go:noescape
func vpsravd(a, b, c, out *byte)

//go:noescape
func vpmulhw(a, b, c, out *byte)

//go:noescape
func vpmulld(a, b, c, out *byte)

//go:noescape
func vpmuldq(a, b, c, out *byte)

//go:noescape
func vpaddsw(a, b, c, out *byte)

//go:noescape
func vpsubusb(a, b, c, out *byte)

//go:noescape
func vpminsd(a, b, c, out *byte)

//go:noescape
func vpmaxub(a, b, c, out *byte)

//go:noescape
func vpcmpgtb(a, b, c, out *byte)

//go:noescape
func vpcmpeqw(a, b, c, out *byte)

//go:noescape
func vpavgb(a, b, c, out *byte)

//go:noescape
func vpalignr(a, b, c, out *byte)

//go:noescape
func vpblendd(a, b, c, out *byte)

//go:noescape
func vpmovsxbw(a, b, c, out *byte)

//go:noescape
func vpmovzxwd(a, b, c, out *byte)

//go:noescape
func vpbroadcastb(a, b, c, out *byte)

//go:noescape
func vshufps(a, b, c, out *byte)

//go:noescape
func vmovshdup(a, b, c, out *byte)

//go:noescape
func vmovhlps(a, b, c, out *byte)

//go:noescape
func vextracti128(a, b, c, out *byte)

//go:noescape
func vinserti128(a, b, c, out *byte)

//go:noescape
func vpinsrd(a, b, c, out *byte)

//go:noescape
func vpextrq(a, b, c, out *byte)

//go:noescape
func vpsadbw(a, b, c, out *byte)

//go:noescape
func vpmovmskb(a, b, c, out *byte)

//go:noescape
func vcmpps0(a, b, c, out *byte)

//go:noescape
func vcmpps1(a, b, c, out *byte)

//go:noescape
func vcmpps2(a, b, c, out *byte)

//go:noescape
func vcmpps3(a, b, c, out *byte)

//go:noescape
func vcmpps4(a, b, c, out *byte)

//go:noescape
func vcmpps5(a, b, c, out *byte)

//go:noescape
func vcmpps6(a, b, c, out *byte)

//go:noescape
func vcmpps7(a, b, c, out *byte)

//go:noescape
func vcmpps8(a, b, c, out *byte)

//go:noescape
func vcmpps9(a, b, c, out *byte)

//go:noescape
func vcmpps10(a, b, c, out *byte)

//go:noescape
func vcmpps11(a, b, c, out *byte)

//go:noescape
func vcmpps12(a, b, c, out *byte)

//go:noescape
func vcmpps13(a, b, c, out *byte)

//go:noescape
func vcmpps14(a, b, c, out *byte)

//go:noescape
func vcmpps15(a, b, c, out *byte)

//go:noescape
func vcmpps16(a, b, c, out *byte)

//go:noescape
func vcmpps17(a, b, c, out *byte)

//go:noescape
func vcmpps18(a, b, c, out *byte)

//go:noescape
func vcmpps19(a, b, c, out *byte)

//go:noescape
func vcmpps20(a, b, c, out *byte)

//go:noescape
func vcmpps21(a, b, c, out *byte)

//go:noescape
func vcmpps22(a, b, c, out *byte)

//go:noescape
func vcmpps23(a, b, c, out *byte)

//go:noescape
func vcmpps24(a, b, c, out *byte)

//go:noescape
func vcmpps25(a, b, c, out *byte)

//go:noescape
func vcmpps26(a, b, c, out *byte)

//go:noescape
func vcmpps27(a, b, c, out *byte)

//go:noescape
func vcmpps28(a, b, c, out *byte)

//go:noescape
func vcmpps29(a, b, c, out *byte)

//go:noescape
func vcmpps30(a, b, c, out *byte)

//go:noescape
func vcmpps31(a, b, c, out *byte)

//go:noescape
func vcmpss0(a, b, c, out *byte)

//go:noescape
func vcmpss1(a, b, c, out *byte)

//go:noescape
func vcmpss3(a, b, c, out *byte)

//go:noescape
func vcmpss4(a, b, c, out *byte)

//go:noescape
func vcmpss14(a, b, c, out *byte)

//go:noescape
func vcmpss30(a, b, c, out *byte)

//go:noescape
func vpermilpsv(a, b, c, out *byte)

//go:noescape
func vpermilpsi(a, b, c, out *byte)

//go:noescape
func vpermilpdv(a, b, c, out *byte)

//go:noescape
func vpermilpdi(a, b, c, out *byte)

//go:noescape
func m_vpaddd(a, b, c, out *byte)

//go:noescape
func m_vbroadcastss(a, b, c, out *byte)

//go:noescape
func m_vpbroadcastb(a, b, c, out *byte)

//go:noescape
func x_vpbroadcastq(a, b, c, out *byte)

//go:noescape
func m_vmovss(a, b, c, out *byte)

//go:noescape
func x_vmovss(a, b, c, out *byte)

//go:noescape
func m_vmovd(a, b, c, out *byte)

//go:noescape
func m_vmovq(a, b, c, out *byte)

//go:noescape
func m_vpinsrw(a, b, c, out *byte)

//go:noescape
func m_vcvtph2ps(a, b, c, out *byte)

//go:noescape
func x_vcvtph2ps(a, b, c, out *byte)

//go:noescape
func x_vcvtps2ph(a, b, c, out *byte)

//go:noescape
func m_vpmovsxbw(a, b, c, out *byte)

//go:noescape
func m_vinserti128(a, b, c, out *byte)

//go:noescape
func m_vfmadd231ps(a, b, c, out *byte)

//go:noescape
func m_vmaxss(a, b, c, out *byte)

//go:noescape
func m_vcvtss2sd(a, b, c, out *byte)

//go:noescape
func x_vpshufb(a, b, c, out *byte)

//go:noescape
func x_vaddps(a, b, c, out *byte)

//go:noescape
func m_vpermq(a, b, c, out *byte)

//go:noescape
func m_vcvtps2ph(a, b, c, out *byte)

//go:noescape
func m_vextracti128(a, b, c, out *byte)

//go:noescape
func m_vpextrd(a, b, c, out *byte)

//go:noescape
func m_vmovss_st(a, b, c, out *byte)

//go:noescape
func f_cmp(a, b, c, out *byte)

//go:noescape
func f_add(a, b, c, out *byte)

//go:noescape
func f_sub(a, b, c, out *byte)

//go:noescape
func f_neg(a, b, c, out *byte)

//go:noescape
func f_and(a, b, c, out *byte)

//go:noescape
func f_test(a, b, c, out *byte)

//go:noescape
func f_inc(a, b, c, out *byte)

//go:noescape
func f_dec(a, b, c, out *byte)

//go:noescape
func f_shl(a, b, c, out *byte)

//go:noescape
func f_sar(a, b, c, out *byte)

//go:noescape
func f_shr1(a, b, c, out *byte)

//go:noescape
func f_imul(a, b, c, out *byte)

//go:noescape
func f_imul3(a, b, c, out *byte)

//go:noescape
func f_cmov(a, b, c, out *byte)

//go:build !noasm && gc

package cpu

import "golang.org/x/sys/cpu"

//go:generate go run -C _generate . -out ../kernels_amd64.s -stubs ../kernels_amd64.go -pkg cpu

// haveAVX2 reports whether this CPU runs the AVX2 kernels: AVX2 (which
// x/sys/cpu only reports when the OS saves the YMM state), F16C for the
// f16 scales and FMA for ggml's exp (every AVX2 CPU from Haswell and Zen
// on has all three).
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasF16C && cpu.X86.HasFMA

// haveAVX512 reports whether this CPU runs the AVX-512 kernels: AVX512F
// (which x/sys/cpu only reports when the OS saves the opmask and ZMM
// state), BW, VL and VNNI (VPDPBUSD), on top of the AVX2 set's features
// (the AVX-512 set uses AVX2 kernels for the ones it has not got).
var haveAVX512 = haveAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

// Package vexcheck holds one small assembly function per AVX, AVX2, FMA
// and F16C instruction form, so that a test can run each both natively on
// this CPU and under x86sim and compare the bits on special values (NaNs
// with payloads, infinities, signed zeros, subnormals, saturation edges).
// It is only used by its test; without the assembly (another architecture,
// -tags noasm) it is empty.
package vexcheck

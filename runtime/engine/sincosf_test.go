package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSincosf checks sinf and cosf against values glibc 2.36's libm
// (x86-64, the FMA variant) returned for inputs where it is not correctly
// rounded (both reductions), and within an ulp of the correctly rounded
// value on seeded random inputs.
func TestSincosf(t *testing.T) {
	for _, c := range []struct{ x, sin, cos uint32 }{
		{0x3b5610c5, 0x3b5610ac, 0x3f7fffa7}, // 0.00326638
		{0xbf926fdc, 0xbf690a3f, 0x3ed3ed82}, // -1.14404
		{0x43483d4f, 0xbf3b9976, 0x3f2e30da}, // 200.239 (reduce_large)
		{0x43484cc3, 0xbf30bfd6, 0x3f3930de}, // 200.3
		{0xc3e73627, 0x3f126ec1, 0xbf51fc07}, // -462.423
		{0x463af6a1, 0x3f1ecf5e, 0xbf48c972}, // 11965.7
	} {
		x := math.Float32frombits(c.x)
		if s, co := math.Float32bits(sinf(x)), math.Float32bits(cosf(x)); s != c.sin || co != c.cos {
			t.Errorf("x %v: sinf %#x cosf %#x, glibc %#x %#x", x, s, co, c.sin, c.cos)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	ulp := func(a, b float32) int64 {
		d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
		if d < 0 {
			d = -d
		}
		return d
	}
	for i := 0; i < 100000; i++ {
		x := float32((r.Float64() - 0.5) * math.Pow(2, float64(r.IntN(30)-10)))
		if d := ulp(sinf(x), float32(math.Sin(float64(x)))); d > 1 {
			t.Fatalf("sinf(%v) = %v, %d ulp from %v", x, sinf(x), d, math.Sin(float64(x)))
		}
		if d := ulp(cosf(x), float32(math.Cos(float64(x)))); d > 1 {
			t.Fatalf("cosf(%v) = %v, %d ulp from %v", x, cosf(x), d, math.Cos(float64(x)))
		}
	}
}

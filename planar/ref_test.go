package planar

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// f32ToF16RNE is an integer reference for binary32 -> binary16 rounding to
// nearest, ties to even, used to check the ggml algorithm in F32ToF16.
func f32ToF16RNE(f float32) uint16 {
	w := math.Float32bits(f)
	sign := uint16(w>>16) & 0x8000
	exp := int(w>>23) & 0xff
	mant := w & 0x7fffff
	switch {
	case exp == 0xff && mant != 0:
		return sign | 0x7e00
	case exp == 0xff:
		return sign | 0x7c00
	}
	// value = m * 2^(e) with m an integer of up to 24 bits
	var m uint64
	var e int
	if exp == 0 {
		m, e = uint64(mant), -149
	} else {
		m, e = uint64(mant|0x800000), exp-150
	}
	if m == 0 {
		return sign
	}
	// binary16 quantum: 2^-24 for subnormals, 2^(E-10) for exponent E.
	// Find the binary16 exponent of the value's leading bit.
	lead := e + 63 - countLeadingZeros64(m) // value in [2^lead, 2^(lead+1))
	q := max(lead-10, -24)                  // the quantum exponent
	// Round m*2^e to a multiple of 2^q, ties to even.
	var n uint64
	if sh := q - e; sh <= 0 {
		n = m << uint(-sh)
	} else if sh >= 64 {
		n = 0
	} else {
		n = m >> uint(sh)
		rem := m & (1<<uint(sh) - 1)
		half := uint64(1) << uint(sh-1)
		if rem > half || rem == half && n&1 == 1 {
			n++
		}
	}
	// n * 2^q; encode. n may have carried to 2^11.
	if q == -24 && n < 1024 {
		return sign | uint16(n) // subnormal (or zero)
	}
	for n >= 2048 {
		n >>= 1
		q++
	}
	E := q + 10 + 15 // biased exponent of n*2^q with n in [1024, 2048)
	if E >= 31 {
		return sign | 0x7c00
	}
	return sign | uint16(E)<<10 | uint16(n&0x3ff)
}

func countLeadingZeros64(x uint64) int {
	n := 0
	for x&(1<<63) == 0 {
		x <<= 1
		n++
	}
	return n
}

func TestF16ToF32AllValues(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		exp, mant := h>>10&0x1f, h&0x3ff
		if exp == 0x1f && mant != 0 {
			b := math.Float32bits(f)
			if !math.IsNaN(float64(f)) || b&0x3fe000 != uint32(mant)<<13&0x3fe000 || b>>31 != uint32(h>>15) || b&0x400000 == 0 {
				t.Fatalf("F16ToF32(%#04x) = %#08x, want a quiet NaN with its sign and payload", h, b)
			}
			continue
		}
		// exact value: (-1)^s * 2^(exp-15) * (1 + mant/1024), or subnormal
		var want float64
		if exp == 0 {
			want = float64(mant) * math.Ldexp(1, -24)
		} else if exp == 0x1f {
			want = math.Inf(1)
		} else {
			want = math.Ldexp(1+float64(mant)/1024, int(exp)-15)
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("F16ToF32(%#04x) = %g, want %g", h, f, want)
		}
		if back := F32ToF16(f); back != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}

func TestF32ToF16(t *testing.T) {
	cases := []struct {
		f    float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000},
		{65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, // max, last value below the tie, tie rounds up to Inf
		{float32(math.Inf(1)), 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{float32(math.NaN()), 0x7e00}, {math.Float32frombits(0xff800001), 0xfe00},
		{0x1p-24, 0x0001}, {0x1p-25, 0}, {0x1.8p-25, 0x0001}, {0x1.8p-24, 0x0002}, // subnormal ties to even
		{1 + 0x1p-11, 0x3c00}, {1 + 0x3p-11, 0x3c02}, // ties to even
		{0x1p-14, 0x0400}, {0x1.ffcp-15, 0x0400}, {0x1.ff8p-15, 0x03ff}, // subnormal rounding up into the normals
	}
	for _, c := range cases {
		if got := F32ToF16(c.f); got != c.want {
			t.Errorf("F32ToF16(%g [%#08x]) = %#04x, want %#04x", c.f, math.Float32bits(c.f), got, c.want)
		}
		if got := f32ToF16RNE(c.f); got != c.want {
			t.Errorf("f32ToF16RNE(%g) = %#04x, want %#04x (test reference is wrong)", c.f, got, c.want)
		}
	}
	// A strided sweep of all float32 bit patterns against the integer reference.
	step := uint32(4099)
	if testing.Short() {
		step = 65537
	}
	for w := uint64(0); w < 1<<32; w += uint64(step) {
		f := math.Float32frombits(uint32(w))
		if got, want := F32ToF16(f), f32ToF16RNE(f); got != want {
			t.Fatalf("F32ToF16(%#08x) = %#04x, want %#04x", w, got, want)
		}
	}
	// Every rounding boundary: the midpoints between adjacent binary16 values
	// and their float32 neighbours.
	for h := uint32(0); h < 0x7c00; h++ {
		lo, hi := F16ToF32(uint16(h)), F16ToF32(uint16(h+1))
		mid := float32((float64(lo) + float64(hi)) / 2) // exact in float32
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			for _, s := range []float32{f, -f} {
				if got, want := F32ToF16(s), f32ToF16RNE(s); got != want {
					t.Fatalf("F32ToF16(%g) = %#04x, want %#04x", s, got, want)
				}
			}
		}
	}
}

func TestBF16ToF32(t *testing.T) {
	for _, c := range []struct {
		b    uint16
		want uint32
	}{{0x3f80, 0x3f800000}, {0xc000, 0xc0000000}, {0x7f81, 0x7f810000}, {0x0001, 0x00010000}} {
		if got := math.Float32bits(BF16ToF32(c.b)); got != c.want {
			t.Errorf("BF16ToF32(%#04x) = %#08x, want %#08x", c.b, got, c.want)
		}
	}
}

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

// TestDequantGGUFKnown checks hand-made blocks against values worked out
// from ggml's formulas by hand.
func TestDequantGGUFKnown(t *testing.T) {
	t.Run("Q4_0", func(t *testing.T) {
		b := make([]byte, 18)
		putF16(b, 0.5)
		b[2] = 0x3a  // element 0 = 10, element 16 = 3
		b[17] = 0xf0 // element 15 = 0, element 31 = 15
		y := make([]float32, 32)
		must(t, DequantGGUF(Q4_0, b, y))
		want := map[int]float32{0: 1, 16: -2.5, 15: -4, 31: 3.5, 1: -4}
		for i, w := range want {
			if y[i] != w {
				t.Errorf("y[%d] = %g, want %g", i, y[i], w)
			}
		}
	})
	t.Run("Q5_0", func(t *testing.T) {
		b := make([]byte, 22)
		putF16(b, 2)
		binary.LittleEndian.PutUint32(b[2:], 1<<3|1<<19) // high bit of elements 3 and 19
		b[6+3] = 0x21                                    // element 3 low = 1, element 19 low = 2
		y := make([]float32, 32)
		must(t, DequantGGUF(Q5_0, b, y))
		if y[3] != 2*(17-16) || y[19] != 2*(18-16) || y[0] != -32 {
			t.Errorf("y[3], y[19], y[0] = %g, %g, %g, want 2, 4, -32", y[3], y[19], y[0])
		}
	})
	t.Run("Q8_0", func(t *testing.T) {
		b := make([]byte, 34)
		putF16(b, 0.25)
		b[2], b[33] = 0x80, 0x7f
		y := make([]float32, 32)
		must(t, DequantGGUF(Q8_0, b, y))
		if y[0] != -32 || y[31] != 31.75 {
			t.Errorf("y[0], y[31] = %g, %g, want -32, 31.75", y[0], y[31])
		}
	})
	t.Run("Q4_K", func(t *testing.T) {
		b := make([]byte, 144)
		putF16(b[0:], 1)
		putF16(b[2:], 0.5)
		sc := [8]byte{1, 2, 3, 4, 5, 6, 63, 40}
		m := [8]byte{0, 1, 2, 3, 4, 5, 6, 33}
		packScaleMinK4(&sc, &m, b[4:16])
		// Check the packing against ggml's get_scale_min_k4 written out for j = 6, 7.
		if d6 := b[4+10]&0xf | (b[4+2]>>6)<<4; d6 != 63 {
			t.Fatalf("scale 6 = %d", d6)
		}
		if m7 := b[4+11]>>4 | (b[4+7]>>6)<<4; m7 != 33 {
			t.Fatalf("min 7 = %d", m7)
		}
		qs := b[16:]
		qs[0] = 0x52       // element 0 = 2 (sub-block 0), element 32 = 5 (sub-block 1)
		qs[3*32+31] = 0xf7 // element 223 = 7 (sub-block 6), element 255 = 15 (sub-block 7)
		y := make([]float32, 256)
		must(t, DequantGGUF(Q4_K, b, y))
		want := map[int]float32{0: 1 * 2, 32: 2*5 - 0.5, 223: 63*7 - 3, 255: 40*15 - 16.5}
		for i, w := range want {
			if y[i] != w {
				t.Errorf("y[%d] = %g, want %g", i, y[i], w)
			}
		}
	})
	t.Run("Q5_K", func(t *testing.T) {
		b := make([]byte, 176)
		putF16(b[0:], 1)
		sc := [8]byte{1, 1, 1, 1, 1, 1, 1, 2}
		var m [8]byte
		packScaleMinK4(&sc, &m, b[4:16])
		b[16+5] = 1<<7 | 1<<0 // high bit of element 32*7+5 = 229 and of element 5
		b[48+96+5] = 0x30     // chunk 3: element 197 low = 0, element 229 low = 3
		y := make([]float32, 256)
		must(t, DequantGGUF(Q5_K, b, y))
		if y[229] != 2*19 || y[5] != 16 || y[197] != 0 {
			t.Errorf("y[229], y[5], y[197] = %g, %g, %g, want 38, 16, 0", y[229], y[5], y[197])
		}
	})
	t.Run("Q6_K", func(t *testing.T) {
		b := make([]byte, 210)
		putF16(b[208:], 0.5)
		for i := 0; i < 16; i++ {
			b[192+i] = byte(i + 1)
		}
		b[192+15] = 0xfe // scale -2 for elements 240..255
		// second half: l = 31 -> elements 128+31, +63, +95, +127
		b[64+31] = 0x21           // q1 low = 1, q3 low = 2
		b[64+63] = 0x43           // q2 low = 3, q4 low = 4
		b[128+32+31] = 0b11100100 // q1 hi 0, q2 hi 1, q3 hi 2, q4 hi 3
		y := make([]float32, 256)
		must(t, DequantGGUF(Q6_K, b, y))
		want := map[int]float32{
			159: 0.5 * 10 * (1 - 32), 191: 0.5 * 12 * (19 - 32),
			223: 0.5 * 14 * (34 - 32), 255: 0.5 * -2 * (52 - 32), 0: 0.5 * 1 * -32,
		}
		for i, w := range want {
			if y[i] != w {
				t.Errorf("y[%d] = %g, want %g", i, y[i], w)
			}
		}
	})
	t.Run("floats", func(t *testing.T) {
		y := make([]float32, 2)
		must(t, DequantGGUF(F16, []byte{0x00, 0x3c, 0x00, 0xc0}, y))
		if y[0] != 1 || y[1] != -2 {
			t.Errorf("F16: %v", y)
		}
		must(t, DequantGGUF(BF16, []byte{0x80, 0x3f, 0x00, 0xc0}, y))
		if y[0] != 1 || y[1] != -2 {
			t.Errorf("BF16: %v", y)
		}
		must(t, DequantGGUF(F32, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}, y))
		if y[0] != 1 || y[1] != -2 {
			t.Errorf("F32: %v", y)
		}
	})
}

func TestDequantGGUFErrors(t *testing.T) {
	y := make([]float32, 32)
	for _, typ := range []Type{Q4_1, Q2_K, IQ4_NL, Type(99)} {
		err := DequantGGUF(typ, make([]byte, 64), y)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), typ.String()) {
			t.Errorf("DequantGGUF(%s) = %v, want ErrUnsupported naming the type", typ, err)
		}
	}
	if err := DequantGGUF(Q4_0, make([]byte, 17), y); !errors.Is(err, ErrShape) {
		t.Errorf("short source: %v, want ErrShape", err)
	}
	if err := DequantGGUF(Q4_K, make([]byte, 144), y); !errors.Is(err, ErrShape) {
		t.Errorf("32 elements of Q4_K: %v, want ErrShape", err)
	}
}

// TestScaleMinBijection shows that the 12-byte scales array of block_q4_K is
// a bijection onto 8+8 six-bit values: each of its 96 bits lands on exactly
// one distinct bit of the unpacked values (and the map is bitwise), so every
// byte pattern round-trips and Pack can never lose bits.
func TestScaleMinBijection(t *testing.T) {
	seen := map[int]int{}
	for bit := 0; bit < 96; bit++ {
		var q [12]byte
		q[bit/8] = 1 << (bit % 8)
		var sc, m [8]byte
		scaleMinK4(q[:], &sc, &m)
		set := -1
		for j, v := range append(sc[:], m[:]...) {
			if v >= 64 {
				t.Fatalf("bit %d: value %d = %d is wider than 6 bits", bit, j, v)
			}
			for k := 0; k < 6; k++ {
				if v>>k&1 == 1 {
					if set >= 0 {
						t.Fatalf("bit %d lands on two bits", bit)
					}
					set = 6*j + k
				}
			}
		}
		if set < 0 {
			t.Fatalf("bit %d of the scales array is ignored by get_scale_min_k4", bit)
		}
		if prev, dup := seen[set]; dup {
			t.Fatalf("bits %d and %d both land on bit %d", prev, bit, set)
		}
		seen[set] = bit
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		var q, back [12]byte
		for j := range q {
			q[j] = byte(rng.Uint32())
		}
		var sc, m [8]byte
		scaleMinK4(q[:], &sc, &m)
		packScaleMinK4(&sc, &m, back[:])
		if q != back {
			t.Fatalf("%x -> %v %v -> %x", q, sc, m, back)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestProductsExact pins the claim of DequantRow's doc that no product of
// the formats rounds: for every finite f16 d and extreme scales and codes,
// the float32 products equal the exact (float64) ones.
func TestProductsExact(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		d := F16ToF32(uint16(h))
		if math.IsNaN(float64(d)) || math.IsInf(float64(d), 0) {
			continue
		}
		for _, sc := range []float32{63, 61, 47, -127, 127, -99, 1} { // 6-bit K scales, int8 Q6_K scales
			ds := d * sc
			if float64(ds) != float64(d)*float64(sc) {
				t.Fatalf("d*sc rounds: %g*%g", d, sc)
			}
			for _, q := range []float32{31, 29, 23, -31, -29, -32, 15, 13} {
				if got, want := float64(ds*q), float64(d)*float64(sc)*float64(q); got != want {
					t.Fatalf("(d*sc)*q rounds: %g*%g*%g = %g, exact %g", d, sc, q, got, want)
				}
			}
		}
		for _, q := range []float32{127, -127, -128, 125, 7, -8, 15, -16} { // Q8_0, Q4_0, Q5_0 codes
			if got, want := float64(d*q), float64(d)*float64(q); got != want {
				t.Fatalf("d*q rounds: %g*%g", d, q)
			}
		}
	}
}

package planar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// shapes returns geometries of type t that straddle groups and tiles: N < C,
// N = 1, N not a multiple of C, K = T, many K-tiles, C in {1, 4, 8}.
func shapes(t Type) []Geometry {
	u := t.BlockSize()
	if u == 1 {
		u = 8 // float formats: also exercise tiles that are not 32-multiples
	}
	return []Geometry{
		{t, 1, u, 1, u},
		{t, 1, 3 * u, 8, u},
		{t, 3, 2 * u, 4, 2 * u},
		{t, 5, 4 * u, 4, 2 * u},
		{t, 13, 6 * u, 4, 3 * u},
		{t, 17, 3 * u, 8, 3 * u},
		{t, 9, 8 * u, 8, u},
		{t, 31, 5 * u, 8, u},
		{t, 7, 2 * u, 1, u},
		{t, 64, 2 * u, 8, 2 * u},
	}
}

func randomSource(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// checkRoundTrip packs src, checks the blob (padding, layout against the
// element-level spec, guard bands), unpacks it and compares bytes, and checks
// DequantRow and DequantTile against DequantGGUF bit for bit.
func checkRoundTrip(t testing.TB, g Geometry, src []byte) {
	t.Helper()
	const guard = 64
	buf := make([]byte, g.Size()+2*guard)
	for i := range buf {
		buf[i] = 0xa5 // stale bytes: Pack must overwrite padding too
	}
	blob := buf[guard : guard+g.Size() : guard+g.Size()]
	if err := Pack(g, src, blob); err != nil {
		t.Fatalf("%+v: Pack: %v", g, err)
	}
	for i := 0; i < guard; i++ {
		if buf[i] != 0xa5 || buf[len(buf)-1-i] != 0xa5 {
			t.Fatalf("%+v: Pack wrote outside the blob", g)
		}
	}
	checkPadding(t, g, blob)
	checkSpec(t, g, src, blob)

	back := make([]byte, len(src))
	if err := Unpack(g, blob, back); err != nil {
		t.Fatalf("%+v: Unpack: %v", g, err)
	}
	if !bytes.Equal(back, src) {
		i := 0
		for back[i] == src[i] {
			i++
		}
		t.Fatalf("%+v: Unpack(Pack(x)) differs from x at byte %d: %#02x, want %#02x", g, i, back[i], src[i])
	}

	rowBytes := g.Type.RowBytes(g.K)
	want := make([]float32, g.K)
	rows := make([][]float32, g.N)
	for r := 0; r < g.N; r++ {
		if err := DequantGGUF(g.Type, src[r*rowBytes:(r+1)*rowBytes], want); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, g.K)
		DequantRow(g, blob, r, got)
		for k := range got {
			if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
				t.Fatalf("%+v: row %d element %d: DequantRow %g (%#08x), DequantGGUF %g (%#08x)",
					g, r, k, got[k], math.Float32bits(got[k]), want[k], math.Float32bits(want[k]))
			}
		}
		rows[r] = got
	}
	for c := 0; c < g.Columns; c++ {
		first, n := g.GroupRows(c)
		tile := make([]float32, n*g.KTile)
		for tt := 0; tt < g.Tiles(); tt++ {
			DequantTile(g, blob, c, tt, tile)
			for i := 0; i < n; i++ {
				for e := 0; e < g.KTile; e++ {
					got, want := tile[i*g.KTile+e], rows[first+i][tt*g.KTile+e]
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%+v: DequantTile(%d, %d)[%d][%d] = %g, DequantRow %g", g, c, tt, i, e, got, want)
					}
				}
			}
		}
	}
}

// checkPadding checks that the planes tile the blob as Geometry says (each
// 64-aligned, in group, tile, plane order, no gaps beyond alignment) and that
// every padding byte is zero.
func checkPadding(t testing.TB, g Geometry, blob []byte) {
	t.Helper()
	used := make([]bool, len(blob))
	next := 0
	for c := 0; c < g.Columns; c++ {
		_, n := g.GroupRows(c)
		if off := g.GroupOffset(c); off != next {
			t.Fatalf("%+v: group %d at %d, want %d", g, c, off, next)
		}
		for tt := 0; tt < g.Tiles(); tt++ {
			for p := range g.Format().Planes {
				off, per := g.PlaneOffset(c, tt, p)
				if off != next || off%Align != 0 {
					t.Fatalf("%+v: plane (%d,%d,%d) at %d, want %d (aligned to %d)", g, c, tt, p, off, next, Align)
				}
				for i := off; i < off+n*per; i++ {
					used[i] = true
				}
				next = off + (n*per+Align-1)/Align*Align
			}
		}
	}
	if next != len(blob) {
		t.Fatalf("%+v: planes end at %d, blob is %d bytes", g, next, len(blob))
	}
	for i, u := range used {
		if !u && blob[i] != 0 {
			t.Fatalf("%+v: padding byte %d is %#02x", g, i, blob[i])
		}
	}
}

// plane returns row r's bytes of plane p of K-tile tt, by Geometry alone.
func plane(g Geometry, blob []byte, r, tt, p int) []byte {
	c := r / g.RowsPerGroup()
	first, _ := g.GroupRows(c)
	off, per := g.PlaneOffset(c, tt, p)
	off += (r - first) * per
	return blob[off : off+per]
}

// checkSpec compares every element's code and every scale of the blob with
// the GGUF source, each read independently by the formulas of
// docs/FORMAT.md (blob) and of ggml's block structs (source).
func checkSpec(t testing.TB, g Geometry, src, blob []byte) {
	t.Helper()
	bs, bb := g.Type.BlockSize(), g.Type.BlockBytes()
	rowBytes := g.Type.RowBytes(g.K)
	fail := func(r, k int, what string, got, want any) {
		t.Helper()
		t.Fatalf("%+v: row %d element %d: %s: blob has %v, GGUF has %v", g, r, k, what, got, want)
	}
	for r := 0; r < g.N; r++ {
		for k := 0; k < g.K; k++ {
			tt, e := k/g.KTile, k%g.KTile
			b, w := e/bs, k%bs // block inside the tile, element inside the block
			blk := src[r*rowBytes+k/bs*bb:][:bb]
			pl := func(p int) []byte { return plane(g, blob, r, tt, p) }
			switch g.Type {
			case Q4_0, Q5_0:
				qs := blk[2:18]
				if g.Type == Q5_0 {
					qs = blk[6:22]
				}
				want := int(qs[w%16] >> (4 * (w / 16)) & 15)
				got := int(pl(0)[e/2] >> (4 * (e % 2)) & 15)
				if got != want {
					fail(r, k, "4-bit code", got, want)
				}
				sp := 1
				if g.Type == Q5_0 {
					sp = 2
					wantH := int(binary.LittleEndian.Uint32(blk[2:]) >> w & 1)
					if gotH := int(pl(1)[e/8] >> (e % 8) & 1); gotH != wantH {
						fail(r, k, "5th bit", gotH, wantH)
					}
				}
				if !bytes.Equal(pl(sp)[2*b:2*b+2], blk[0:2]) {
					fail(r, k, "f16 d", pl(sp)[2*b:2*b+2], blk[0:2])
				}
			case Q8_0:
				if got, want := pl(0)[e], blk[2+w]; got != want {
					fail(r, k, "int8 code", got, want)
				}
				if !bytes.Equal(pl(1)[2*b:2*b+2], blk[0:2]) {
					fail(r, k, "f16 d", pl(1)[2*b:2*b+2], blk[0:2])
				}
			case Q4_K, Q5_K:
				qs, sp := blk[16:144], 1
				if g.Type == Q5_K {
					qs, sp = blk[48:176], 2
				}
				j, l := w/64, w%64
				want := int(qs[32*j+l%32] >> (4 * (l / 32)) & 15)
				got := int(pl(0)[e/2] >> (4 * (e % 2)) & 15)
				if got != want {
					fail(r, k, "4-bit code", got, want)
				}
				if g.Type == Q5_K {
					wantH := int(blk[16+w%32] >> (w / 32) & 1)
					if gotH := int(pl(1)[e/8] >> (e % 8) & 1); gotH != wantH {
						fail(r, k, "5th bit", gotH, wantH)
					}
				}
				// get_scale_min_k4, written out again from ggml-quants.c
				q, s := blk[4:16], w/32
				var sc, m byte
				if s < 4 {
					sc, m = q[s]&63, q[s+4]&63
				} else {
					sc = q[s+4]&0xf | (q[s-4]>>6)<<4
					m = q[s+4]>>4 | (q[s]>>6)<<4
				}
				sm := pl(sp)[16*b : 16*b+16]
				if sm[w/32] != sc || sm[8+w/32] != m {
					fail(r, k, "scale, min", [2]byte{sm[w/32], sm[8+w/32]}, [2]byte{sc, m})
				}
				if dm := pl(sp + 1)[4*b : 4*b+4]; !bytes.Equal(dm, blk[0:4]) {
					fail(r, k, "f16 d, dmin", dm, blk[0:4])
				}
			case Q6_K:
				h, l := w/128, w%128
				ql, qh := blk[64*h:64*h+64], blk[128+32*h:128+32*h+32]
				ll := l % 32
				var q int
				switch l / 32 {
				case 0:
					q = int(ql[ll]&15 | (qh[ll]&3)<<4)
				case 1:
					q = int(ql[ll+32]&15 | (qh[ll]>>2&3)<<4)
				case 2:
					q = int(ql[ll]>>4 | (qh[ll]>>4&3)<<4)
				case 3:
					q = int(ql[ll+32]>>4 | (qh[ll]>>6&3)<<4)
				}
				if got := int(int8(pl(0)[e])); got != q-32 {
					fail(r, k, "int8 code", got, q-32)
				}
				if got, want := pl(1)[e/16], blk[192+w/16]; got != want {
					fail(r, k, "int8 scale", got, want)
				}
				if !bytes.Equal(pl(2)[2*b:2*b+2], blk[208:210]) {
					fail(r, k, "f16 d", pl(2)[2*b:2*b+2], blk[208:210])
				}
			default: // F16, BF16, F32
				if got := pl(0)[e*bb : e*bb+bb]; !bytes.Equal(got, blk) {
					fail(r, k, "value", got, blk)
				}
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, typ := range Supported() {
		t.Run(typ.String(), func(t *testing.T) {
			for _, g := range shapes(typ) {
				if err := g.Check(); err != nil {
					t.Fatalf("%+v: %v", g, err)
				}
				checkRoundTrip(t, g, randomSource(rng, g.SourceBytes()))
			}
		})
	}
}

// TestPackFuncPieces checks that PackFunc hands out dst in order, whole,
// and only bytes that are final: each piece, kept as it was when handed
// out, matches the blob at the end, and the blob is Pack's.
func TestPackFuncPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for _, typ := range Supported() {
		for _, g := range append(shapes(typ), Geometry{typ, 70, 16 * typ.BlockSize(), 8, 4 * typ.BlockSize()}) {
			src := randomSource(rng, g.SourceBytes())
			want := make([]byte, g.Size())
			if err := Pack(g, src, want); err != nil {
				t.Fatalf("%+v: Pack: %v", g, err)
			}
			dst := bytes.Repeat([]byte{0xa5}, g.Size()) // stale bytes
			var got []byte
			err := PackFunc(g, src, dst, func(piece []byte) {
				if len(piece) == 0 {
					t.Errorf("%+v: an empty piece", g)
				}
				if &piece[0] != &dst[len(got)] {
					t.Fatalf("%+v: a piece at %p, want dst[%d]", g, &piece[0], len(got))
				}
				got = append(got, piece...)
			})
			if err != nil {
				t.Fatalf("%+v: PackFunc: %v", g, err)
			}
			if !bytes.Equal(dst, want) || !bytes.Equal(got, want) {
				t.Fatalf("%+v: PackFunc's blob (%v) or pieces (%d bytes, %v) differ from Pack's", g, bytes.Equal(dst, want), len(got), bytes.Equal(got, want))
			}
		}
	}
}

// TestPackGroups packs blobs a run of column groups at a time, every run
// of every shape (groups of unequal rows and empty groups among them),
// into stale buffers: each run gives Pack's bytes of its groups, its
// pieces cover the run in order, and a run outside the groups or a buffer
// of the wrong length is refused.
func TestPackGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 10))
	for _, typ := range Supported() {
		bs := typ.BlockSize()
		for _, g := range append(shapes(typ), Geometry{typ, 70, 16 * bs, 8, 4 * bs}, Geometry{typ, 5, 4 * bs, 8, 2 * bs}) {
			src := randomSource(rng, g.SourceBytes())
			want := make([]byte, g.Size())
			if err := Pack(g, src, want); err != nil {
				t.Fatalf("%+v: Pack: %v", g, err)
			}
			rowBytes := g.Type.RowBytes(g.K)
			for c0 := 0; c0 < g.Columns; c0++ {
				for c1 := c0 + 1; c1 <= g.Columns; c1++ {
					first, _ := g.GroupRows(c0)
					lf, ln := g.GroupRows(c1 - 1)
					lo, hi := g.GroupOffset(c0), g.GroupOffset(c1)
					dst := bytes.Repeat([]byte{0x5a}, hi-lo)
					n := 0
					err := PackGroups(g, c0, c1, src[first*rowBytes:(lf+ln)*rowBytes], dst, func(piece []byte) {
						if &piece[0] != &dst[n] {
							t.Fatalf("%+v groups %d..%d: a piece at %p, want dst[%d]", g, c0, c1-1, &piece[0], n)
						}
						n += len(piece)
					})
					if err != nil {
						t.Fatalf("%+v groups %d..%d: %v", g, c0, c1-1, err)
					}
					if !bytes.Equal(dst, want[lo:hi]) || n != len(dst) {
						t.Fatalf("%+v groups %d..%d: bytes differ from Pack's (%v) or pieces cover %d of %d", g, c0, c1-1, bytes.Equal(dst, want[lo:hi]), n, len(dst))
					}
				}
			}
			for _, r := range [][2]int{{-1, 1}, {0, g.Columns + 1}, {1, 1}, {2, 1}} {
				if err := PackGroups(g, r[0], r[1], src, want, nil); !errors.Is(err, ErrShape) {
					t.Errorf("%+v groups %d..%d: %v, want ErrShape", g, r[0], r[1]-1, err)
				}
			}
			if _, n0 := g.GroupRows(0); n0 == g.N {
				continue // group 0 is the whole blob
			}
			if err := PackGroups(g, 0, 1, src, want, nil); !errors.Is(err, ErrShape) {
				t.Errorf("%+v group 0 with the whole source: %v, want ErrShape", g, err)
			}
		}
	}
}

// TestRoundTripSpecial packs blocks made of special values: all zero, all
// ones, f16 NaNs with payloads, Inf, subnormal scales.
func TestRoundTripSpecial(t *testing.T) {
	for _, typ := range Supported() {
		g := Geometry{typ, 5, 2 * typ.BlockSize() * 8, 4, typ.BlockSize() * 8}
		for _, fill := range []byte{0x00, 0xff, 0x7c, 0xfe, 0x01, 0x80} {
			src := bytes.Repeat([]byte{fill}, g.SourceBytes())
			checkRoundTrip(t, g, src)
		}
		src := make([]byte, g.SourceBytes())
		for i := 0; i+1 < len(src); i += 2 {
			binary.LittleEndian.PutUint16(src[i:], []uint16{0x7c01, 0xfd55, 0x7c00, 0x0001, 0x8000}[i/2%5])
		}
		checkRoundTrip(t, g, src)
	}
}

// TestPlaneBytes pins a few bytes of each layout to values worked out by hand
// from docs/FORMAT.md.
func TestPlaneBytes(t *testing.T) {
	one := func(typ Type, src []byte) []byte {
		g := Geometry{typ, 1, typ.BlockSize(), 1, typ.BlockSize()}
		blob := make([]byte, g.Size())
		must(t, Pack(g, src, blob))
		return blob
	}
	// Q4_0: qs[j] = j | (15-j)<<4: elements 0..15 = 0..15, 16..31 = 15..0.
	src := make([]byte, 18)
	src[0], src[1] = 0x34, 0x12
	for j := 0; j < 16; j++ {
		src[2+j] = byte(j) | byte(15-j)<<4
	}
	blob := one(Q4_0, src)
	wantCodes := []byte{0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, 0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01}
	if !bytes.Equal(blob[:16], wantCodes) || blob[64] != 0x34 || blob[65] != 0x12 {
		t.Errorf("Q4_0 blob: codes % x, scale % x", blob[:16], blob[64:66])
	}
	// Q5_K high plane: qh[l] = 1<<(l%8) puts the 5th bit on element 32k+l for k = l%8.
	src = make([]byte, 176)
	for l := 0; l < 32; l++ {
		src[16+l] = 1 << (l % 8)
	}
	blob = one(Q5_K, src)
	high := blob[128:160]
	for e := 0; e < 256; e++ {
		want := e/32 == e%32%8
		if got := high[e/8]>>(e%8)&1 == 1; got != want {
			t.Fatalf("Q5_K high bit of element %d = %v", e, got)
		}
	}
	// Q6_K: ql = 0, qh = 0xff: every code is 48-32 = 16.
	src = make([]byte, 210)
	for i := 128; i < 192; i++ {
		src[i] = 0xff
	}
	blob = one(Q6_K, src)
	if !bytes.Equal(blob[:256], bytes.Repeat([]byte{16}, 256)) {
		t.Errorf("Q6_K codes % x", blob[:32])
	}
}

func TestTranspose8(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1000; i++ {
		x := rng.Uint64()
		var want uint64
		for b := 0; b < 8; b++ {
			for k := 0; k < 8; k++ {
				want |= (x >> (8*b + k) & 1) << (8*k + b)
			}
		}
		if got := transpose8(x); got != want {
			t.Fatalf("transpose8(%#x) = %#x, want %#x", x, got, want)
		}
	}
}

func TestUnpackRejectsUnencodable(t *testing.T) {
	for _, c := range []struct {
		typ   Type
		plane int
		at    int
		val   byte
		msg   string
	}{
		{Q4_K, 1, 16 + 3, 64, "scale 3 is 64"},
		{Q4_K, 1, 16 + 9, 0x80, "min 1 is 128"},
		{Q5_K, 2, 16 + 5, 0xff, "scale 5 is 255"},
		{Q6_K, 0, 256 + 7, 32, "code 7 is 32"},
		{Q6_K, 0, 256 + 9, 0xdf, "code 9 is -33"},
	} {
		g := Geometry{c.typ, 6, 1024, 4, 512}
		src := randomSource(rand.New(rand.NewPCG(5, 6)), g.SourceBytes())
		blob := make([]byte, g.Size())
		must(t, Pack(g, src, blob))
		// row 4 is row 0 of group 2; tile 1; its second block.
		off, _ := g.PlaneOffset(2, 1, c.plane)
		blob[off+c.at] = c.val
		err := Unpack(g, blob, make([]byte, g.SourceBytes()))
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "row 4, K-tile 1: block 1") || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: Unpack = %v, want ErrFormat naming row 4, K-tile 1, block 1 and %q", c.typ, err, c.msg)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, typ := range []Type{Q4_1, Q8_1, Q2_K, IQ2_XXS, Type(77)} {
		g := Geometry{typ, 4, 256, 4, 256}
		err := Pack(g, nil, nil)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), typ.String()) {
			t.Errorf("Pack(%s) = %v, want ErrUnsupported naming the type", typ, err)
		}
		if err := Unpack(g, nil, nil); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Unpack(%s) = %v, want ErrUnsupported", typ, err)
		}
	}
	for _, g := range []Geometry{
		{Q4_0, 0, 32, 4, 32}, {Q4_0, 4, 48, 4, 48}, {Q4_0, 4, 64, 4, 48}, {Q4_0, 4, 64, 0, 32}, {Q4_K, 4, 512, 4, 128},
	} {
		if err := Pack(g, nil, nil); !errors.Is(err, ErrShape) {
			t.Errorf("Pack(%+v) = %v, want ErrShape", g, err)
		}
	}
	g := Geometry{Q8_0, 4, 64, 4, 32}
	if err := Pack(g, make([]byte, g.SourceBytes()-1), make([]byte, g.Size())); !errors.Is(err, ErrShape) {
		t.Errorf("short source: %v", err)
	}
	if err := Pack(g, make([]byte, g.SourceBytes()), make([]byte, g.Size()+1)); !errors.Is(err, ErrShape) {
		t.Errorf("long blob: %v", err)
	}
	if err := Unpack(g, make([]byte, g.Size()-1), make([]byte, g.SourceBytes())); !errors.Is(err, ErrShape) {
		t.Errorf("short blob: %v", err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "row 4 out of range") {
			t.Errorf("DequantRow(row 4 of 4) panicked with %v", r)
		}
	}()
	DequantRow(g, make([]byte, g.Size()), 4, make([]float32, 64))
}

func TestNoAllocs(t *testing.T) {
	g := Geometry{Q4_K, 33, 1024, 8, 256}
	src := randomSource(rand.New(rand.NewPCG(1, 1)), g.SourceBytes())
	blob, back := make([]byte, g.Size()), make([]byte, g.SourceBytes())
	row := make([]float32, g.K)
	if n := testing.AllocsPerRun(5, func() {
		_ = Pack(g, src, blob)
		_ = Unpack(g, blob, back)
		DequantRow(g, blob, 17, row)
	}); n != 0 {
		t.Errorf("Pack+Unpack+DequantRow: %v allocations", n)
	}
}

// FuzzRoundTrip packs arbitrary bytes as GGUF blocks of every format and
// checks Unpack(Pack(x)) == x bytewise (f16 NaN payloads included) and
// DequantRow(Pack(x)) == DequantGGUF(x) bitwise.
func FuzzRoundTrip(f *testing.F) {
	for i := range Supported() {
		f.Add(byte(i), byte(3), byte(5), byte(4), []byte{0x01, 0x7c, 0x55, 0xfd, 0xff, 0x3c})
	}
	f.Add(byte(3), byte(7), byte(19), byte(8), bytes.Repeat([]byte{0x7e, 0x00, 0xc0}, 100))
	f.Fuzz(func(t *testing.T, typ, cols, rows, tiles byte, data []byte) {
		ts := Supported()
		tp := ts[int(typ)%len(ts)]
		bs := tp.BlockSize()
		if bs == 1 {
			bs = 4
		}
		ntile, nblk := 1+int(tiles)%3, 1+int(tiles/3)%3
		g := Geometry{tp, 1 + int(rows)%20, ntile * nblk * bs, 1 + int(cols)%9, nblk * bs}
		src := make([]byte, g.SourceBytes())
		if len(data) > 0 {
			for i := range src {
				src[i] = data[i%len(data)] ^ byte(i/len(data)*31)
			}
		}
		checkRoundTrip(t, g, src)
	})
}

// benchGeometry is a matrix of about 16 MB of source data.
func benchGeometry(typ Type) Geometry {
	k := 4096
	n := (16 << 20) / typ.RowBytes(k)
	return Geometry{typ, n, k, 8, 256}
}

func BenchmarkPack(b *testing.B) { benchPack(b, Pack) }

func benchPack(b *testing.B, pack func(g Geometry, src, dst []byte) error) {
	for _, typ := range Supported() {
		b.Run(typ.String(), func(b *testing.B) {
			g := benchGeometry(typ)
			src := randomSource(rand.New(rand.NewPCG(1, 2)), g.SourceBytes())
			dst := make([]byte, g.Size())
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if err := pack(g, src, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUnpack(b *testing.B) {
	for _, typ := range Supported() {
		b.Run(typ.String(), func(b *testing.B) {
			g := benchGeometry(typ)
			src := randomSource(rand.New(rand.NewPCG(1, 2)), g.SourceBytes())
			blob := make([]byte, g.Size())
			if err := Pack(g, src, blob); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Unpack(g, blob, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDequantRow(b *testing.B) {
	for _, typ := range Supported() {
		b.Run(typ.String(), func(b *testing.B) {
			g := benchGeometry(typ)
			g.N = 64
			src := randomSource(rand.New(rand.NewPCG(1, 2)), g.SourceBytes())
			blob := make([]byte, g.Size())
			if err := Pack(g, src, blob); err != nil {
				b.Fatal(err)
			}
			row := make([]float32, g.K)
			b.SetBytes(int64(g.Type.RowBytes(g.K)))
			b.ReportAllocs()
			for b.Loop() {
				DequantRow(g, blob, 37, row)
			}
		})
	}
}

// TestWorkedExample keeps the worked examples of docs/FORMAT.md true.
func TestWorkedExample(t *testing.T) {
	g := Geometry{Q4_0, 10, 64, 4, 32}
	var offs []int
	for c := 0; c < 4; c++ {
		offs = append(offs, g.GroupOffset(c))
	}
	off, per := g.PlaneOffset(2, 1, 1)
	if g.RowsPerGroup() != 3 || g.TileBytes(3) != 128 || g.TileBytes(1) != 128 || fmt.Sprint(offs) != "[0 256 512 768]" ||
		g.Size() != 1024 || off != 704 || per != 2 {
		t.Errorf("Q4_0 example: R %d, tiles %d %d, groups %v, size %d, plane (2,1,1) at %d per row %d",
			g.RowsPerGroup(), g.TileBytes(3), g.TileBytes(1), offs, g.Size(), off, per)
	}
	src := make([]byte, g.SourceBytes())
	src[7*36+18], src[7*36+19] = 0xcd, 0xab // row 7, block 1: d
	blob := make([]byte, g.Size())
	must(t, Pack(g, src, blob))
	if blob[706] != 0xcd || blob[707] != 0xab {
		t.Errorf("row 7's second scale is not at bytes 706-707")
	}
	g = Geometry{Q4_K, 4096, 4096, 8, 256}
	if g.RowsPerGroup() != 512 || g.TileBytes(512) != 75776 || g.GroupOffset(1) != 1212416 || g.Size() != 9699328 || g.SourceBytes() != 9437184 {
		t.Errorf("Q4_K example: R %d, tile %d, group %d, size %d, source %d",
			g.RowsPerGroup(), g.TileBytes(512), g.GroupOffset(1), g.Size(), g.SourceBytes())
	}
}

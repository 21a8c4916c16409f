package planar

import "fmt"

// DequantRow decodes row row (0 <= row < N) of the planar blob into dst
// (len K). It is the reference every CPU and NPU kernel is tested against;
// DequantRow(Pack(x)) equals DequantGGUF(x) bit for bit. In float32:
//
//	Q4_0: (q-8)*d          Q5_0: (q-16)*d        Q8_0: q*d
//	Q4_K, Q5_K: (d*sc)*q - dmin*m
//	Q6_K: (d*sc)*q         F16, BF16, F32: the value widened to float32
//
// Every product here is exact in float32 (an f16 significand has 11
// significant bits, sc at most 7, a K-quant q at most 5 and a Q8_0 q 7), so
// the order of the multiplications and the use of fused multiply-add do not
// matter; the only rounding is the subtraction of Q4_K and Q5_K, to nearest
// even. docs/FORMAT.md specifies every plane.
//
// It panics if g is invalid, blob is not g.Size() bytes, row is out of
// range or dst is not K floats.
func DequantRow(g Geometry, blob []byte, row int, dst []float32) {
	mustBlob(g, blob)
	if row < 0 || row >= g.N {
		panic(fmt.Sprintf("planar: row %d out of range [0, %d)", row, g.N))
	}
	if len(dst) != g.K {
		panic(fmt.Sprintf("planar: destination of %d floats for K=%d", len(dst), g.K))
	}
	c := row / g.RowsPerGroup()
	l := g.groupLayout(c)
	cd := codecOf(g.Type)
	var p rowPlanes
	for t := 0; t < g.Tiles(); t++ {
		l.row(blob, t, row-l.first, &p)
		cd.dequant(p, dst[t*g.KTile:(t+1)*g.KTile])
	}
}

// DequantTile decodes K-tile t of column group c into dst, laid out
// [rows of the group][T] (len n*T for n, the group's row count from
// GroupRows), with the arithmetic of DequantRow. It is what one NPU column
// computes from one tile's DMA transfer.
//
// It panics if g is invalid, blob is not g.Size() bytes, c or t is out of
// range or dst has the wrong length.
func DequantTile(g Geometry, blob []byte, c, t int, dst []float32) {
	mustBlob(g, blob)
	if c < 0 || c >= g.Columns || t < 0 || t >= g.Tiles() {
		panic(fmt.Sprintf("planar: tile (%d, %d) out of range (%d groups, %d tiles)", c, t, g.Columns, g.Tiles()))
	}
	l := g.groupLayout(c)
	if len(dst) != l.rows*g.KTile {
		panic(fmt.Sprintf("planar: destination of %d floats for %d rows of %d", len(dst), l.rows, g.KTile))
	}
	cd := codecOf(g.Type)
	var p rowPlanes
	for i := 0; i < l.rows; i++ {
		l.row(blob, t, i, &p)
		cd.dequant(p, dst[i*g.KTile:(i+1)*g.KTile])
	}
}

func mustBlob(g Geometry, blob []byte) {
	if err := g.Check(); err != nil {
		panic("planar: " + err.Error())
	}
	if len(blob) != g.Size() {
		panic(fmt.Sprintf("planar: blob of %d bytes for %s [%d][%d], want %d", len(blob), g.Type, g.N, g.K, g.Size()))
	}
}

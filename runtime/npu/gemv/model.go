package gemv

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/xdna-go/xdna/planar"
)

// The kernel functions a core's program calls (kernels/common/entry.inc).
const (
	// FnInit sets the core's rounding and saturation modes; the program
	// calls it once, before anything else.
	FnInit = "xdna_gemv_init"
	// FnAcc(w, rec, acc, t, first): acc[t*Rows+r] = part(r) on the first
	// K-tile, else acc[t*Rows+r] + part(r), for every row r of piece w, where
	// part is row r's dot product with record rec over the tile.
	FnAcc = "xdna_gemv_acc"
	// FnOut(w, rec, acc, out, t, first): out[r] = part(r) on the first
	// K-tile, else acc[t*Rows+r] + part(r): the last K-tile of a dispatch.
	FnOut = "xdna_gemv_out"
)

// Value is an argument of a kernel function: a buffer (the bytes of the
// core's memory it occupies) or, with Buf nil, an i32.
type Value struct {
	Buf []byte
	Int int32
}

// Kernel runs the kernel functions of one slot for the cores of a design:
// the Go model (Model) or the AIE kernel source compiled for the host
// (package sim).
type Kernel interface {
	// Call runs function name for core (col, row) on args.
	Call(col, row int, name string, args []Value) error
}

// Model is the Go model of the GEMV kernel of one slot: pieces of Rows
// rows of one K-tile of T inputs of weights of Type.
//
// The arithmetic, per row, tile and token:
//
//	Q4_0  per block of 32: isum = sum(q_w*q_x) - 8*sum(q_x)       4-bit x int8 -> int32, exact
//	      part += float32(isum) * (d_w*d_x)                       f16 d_w, f16 d_x widened; products and sum in f32
//	Q5_0  isum = sum(lo_w*q_x) + 16*sum(q_x where bit 5) - 16*sum(q_x)
//	      part += float32(isum) * (d_w*d_x)                       as Q4_0
//	Q8_0  isum = sum(q_w*q_x)                                     int8 x int8 -> int32
//	      part += float32(isum) * (d_w*d_x)
//	Q4_K  per super-block of 256: sumi = sum_j sc_j*sum_32(q_w*q_x)      u6 scales, int32 exact
//	(Q5_K with the 5th bits)     summ = sum_j m_j*(bsum_2j+bsum_2j+1)   u6 mins x Q8_K bsums, int32
//	      part += float32((d*d_x)*float32(sumi)) - float32((dmin*d_x)*float32(summ))   f16 d, dmin; f32 d_x
//	Q6_K  sumi = sum_16 sc_g*sum_16(q_w*q_x)                      int8 codes (q-32), int8 scales, int32
//	      part += float32(sumi) * (d*d_x)
//	then  y = part (first tile), else y = acc + part                f32
//
// Blocks are summed in order within a tile from zero, and tiles in order
// into y: the order of package cpu's kernels, so for the same activations
// the output equals cpu.MatMat's bit for bit.
type Model struct {
	Piece  Piece
	Record Record

	mu   sync.Mutex
	init map[[2]int]bool // cores that called FnInit
}

// NewModel returns the Go model of the kernel for pieces of rows rows of
// K-tile t of weights of type typ.
func NewModel(typ planar.Type, t, rows int) (*Model, error) {
	p, err := PieceOf(typ, t, rows)
	if err != nil {
		return nil, err
	}
	return &Model{Piece: p, Record: RecordOf(typ, t), init: map[[2]int]bool{}}, nil
}

// Call runs one kernel function. Beyond what the hardware would do it
// checks every buffer's size, that t is a token of the accumulators, and
// that the core called FnInit first (its modes are undefined before).
func (m *Model) Call(col, row int, name string, args []Value) error {
	core := [2]int{col, row}
	if name == FnInit {
		if len(args) != 0 {
			return fmt.Errorf("gemv: %s takes no arguments, got %d", name, len(args))
		}
		m.mu.Lock()
		m.init[core] = true
		m.mu.Unlock()
		return nil
	}
	m.mu.Lock()
	ok := m.init[core]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("gemv: core (%d,%d) called %s before %s set its rounding and saturation modes", col, row, name, FnInit)
	}
	R := m.Piece.Rows
	c, err := m.Piece.Args(m.Record, name, args)
	if err != nil {
		return fmt.Errorf("gemv: %w", err)
	}
	w, rec, acc, out, t, first := c.W, c.Rec, c.Acc, c.Out, c.T, c.First
	in := acc[4*R*int(t) : 4*R*(int(t)+1)]
	dst := in
	if name == FnOut {
		dst = out
	}
	var pl [4][]byte
	var buf [4][2048]byte // one row of each plane: at most a K-tile of 256 int8 codes
	for r := 0; r < R; r++ {
		m.Piece.row(w, r, &pl, &buf)
		v := dot(m.Piece.Type, &m.Record, &pl, rec, m.Piece.T)
		if first == 0 {
			v = f32(in[4*r:]) + v
		}
		binary.LittleEndian.PutUint32(dst[4*r:], math.Float32bits(v))
	}
	return nil
}

// Call is the decoded arguments of FnAcc or FnOut (Out nil for FnAcc).
type Call struct {
	W, Rec, Acc, Out []byte
	T, First         int32
}

// Args decodes the arguments of FnAcc or FnOut for pieces of layout p and
// records of layout rec, checking their count, every buffer's size and
// that T is a token of the accumulators: what a kernel must know before
// it touches the buffers (a wrong size would read or write past them).
func (p *Piece) Args(rec Record, name string, args []Value) (Call, error) {
	R := p.Rows
	var c Call
	switch name {
	case FnAcc:
		if len(args) != 5 {
			return c, fmt.Errorf("%s takes 5 arguments, got %d", name, len(args))
		}
		c = Call{W: args[0].Buf, Rec: args[1].Buf, Acc: args[2].Buf, T: args[3].Int, First: args[4].Int}
	case FnOut:
		if len(args) != 6 {
			return c, fmt.Errorf("%s takes 6 arguments, got %d", name, len(args))
		}
		c = Call{W: args[0].Buf, Rec: args[1].Buf, Acc: args[2].Buf, Out: args[3].Buf, T: args[4].Int, First: args[5].Int}
		if len(c.Out) != 4*R {
			return c, fmt.Errorf("%s: output buffer of %d bytes, want %d", name, len(c.Out), 4*R)
		}
	default:
		return c, fmt.Errorf("no kernel function %q", name)
	}
	switch {
	case len(c.W) != p.Bytes:
		return c, fmt.Errorf("%s: weight buffer of %d bytes, a piece is %d", name, len(c.W), p.Bytes)
	case len(c.Rec) != rec.Stride:
		return c, fmt.Errorf("%s: record buffer of %d bytes, a record is %d", name, len(c.Rec), rec.Stride)
	case len(c.Acc)%(4*R) != 0 || c.T < 0 || int(c.T) >= len(c.Acc)/(4*R):
		return c, fmt.Errorf("%s: token %d of accumulators of %d bytes (%d rows a token)", name, c.T, len(c.Acc), R)
	}
	return c, nil
}

// row gathers row r of every plane of piece w into buf and points pl at it.
func (p *Piece) row(w []byte, r int, pl *[4][]byte, buf *[4][2048]byte) {
	for i, l := range p.Planes {
		d := buf[i][:l.PerRow]
		if !l.Words {
			copy(d, w[l.Off+r*l.PerRow:])
		} else {
			for j := 0; j < l.PerRow/4; j++ {
				o := l.Off + 4*(j*p.Rows+r)
				copy(d[4*j:4*j+4], w[o:o+4])
			}
		}
		pl[i] = d
	}
}

// dot is one row's tile (planes pl) against one token's record a of t
// inputs.
func dot(typ planar.Type, al *Record, pl *[4][]byte, a []byte, t int) float32 {
	x := a[:t] // int8 codes
	switch typ {
	case planar.Q4_0, planar.Q5_0, planar.Q8_0:
		xd := a[al.Scales : al.Scales+2*(t/32)]
		switch typ {
		case planar.Q4_0:
			return dotQ4_0(pl[0], pl[1], x, xd)
		case planar.Q5_0:
			return dotQ5_0(pl[0], pl[1], pl[2], x, xd)
		}
		return dotQ8_0(pl[0], pl[1], x, xd)
	}
	xd := a[al.Scales : al.Scales+4*(t/256)]
	bs := a[al.Sums : al.Sums+2*(t/16)]
	switch typ {
	case planar.Q4_K:
		return dotK(pl[0], nil, pl[1], pl[2], x, xd, bs)
	case planar.Q5_K:
		return dotK(pl[0], pl[1], pl[2], pl[3], x, xd, bs)
	}
	return dotQ6_K(pl[0], pl[1], pl[2], x, xd)
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
func f16(b []byte) float32 { return planar.F16ToF32(le16(b)) }
func f32(b []byte) float32 { return math.Float32frombits(le32(b)) }

// nib32 returns sum over j < 32 of code_j*x_j, code 2i in the low nibble of
// c[i] and 2i+1 in the high one, and sum of x_j.
func nib32(c, x []byte) (dot, sum int32) {
	c, x = c[:16], x[:32]
	for i, v := range c {
		a0, a1 := int32(int8(x[2*i])), int32(int8(x[2*i+1]))
		dot += int32(v&15)*a0 + int32(v>>4)*a1
		sum += a0 + a1
	}
	return dot, sum
}

// hi32 returns the sum of x_j over the j < 32 whose bit j of h is set.
func hi32(h uint32, x []byte) int32 {
	var s int32
	for j := 0; j < 32; j++ {
		if h>>j&1 != 0 {
			s += int32(int8(x[j]))
		}
	}
	return s
}

func i8dot(c, x []byte) int32 {
	x = x[:len(c)]
	var s int32
	for i, v := range c {
		s += int32(int8(v)) * int32(int8(x[i]))
	}
	return s
}

func dotQ4_0(codes, scales, x, xd []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/2; i++ {
		v, s := nib32(codes[16*i:], x[32*i:])
		v -= 8 * s
		acc += float32(v) * (f16(scales[2*i:]) * f16(xd[2*i:]))
	}
	return acc
}

func dotQ5_0(codes, high, scales, x, xd []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/2; i++ {
		xb := x[32*i : 32*i+32]
		v, s := nib32(codes[16*i:], xb)
		v += 16*hi32(le32(high[4*i:]), xb) - 16*s
		acc += float32(v) * (f16(scales[2*i:]) * f16(xd[2*i:]))
	}
	return acc
}

func dotQ8_0(codes, scales, x, xd []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/2; i++ {
		v := i8dot(codes[32*i:32*i+32], x[32*i:])
		acc += float32(v) * (f16(scales[2*i:]) * f16(xd[2*i:]))
	}
	return acc
}

// dotK is Q4_K (high == nil) or Q5_K: per super-block, codes 128 bytes,
// high 32, scalemins 16 (8 scales then 8 mins), dmin 4 (f16 d, f16 dmin).
func dotK(codes, high, sm, dm, x, xd, bs []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/4; i++ {
		c := codes[128*i:]
		a := x[256*i:]
		sc := sm[16*i : 16*i+16]
		var sumi, summ int32
		for j := 0; j < 8; j++ {
			aj := a[32*j : 32*j+32]
			v, _ := nib32(c[16*j:], aj)
			if high != nil {
				v += 16 * hi32(le32(high[32*i+4*j:]), aj)
			}
			sumi += int32(sc[j]) * v
			b0 := int32(int16(le16(bs[2*(16*i+2*j):])))
			b1 := int32(int16(le16(bs[2*(16*i+2*j+1):])))
			summ += int32(sc[8+j]) * (b0 + b1)
		}
		dx := f32(xd[4*i:])
		dd := f16(dm[4*i:]) * dx
		dmin := f16(dm[4*i+2:]) * dx
		acc += float32(dd*float32(sumi)) - float32(dmin*float32(summ))
	}
	return acc
}

func dotQ6_K(codes, scales, dp, x, xd []byte) float32 {
	var acc float32
	for i := 0; i < len(xd)/4; i++ {
		c := codes[256*i:]
		a := x[256*i:]
		var sumi int32
		for g := 0; g < 16; g++ {
			sumi += int32(int8(scales[16*i+g])) * i8dot(c[16*g:16*g+16], a[16*g:])
		}
		acc += float32(sumi) * (f16(dp[2*i:]) * f32(xd[4*i:]))
	}
	return acc
}

// Floats views b (a multiple of 4 bytes, 4-aligned) as f32s, as a core's
// program sees a buffer of f32.
func Floats(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// Factory makes the kernel of one slot: pieces of rows rows of K-tile t of
// weights of type typ. GoModel is the Go model's; package sim has the
// compiled kernel sources'.
type Factory func(typ planar.Type, t, rows int) (Kernel, error)

// GoModel is the Factory of the Go model.
func GoModel(typ planar.Type, t, rows int) (Kernel, error) { return NewModel(typ, t, rows) }

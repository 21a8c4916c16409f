// Package planar holds the exact weight transforms between GGUF blocks and the
// DMA-ordered planar blobs of an .xdna file, and the scalar reference
// dequantisers that are the specification every kernel is tested against.
//
// A weight W[N][K] (N output rows, K inputs, GGUF ne = [K, N]) is split into
// C column groups of R = ceil(N/C) consecutive rows (the last groups may be
// short or empty). Each group is one contiguous run that one NPU column
// streams. Inside a group the data is ordered by K-tile (T inputs, a multiple
// of the block size that divides K), and inside a tile by plane: each plane
// holds, for every row of the group in order, that row's bytes for this tile.
// Every plane starts on a 64-byte boundary (zero padding between planes).
// docs/FORMAT.md gives the byte layout of every plane of every format.
package planar

import (
	"errors"
	"fmt"
)

// ErrUnsupported reports a tensor type that has no planar format yet.
var ErrUnsupported = errors.New("unsupported tensor type")

// ErrShape reports a shape that the planar layout cannot hold.
var ErrShape = errors.New("bad shape")

// Align is the alignment of every plane inside a blob, in bytes.
const Align = 64

// Type is a ggml tensor type id, as stored in GGUF tensor infos.
// See ggml.h enum ggml_type (ggml-org/ggml @ 5c8a9b3, include/ggml.h).
type Type uint32

// The ggml type ids.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
)

type typeInfo struct {
	name       string
	blockSize  int // elements per block
	blockBytes int // bytes per block
}

// types lists every ggml type whose block geometry we know, so that a GGUF
// holding one we cannot pack is still validated (and refused by name).
var types = map[Type]typeInfo{
	F32: {"F32", 1, 4}, F16: {"F16", 1, 2}, BF16: {"BF16", 1, 2}, F64: {"F64", 1, 8},
	I8: {"I8", 1, 1}, I16: {"I16", 1, 2}, I32: {"I32", 1, 4}, I64: {"I64", 1, 8},
	Q4_0: {"Q4_0", 32, 18}, Q4_1: {"Q4_1", 32, 20}, Q5_0: {"Q5_0", 32, 22}, Q5_1: {"Q5_1", 32, 24},
	Q8_0: {"Q8_0", 32, 34}, Q8_1: {"Q8_1", 32, 36},
	Q2_K: {"Q2_K", 256, 84}, Q3_K: {"Q3_K", 256, 110}, Q4_K: {"Q4_K", 256, 144},
	Q5_K: {"Q5_K", 256, 176}, Q6_K: {"Q6_K", 256, 210}, Q8_K: {"Q8_K", 256, 292},
	IQ2_XXS: {"IQ2_XXS", 256, 66}, IQ2_XS: {"IQ2_XS", 256, 74}, IQ3_XXS: {"IQ3_XXS", 256, 98},
	IQ1_S: {"IQ1_S", 256, 50}, IQ4_NL: {"IQ4_NL", 32, 18}, IQ3_S: {"IQ3_S", 256, 110},
	IQ2_S: {"IQ2_S", 256, 82}, IQ4_XS: {"IQ4_XS", 256, 136}, IQ1_M: {"IQ1_M", 256, 56},
	TQ1_0: {"TQ1_0", 256, 54}, TQ2_0: {"TQ2_0", 256, 66}, MXFP4: {"MXFP4", 32, 17},
}

// Known reports whether t is a ggml type whose block geometry is known.
func (t Type) Known() bool { _, ok := types[t]; return ok }

// String returns the ggml name of t, such as "Q4_0".
func (t Type) String() string {
	if ti, ok := types[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize returns the number of elements in one block of t (0 if unknown).
func (t Type) BlockSize() int { return types[t].blockSize }

// BlockBytes returns the size in bytes of one block of t (0 if unknown).
func (t Type) BlockBytes() int { return types[t].blockBytes }

// RowBytes returns the GGUF size in bytes of k elements of t; k must be a
// multiple of the block size.
func (t Type) RowBytes(k int) int { return k / t.BlockSize() * t.BlockBytes() }

// ParseType returns the type named s (case-insensitive ggml name).
func ParseType(s string) (Type, error) {
	for t, ti := range types {
		if equalFold(ti.name, s) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown tensor type %q", s)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 32
		}
		if 'a' <= y && y <= 'z' {
			y -= 32
		}
		if x != y {
			return false
		}
	}
	return true
}

// Plane is one plane of a tile: for every row of the group, PerRow(T) bytes.
type Plane struct {
	Name string
	// PerRow returns the bytes one row contributes to this plane for a K-tile of t elements.
	PerRow func(t int) int
}

// Format describes the planar packing of one source type.
type Format struct {
	Name   string // packed format name recorded in the manifest, e.g. "q4_0.p1"
	Source Type
	Block  int // K granularity: the K-tile must be a multiple of this
	Planes []Plane
	// Act is the format the activations are quantised into for these
	// weights (as llama.cpp's CPU backend pairs them: vec_dot_type), the
	// one place every kernel, CPU or NPU, reads it from.
	Act Act
}

// Act is an activation format: what a token's inputs become before they
// meet the weights.
type Act uint8

// The activation formats.
const (
	ActF32  Act = iota // f32 values
	ActF16             // f16 values
	ActBF16            // bf16 values
	ActQ8_0            // int8 codes, f16 scale per 32 (block_q8_0)
	ActQ8_K            // int8 codes, f32 scale per 256, int16 sums per 16 (block_q8_K)
)

// ActOf returns the activation format for weights of type t (ActF32 for a
// type with no planar format).
func ActOf(t Type) Act {
	if f, ok := formats[t]; ok {
		return f.Act
	}
	return ActF32
}

func per(num, den int) func(int) int { return func(t int) int { return t * num / den } }

// formats lists every source type we pack. The plane lists are the layout
// contract; docs/FORMAT.md describes each byte.
var formats = map[Type]*Format{
	Q4_0: {Name: "q4_0.p1", Source: Q4_0, Block: 32, Act: ActQ8_0, Planes: []Plane{
		{"codes", per(1, 2)},   // 4-bit codes, element 2i low nibble, 2i+1 high; unsigned, w = (q-8)*d
		{"scales", per(2, 32)}, // f16 d per 32
	}},
	Q5_0: {Name: "q5_0.p1", Source: Q5_0, Block: 32, Act: ActQ8_0, Planes: []Plane{
		{"codes", per(1, 2)},   // low 4 bits, sequential as Q4_0
		{"high", per(1, 8)},    // 5th bit, element i at byte i/8 bit i%8
		{"scales", per(2, 32)}, // f16 d per 32; w = (q-16)*d
	}},
	Q8_0: {Name: "q8_0.p1", Source: Q8_0, Block: 32, Act: ActQ8_0, Planes: []Plane{
		{"codes", per(1, 1)},   // int8
		{"scales", per(2, 32)}, // f16 d per 32
	}},
	Q4_K: {Name: "q4_k.p1", Source: Q4_K, Block: 256, Act: ActQ8_K, Planes: []Plane{
		{"codes", per(1, 2)},        // 4-bit codes, sequential
		{"scalemins", per(16, 256)}, // per 256: 8 sub-block scales (u6 as bytes) then 8 mins
		{"dmin", per(4, 256)},       // per 256: f16 d, f16 dmin
	}},
	Q5_K: {Name: "q5_k.p1", Source: Q5_K, Block: 256, Act: ActQ8_K, Planes: []Plane{
		{"codes", per(1, 2)},
		{"high", per(1, 8)},
		{"scalemins", per(16, 256)},
		{"dmin", per(4, 256)},
	}},
	Q6_K: {Name: "q6_k.p1", Source: Q6_K, Block: 256, Act: ActQ8_K, Planes: []Plane{
		{"codes", per(1, 1)},     // int8 q-32
		{"scales", per(16, 256)}, // int8 per 16
		{"d", per(2, 256)},       // f16 per 256
	}},
	F16:  {Name: "f16.p1", Source: F16, Block: 1, Act: ActF16, Planes: []Plane{{"values", per(2, 1)}}},
	BF16: {Name: "bf16.p1", Source: BF16, Block: 1, Act: ActBF16, Planes: []Plane{{"values", per(2, 1)}}},
	F32:  {Name: "f32.p1", Source: F32, Block: 1, Planes: []Plane{{"values", per(4, 1)}}},
}

// FormatOf returns the planar format for source type t, or ErrUnsupported.
func FormatOf(t Type) (*Format, error) {
	f, ok := formats[t]
	if !ok {
		return nil, fmt.Errorf("%w %s", ErrUnsupported, t)
	}
	return f, nil
}

// FormatByName returns the planar format with the given manifest name.
func FormatByName(name string) (*Format, error) {
	for _, f := range formats {
		if f.Name == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%w: packed format %q", ErrUnsupported, name)
}

// Supported lists the source types that have a planar format.
func Supported() []Type { return []Type{F32, F16, BF16, Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K} }

// Geometry is the shape of one packed matrix W[N][K].
type Geometry struct {
	Type    Type
	N, K    int // rows (outputs) and inputs
	Columns int // C column groups
	KTile   int // T, a multiple of the block size dividing K
}

// Check validates g against its format.
func (g Geometry) Check() error {
	f, err := FormatOf(g.Type)
	if err != nil {
		return err
	}
	switch {
	case g.N <= 0 || g.K <= 0:
		return fmt.Errorf("%w: N=%d K=%d", ErrShape, g.N, g.K)
	case g.Columns <= 0 || g.Columns > 64:
		return fmt.Errorf("%w: %d columns", ErrShape, g.Columns)
	case g.KTile <= 0 || g.KTile%f.Block != 0 || g.K%g.KTile != 0:
		return fmt.Errorf("%w: K-tile %d for K=%d and block %d", ErrShape, g.KTile, g.K, f.Block)
	case int64(g.N)*int64(g.K) > 1<<40:
		return fmt.Errorf("%w: N=%d K=%d too large", ErrShape, g.N, g.K)
	}
	return nil
}

// Format returns g's format; g must have passed Check.
func (g Geometry) Format() *Format { return formats[g.Type] }

// RowsPerGroup returns R = ceil(N/C).
func (g Geometry) RowsPerGroup() int { return (g.N + g.Columns - 1) / g.Columns }

// Tiles returns the number of K-tiles, K/T.
func (g Geometry) Tiles() int { return g.K / g.KTile }

// GroupRows returns the first row and the row count of column group c.
func (g Geometry) GroupRows(c int) (first, n int) {
	r := g.RowsPerGroup()
	first = min(c*r, g.N)
	return first, min(first+r, g.N) - first
}

func align(n int) int { return (n + Align - 1) &^ (Align - 1) }

// TileBytes returns the size of one tile of a group holding rows rows.
func (g Geometry) TileBytes(rows int) int {
	s := 0
	for _, p := range g.Format().Planes {
		s += align(rows * p.PerRow(g.KTile))
	}
	return s
}

// GroupOffset returns the byte offset of column group c in the blob.
func (g Geometry) GroupOffset(c int) int {
	off := 0
	for i := 0; i < c; i++ {
		_, n := g.GroupRows(i)
		off += g.Tiles() * g.TileBytes(n)
	}
	return off
}

// Size returns the blob size in bytes.
func (g Geometry) Size() int { return g.GroupOffset(g.Columns) }

// PlaneOffset returns the byte offset, in the blob, of plane p of tile t of
// group c, and the bytes each row holds in it. Row i of the group (0-based)
// starts at offset + i*perRow.
func (g Geometry) PlaneOffset(c, t, p int) (offset, perRow int) {
	_, n := g.GroupRows(c)
	off := g.GroupOffset(c) + t*g.TileBytes(n)
	for i := 0; i < p; i++ {
		off += align(n * g.Format().Planes[i].PerRow(g.KTile))
	}
	return off, g.Format().Planes[p].PerRow(g.KTile)
}

// SourceOffset returns the byte offset of column group c's rows in the
// matrix's GGUF data (SourceBytes for c = Columns): a run of groups is a
// run of the GGUF too.
func (g Geometry) SourceOffset(c int) int {
	first, _ := g.GroupRows(c)
	return first * g.Type.RowBytes(g.K)
}

// SourceBytes returns the GGUF size of the matrix, N rows of K elements.
func (g Geometry) SourceBytes() int { return g.N * g.Type.RowBytes(g.K) }

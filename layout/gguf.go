package layout

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/xdna-go/xdna/planar"
)

// ErrFormat reports a malformed input file.
var ErrFormat = errors.New("malformed file")

// FormatError is a malformed-input error that names the file, the byte offset
// and, where there is one, the tensor.
type FormatError struct {
	File   string
	Offset int64  // byte offset in File, -1 if none
	Tensor string // tensor name, "" if none
	Msg    string
}

func (e *FormatError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Tensor != "" {
		fmt.Fprintf(&b, ": tensor %q", e.Tensor)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " (offset %d)", e.Offset)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

func (e *FormatError) Unwrap() error { return ErrFormat }

// Tensor is one validated GGUF tensor.
type Tensor struct {
	Name   string
	Type   planar.Type
	Dims   []int // ggml ne order: Dims[0] is the contiguous (K) dimension
	Offset int64 // absolute byte offset of the data in the file
	Size   int64 // data size in bytes
}

// Elements returns the element count of t.
func (t *Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= int64(d)
	}
	return n
}

// Rows returns the number of rows (product of Dims[1:]) and the row length.
func (t *Tensor) Rows() (rows, k int) {
	rows = 1
	for _, d := range t.Dims[1:] {
		rows *= d
	}
	return rows, t.Dims[0]
}

// KV is one metadata key/value. Value is one of: uint64, int64, float64,
// bool, string, []string, []float32, []int32, []uint32 or []any for other
// arrays.
type KV struct {
	Key   string
	Value any
}

// GGUF is a parsed and validated GGUF file.
type GGUF struct {
	Path       string
	Size       int64
	Version    uint32
	Alignment  int64
	DataOffset int64 // absolute offset of the tensor data section
	KV         []KV
	Tensors    []Tensor // in file order
	kvIndex    map[string]int
	tIndex     map[string]int
}

// MaxDimension caps every tensor dimension read from a file.
const MaxDimension = 1 << 31

// OpenGGUF parses and validates the GGUF file at path. It is the only entry
// point to the third-party parser: the parser runs under recover, and every
// tensor is then checked here (known type, block-aligned row, aligned offset,
// inside the file, no overlap, no overflowing dimensions).
func OpenGGUF(path string) (*GGUF, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, &FormatError{File: path, Offset: -1, Msg: "is a directory"}
	}
	if st.Size() < 24 {
		return nil, &FormatError{File: path, Offset: 0, Msg: fmt.Sprintf("%d bytes is too short for a GGUF header", st.Size())}
	}
	if err := checkMagic(path); err != nil {
		return nil, err
	}
	// The exact strings and arrays (readGGUFExact) are read beside the
	// parse, on another core (10-30 ms for a vocabulary of 128 Ki tokens),
	// and the parse skips the arrays; a file with an array of arrays, which
	// readGGUFExact leaves out, is parsed again whole.
	type exact struct {
		e   ggufExact
		err error
	}
	strs := make(chan exact, 1)
	go func() {
		e, err := readGGUFExact(path)
		strs <- exact{e, err}
	}()
	gf, err := parseGuarded(path, true)
	s := <-strs
	if s.err == nil && s.e.nested {
		gf, err = parseGuarded(path, false) // the parser refuses to skip an array of arrays
	}
	if err != nil {
		if derr := diagnose(path, st.Size()); derr != nil {
			return nil, derr
		}
		return nil, &FormatError{File: path, Offset: -1, Msg: err.Error()}
	}
	return fromParsed(path, st.Size(), gf, s.e, s.err)
}

func checkMagic(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var m [4]byte
	if _, err := io.ReadFull(f, m[:]); err != nil {
		return &FormatError{File: path, Offset: 0, Msg: "reading magic: " + err.Error()}
	}
	if string(m[:]) != "GGUF" {
		return &FormatError{File: path, Offset: 0, Msg: fmt.Sprintf("not a GGUF file (magic %q)", m[:])}
	}
	return nil
}

// parseGuarded runs the parser on path, skipping the metadata arrays'
// elements if skipArrays.
func parseGuarded(path string, skipArrays bool) (gf *gguf.GGUFFile, err error) {
	defer func() {
		if r := recover(); r != nil {
			gf, err = nil, fmt.Errorf("parser: %v", r)
		}
	}()
	opts := []gguf.GGUFReadOption{gguf.UseMMap()}
	if skipArrays {
		opts = append(opts, gguf.SkipLargeMetadata())
	}
	// The parser completes shard names ("-00001-of-00002"); we read one file.
	return gguf.ParseGGUFFile(path, opts...)
}

// fromParsed validates the parser's gf and converts it, its strings and
// arrays replaced by the file's own (exact, from readGGUFExact, or the
// error that read returned); gf holds the arrays' elements only when exact
// says there is an array of arrays.
func fromParsed(path string, size int64, gf *gguf.GGUFFile, exact ggufExact, exactErr error) (*GGUF, error) {
	ferr := func(tensor string, off int64, format string, a ...any) error {
		return &FormatError{File: path, Offset: off, Tensor: tensor, Msg: fmt.Sprintf(format, a...)}
	}
	g := &GGUF{
		Path:       path,
		Size:       size,
		Version:    uint32(gf.Header.Version),
		Alignment:  32,
		DataOffset: gf.TensorDataStartOffset,
		kvIndex:    map[string]int{},
		tIndex:     map[string]int{},
	}
	if g.Version < 2 || g.Version > 3 {
		return nil, ferr("", 4, "unsupported GGUF version %d", g.Version)
	}
	if exactErr != nil && len(gf.Header.MetadataKV) > 0 {
		return nil, exactErr
	}
	for _, kv := range gf.Header.MetadataKV {
		var v any
		if kv.ValueType == gguf.GGUFMetadataValueTypeArray && !exact.nested {
			var ok bool
			if v, ok = exact.values[kv.Key]; !ok {
				return nil, ferr("", -1, "metadata %q not found on re-reading", kv.Key)
			}
		} else {
			var err error
			if v, err = convertValue(kv); err != nil {
				return nil, ferr("", -1, "metadata %q: %v", kv.Key, err)
			}
		}
		if _, dup := g.kvIndex[kv.Key]; dup {
			return nil, ferr("", -1, "metadata key %q appears twice", kv.Key)
		}
		g.kvIndex[kv.Key] = len(g.KV)
		g.KV = append(g.KV, KV{Key: kv.Key, Value: v})
	}
	// The parser trims whitespace off strings; take them from the file as written.
	var skeys []string
	for _, kv := range g.KV {
		switch kv.Value.(type) {
		case string, []string:
			skeys = append(skeys, kv.Key)
		}
	}
	if len(skeys) > 0 {
		for _, k := range skeys {
			v, ok := exact.values[k]
			if !ok {
				return nil, ferr("", -1, "metadata %q not found on re-reading", k)
			}
			g.KV[g.kvIndex[k]].Value = v
		}
	}
	if a, ok := g.Uint("general.alignment"); ok {
		if a == 0 || a%8 != 0 || a > 1<<20 {
			return nil, ferr("", -1, "general.alignment %d is not a multiple of 8 in (0, 1 MiB]", a)
		}
		g.Alignment = int64(a)
	}
	if g.DataOffset < 0 || g.DataOffset > size && len(gf.TensorInfos) > 0 {
		return nil, ferr("", g.DataOffset, "tensor data starts past the end of the file (%d bytes)", size)
	}
	type span struct {
		lo, hi int64
		name   string
	}
	spans := make([]span, 0, len(gf.TensorInfos))
	for i, ti := range gf.TensorInfos {
		name := ti.Name
		if name == "" {
			return nil, ferr("", -1, "tensor %d has an empty name", i)
		}
		if _, dup := g.tIndex[name]; dup {
			return nil, ferr(name, -1, "duplicate tensor name")
		}
		typ := planar.Type(ti.Type)
		if !typ.Known() {
			return nil, ferr(name, -1, "unknown tensor type %d", uint32(ti.Type))
		}
		if ti.NDimensions == 0 || ti.NDimensions > 4 || int(ti.NDimensions) != len(ti.Dimensions) {
			return nil, ferr(name, -1, "bad dimension count %d", ti.NDimensions)
		}
		dims := make([]int, len(ti.Dimensions))
		elems := uint64(1)
		for j, d := range ti.Dimensions {
			if d == 0 || d > MaxDimension {
				return nil, ferr(name, -1, "dimension %d is %d (allowed 1..%d)", j, d, uint64(MaxDimension))
			}
			hi, lo := bits.Mul64(elems, d)
			if hi != 0 || lo > 1<<50 {
				return nil, ferr(name, -1, "dimensions %v overflow", ti.Dimensions)
			}
			elems = lo
			dims[j] = int(d)
		}
		bs := uint64(typ.BlockSize())
		if uint64(dims[0])%bs != 0 {
			return nil, ferr(name, -1, "row length %d is not a multiple of the %s block size %d", dims[0], typ, bs)
		}
		nbytes := elems / bs * uint64(typ.BlockBytes())
		if ti.Offset%uint64(g.Alignment) != 0 {
			return nil, ferr(name, -1, "data offset %d is not aligned to %d", ti.Offset, g.Alignment)
		}
		if ti.Offset > uint64(size) || uint64(g.DataOffset)+ti.Offset > uint64(size) ||
			nbytes > uint64(size)-uint64(g.DataOffset)-ti.Offset {
			return nil, ferr(name, g.DataOffset+int64(min(ti.Offset, uint64(size))), "data (%d bytes) runs past the end of the file (%d bytes)", nbytes, size)
		}
		abs := g.DataOffset + int64(ti.Offset)
		g.tIndex[name] = len(g.Tensors)
		g.Tensors = append(g.Tensors, Tensor{Name: name, Type: typ, Dims: dims, Offset: abs, Size: int64(nbytes)})
		spans = append(spans, span{abs, abs + int64(nbytes), name})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			return nil, ferr(spans[i].name, spans[i].lo, "data overlaps tensor %q", spans[i-1].name)
		}
	}
	return g, nil
}

// maxArray caps metadata arrays (a vocabulary has up to a few hundred thousand entries).
const maxArray = 1 << 24

func convertValue(kv gguf.GGUFMetadataKV) (any, error) {
	switch kv.ValueType {
	case gguf.GGUFMetadataValueTypeUint8, gguf.GGUFMetadataValueTypeUint16,
		gguf.GGUFMetadataValueTypeUint32, gguf.GGUFMetadataValueTypeUint64:
		return toUint(kv.Value)
	case gguf.GGUFMetadataValueTypeInt8, gguf.GGUFMetadataValueTypeInt16,
		gguf.GGUFMetadataValueTypeInt32, gguf.GGUFMetadataValueTypeInt64:
		return toInt(kv.Value)
	case gguf.GGUFMetadataValueTypeFloat32, gguf.GGUFMetadataValueTypeFloat64:
		return toFloat(kv.Value)
	case gguf.GGUFMetadataValueTypeBool:
		b, ok := kv.Value.(bool)
		if !ok {
			return nil, fmt.Errorf("bool holds %T", kv.Value)
		}
		return b, nil
	case gguf.GGUFMetadataValueTypeString:
		s, ok := kv.Value.(string)
		if !ok {
			return nil, fmt.Errorf("string holds %T", kv.Value)
		}
		return s, nil
	case gguf.GGUFMetadataValueTypeArray:
		av, ok := kv.Value.(gguf.GGUFMetadataKVArrayValue)
		if !ok {
			return nil, fmt.Errorf("array holds %T", kv.Value)
		}
		if av.Len > maxArray || uint64(len(av.Array)) != av.Len {
			return nil, fmt.Errorf("array of %d entries (read %d, cap %d)", av.Len, len(av.Array), maxArray)
		}
		switch av.Type {
		case gguf.GGUFMetadataValueTypeString:
			out := make([]string, len(av.Array))
			for i, e := range av.Array {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("string array entry %d holds %T", i, e)
				}
				out[i] = s
			}
			return out, nil
		case gguf.GGUFMetadataValueTypeFloat32, gguf.GGUFMetadataValueTypeFloat64:
			out := make([]float32, len(av.Array))
			for i, e := range av.Array {
				f, err := toFloat(e)
				if err != nil {
					return nil, fmt.Errorf("entry %d: %w", i, err)
				}
				out[i] = float32(f)
			}
			return out, nil
		case gguf.GGUFMetadataValueTypeInt8, gguf.GGUFMetadataValueTypeInt16, gguf.GGUFMetadataValueTypeInt32,
			gguf.GGUFMetadataValueTypeUint8, gguf.GGUFMetadataValueTypeUint16, gguf.GGUFMetadataValueTypeUint32,
			gguf.GGUFMetadataValueTypeInt64, gguf.GGUFMetadataValueTypeUint64, gguf.GGUFMetadataValueTypeBool:
			out := make([]int64, len(av.Array))
			for i, e := range av.Array {
				switch x := e.(type) {
				case bool:
					if x {
						out[i] = 1
					}
				default:
					v, err := toInt(e)
					if err != nil {
						u, uerr := toUint(e)
						if uerr != nil || u > math.MaxInt64 {
							return nil, fmt.Errorf("entry %d: %w", i, err)
						}
						v = int64(u)
					}
					out[i] = v
				}
			}
			return out, nil
		default:
			return av.Array, nil
		}
	}
	return nil, fmt.Errorf("unknown value type %d", kv.ValueType)
}

func toUint(v any) (uint64, error) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case uint64:
		return x, nil
	}
	return 0, fmt.Errorf("unsigned value holds %T", v)
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	}
	return 0, fmt.Errorf("signed value holds %T", v)
}

func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("float value holds %T", v)
}

// Get returns the value of key.
func (g *GGUF) Get(key string) (any, bool) {
	i, ok := g.kvIndex[key]
	if !ok {
		return nil, false
	}
	return g.KV[i].Value, true
}

// String returns the string value of key.
func (g *GGUF) String(key string) (string, bool) {
	v, _ := g.Get(key)
	s, ok := v.(string)
	return s, ok
}

// Uint returns an integer value of key as uint64 (signed values must be >= 0).
func (g *GGUF) Uint(key string) (uint64, bool) {
	v, _ := g.Get(key)
	switch x := v.(type) {
	case uint64:
		return x, true
	case int64:
		if x >= 0 {
			return uint64(x), true
		}
	}
	return 0, false
}

// Int returns an integer value of key as int64.
func (g *GGUF) Int(key string) (int64, bool) {
	v, _ := g.Get(key)
	switch x := v.(type) {
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	case int64:
		return x, true
	}
	return 0, false
}

// Float returns a numeric value of key as float64.
func (g *GGUF) Float(key string) (float64, bool) {
	v, _ := g.Get(key)
	switch x := v.(type) {
	case float64:
		return x, true
	case uint64:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// Bool returns the bool value of key.
func (g *GGUF) Bool(key string) (bool, bool) {
	v, _ := g.Get(key)
	b, ok := v.(bool)
	return b, ok
}

// Strings returns the string-array value of key.
func (g *GGUF) Strings(key string) ([]string, bool) {
	v, _ := g.Get(key)
	s, ok := v.([]string)
	return s, ok
}

// Floats returns the float-array value of key.
func (g *GGUF) Floats(key string) ([]float32, bool) {
	v, _ := g.Get(key)
	s, ok := v.([]float32)
	return s, ok
}

// Ints returns the integer-array value of key.
func (g *GGUF) Ints(key string) ([]int64, bool) {
	v, _ := g.Get(key)
	s, ok := v.([]int64)
	return s, ok
}

// Tensor returns the tensor named name.
func (g *GGUF) Tensor(name string) (*Tensor, bool) {
	i, ok := g.tIndex[name]
	if !ok {
		return nil, false
	}
	return &g.Tensors[i], true
}

// ReadTensor reads the data of t from r (the file g was parsed from) into
// dst, which must hold t.Size bytes. Data that lies
// past the end of the file (a file truncated since it was opened) is an
// error that says so, naming the file and the tensor.
func (g *GGUF) ReadTensor(r io.ReaderAt, t *Tensor, dst []byte) error {
	if int64(len(dst)) != t.Size {
		return fmt.Errorf("tensor %q: buffer of %d bytes for %d", t.Name, len(dst), t.Size)
	}
	return g.ReadTensorAt(r, t, 0, dst)
}

// ReadTensorAt is ReadTensor for bytes off to off+len(dst) of t's data.
func (g *GGUF) ReadTensorAt(r io.ReaderAt, t *Tensor, off int64, dst []byte) error {
	if off < 0 || off+int64(len(dst)) > t.Size {
		return fmt.Errorf("tensor %q: bytes %d+%d of %d", t.Name, off, len(dst), t.Size)
	}
	at := t.Offset + off
	n, err := r.ReadAt(dst, at)
	if n == len(dst) {
		return nil // a ReadAt that fills dst may still say io.EOF
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &FormatError{File: g.Path, Offset: at + int64(n), Tensor: t.Name,
			Msg: fmt.Sprintf("data %d+%d lies past the end of the file (%d bytes read; truncated since it was opened?)", t.Offset, t.Size, off+int64(n))}
	}
	return &FormatError{File: g.Path, Offset: at, Tensor: t.Name, Msg: "reading data: " + err.Error()}
}

// Base returns the file name of g without directories.
func (g *GGUF) Base() string { return filepath.Base(g.Path) }

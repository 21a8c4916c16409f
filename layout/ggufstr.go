package layout

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"unsafe"

	gguf "github.com/gpustack/gguf-parser-go"
)

// ggufExact is what readGGUFExact reads of a GGUF file's metadata.
type ggufExact struct {
	values map[string]any // by key: every string, and every array as fromParsed converts it
	nested bool           // an array of arrays, left out of values
}

// readGGUFExact returns the exact values of every metadata key of the GGUF
// file at path whose value is a string or an array (of strings: []string,
// of floats: []float32, of integers or bools: []int64, as convertValue
// gives them), with every count checked against the bytes that remain. An
// array of arrays is skipped, and nested says there was one.
//
// It exists because the third-party parser behind layout.OpenGGUF
// (gguf-parser-go v0.28.2, _GGUFReader.ReadString) applies bytes.TrimSpace to
// every string it reads: vocabulary entries such as "  " (GPT-NeoX's space
// runs) come back empty and others collide ("▁{" twice in Llama's
// vocabulary). OpenGGUF therefore reads every string value again here,
// bounded by the file size. Since it reads the arrays too, the parser is
// told to skip them (SkipLargeMetadata): it reads a vocabulary's scores and
// token types one binary.Read at a time, 55-95 ms of the 60-90 ms it took
// for a vocabulary of 128 Ki tokens on the development VM, and 7-9 ms
// without them.
func readGGUFExact(path string) (ggufExact, error) {
	f, err := os.Open(path)
	if err != nil {
		return ggufExact{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ggufExact{}, err
	}
	r := &ggufReader{r: bufio.NewReaderSize(f, 1<<16), size: st.Size(), path: path}
	if m := r.read(4); r.err == nil && string(m) != "GGUF" {
		r.fail("not a GGUF file")
	}
	ver := r.u32()
	if r.err == nil && (ver < 2 || ver > 3) {
		r.fail("unsupported GGUF version %d", ver)
	}
	r.u64() // tensor count
	nkv := r.count(9)
	out := ggufExact{values: map[string]any{}}
	for i := 0; i < nkv && r.err == nil; i++ {
		key := r.str()
		typ := r.valueType()
		if r.err != nil {
			break
		}
		switch typ {
		case ggufString:
			out.values[key] = r.str()
		case ggufArray:
			switch et := r.valueType(); {
			case r.err != nil:
			case et == ggufString:
				out.values[key] = r.strs()
			case ggufSizes[et] > 0:
				out.values[key] = r.numbers(key, et)
			default:
				r.skipArray(et, 0)
				out.nested = true
			}
		default:
			r.skipValue(typ, 0)
		}
	}
	if r.err != nil {
		return ggufExact{}, r.err
	}
	return out, nil
}

// numbers reads the count and elements of an array of the fixed-size type
// et: []float32 for floats, []int64 for integers and bools (an unsigned
// value above MaxInt64 is an error, as in convertValue). The elements are
// converted from the reader's buffer a view at a time, into the result
// only: a pack's first write waits for this read, and on the development
// VM every MiB of fresh memory cost a new process 3 ms of page faults.
func (r *ggufReader) numbers(key string, et gguf.GGUFMetadataValueType) any {
	sz := ggufSizes[et]
	n := r.count(sz)
	if n > maxArray {
		r.fail("metadata %q: array of %d entries (cap %d)", key, n, maxArray)
		return nil
	}
	var fs []float32
	var is []int64
	if et == gguf.GGUFMetadataValueTypeFloat32 || et == gguf.GGUFMetadataValueTypeFloat64 {
		fs = make([]float32, n)
	} else {
		is = make([]int64, n)
	}
	le := binary.LittleEndian
	for i := 0; i < n && r.err == nil; {
		k := min(n-i, int(int64(r.r.Size())/sz))
		b := r.view(int64(k) * sz)
		if b == nil {
			return nil
		}
		for j := range k {
			switch et {
			case gguf.GGUFMetadataValueTypeFloat32:
				fs[i+j] = math.Float32frombits(le.Uint32(b[4*j:]))
			case gguf.GGUFMetadataValueTypeFloat64:
				fs[i+j] = float32(math.Float64frombits(le.Uint64(b[8*j:])))
			case gguf.GGUFMetadataValueTypeUint8:
				is[i+j] = int64(b[j])
			case gguf.GGUFMetadataValueTypeInt8:
				is[i+j] = int64(int8(b[j]))
			case gguf.GGUFMetadataValueTypeUint16:
				is[i+j] = int64(le.Uint16(b[2*j:]))
			case gguf.GGUFMetadataValueTypeInt16:
				is[i+j] = int64(int16(le.Uint16(b[2*j:])))
			case gguf.GGUFMetadataValueTypeUint32:
				is[i+j] = int64(le.Uint32(b[4*j:]))
			case gguf.GGUFMetadataValueTypeInt32:
				is[i+j] = int64(int32(le.Uint32(b[4*j:])))
			case gguf.GGUFMetadataValueTypeBool:
				if b[j] != 0 {
					is[i+j] = 1
				}
			case gguf.GGUFMetadataValueTypeUint64:
				u := le.Uint64(b[8*j:])
				if u > math.MaxInt64 {
					r.fail("metadata %q: entry %d is %d, above the int64 range", key, i+j, u)
					return nil
				}
				is[i+j] = int64(u)
			case gguf.GGUFMetadataValueTypeInt64:
				is[i+j] = int64(le.Uint64(b[8*j:]))
			}
		}
		i += k
	}
	if r.err != nil {
		return nil
	}
	if fs != nil {
		return fs
	}
	return is
}

const (
	ggufString = gguf.GGUFMetadataValueTypeString
	ggufArray  = gguf.GGUFMetadataValueTypeArray
)

// ggufSizes are the byte sizes of the fixed-size GGUF value types.
var ggufSizes = map[gguf.GGUFMetadataValueType]int64{
	gguf.GGUFMetadataValueTypeUint8: 1, gguf.GGUFMetadataValueTypeInt8: 1,
	gguf.GGUFMetadataValueTypeUint16: 2, gguf.GGUFMetadataValueTypeInt16: 2,
	gguf.GGUFMetadataValueTypeUint32: 4, gguf.GGUFMetadataValueTypeInt32: 4,
	gguf.GGUFMetadataValueTypeFloat32: 4, gguf.GGUFMetadataValueTypeBool: 1,
	gguf.GGUFMetadataValueTypeUint64: 8, gguf.GGUFMetadataValueTypeInt64: 8,
	gguf.GGUFMetadataValueTypeFloat64: 8,
}

type ggufReader struct {
	r    *bufio.Reader
	pos  int64
	size int64
	path string
	err  error
}

func (r *ggufReader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %w: metadata at offset %d: %s", r.path, ErrFormat, r.pos, fmt.Sprintf(format, a...))
	}
}

func (r *ggufReader) left() int64 { return r.size - r.pos }

func (r *ggufReader) read(n int64) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.left() {
		r.fail("%d bytes needed, %d left", n, r.left())
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.fail("%v", err)
		return nil
	}
	r.pos += n
	return b
}

// view returns the next n bytes, which stay valid only until the next
// read: the reader's own buffer where n fits in it (no allocation: a
// vocabulary of 128 Ki tokens is three small reads a token), else a copy.
func (r *ggufReader) view(n int64) []byte {
	if r.err != nil || n > int64(r.r.Size()) || n < 0 || n > r.left() {
		return r.read(n)
	}
	b, err := r.r.Peek(int(n))
	if err != nil {
		r.fail("%v", err)
		return nil
	}
	r.r.Discard(int(n)) // cannot fail after the Peek; b stays valid until the next read
	r.pos += n
	return b
}

func (r *ggufReader) skip(n int64) {
	if r.err != nil {
		return
	}
	if n < 0 || n > r.left() {
		r.fail("%d bytes needed, %d left", n, r.left())
		return
	}
	if _, err := r.r.Discard(int(n)); err != nil {
		r.fail("%v", err)
		return
	}
	r.pos += n
}

func (r *ggufReader) u32() uint32 {
	b := r.view(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// valueType reads a 32-bit metadata value type.
func (r *ggufReader) valueType() gguf.GGUFMetadataValueType {
	return gguf.GGUFMetadataValueType(r.u32())
}

func (r *ggufReader) u64() uint64 {
	b := r.view(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// count reads a 64-bit count of items of at least minSize bytes each.
func (r *ggufReader) count(minSize int64) int {
	n := r.u64()
	if r.err == nil && n > uint64(r.left()/minSize) {
		r.fail("count %d exceeds the %d bytes left", n, r.left())
		return 0
	}
	return int(n)
}

func (r *ggufReader) str() string {
	n := r.count(1)
	return string(r.view(int64(n)))
}

// strs reads the count and the elements of an array of strings. Their
// bytes are appended to one buffer, sized for 16 bytes an element, and
// each element is a string over its bytes there (unsafe.String): the
// buffer is only appended to, and a buffer that append has replaced is
// left as it was, so no string's bytes change. A vocabulary of 128 Ki
// tokens is three allocations rather than one or two a token (15-40 ms
// for the allocations and their page faults in a new process on the
// development VM, on the path to a pack's first write).
func (r *ggufReader) strs() []string {
	n := r.count(8)
	ss := make([]string, 0, min(n, 1<<20))
	all := make([]byte, 0, min(int64(n)*16, r.left()))
	for j := 0; j < n && r.err == nil; j++ {
		b := r.view(int64(r.count(1)))
		if len(b) == 0 {
			ss = append(ss, "")
			continue
		}
		at := len(all)
		all = append(all, b...)
		ss = append(ss, unsafe.String(&all[at], len(b)))
	}
	if r.err != nil {
		return nil
	}
	return ss
}

func (r *ggufReader) skipValue(typ gguf.GGUFMetadataValueType, depth int) {
	if sz, ok := ggufSizes[typ]; ok {
		r.skip(sz)
		return
	}
	switch typ {
	case ggufString:
		r.skip(int64(r.count(1)))
	case ggufArray:
		if depth > 2 {
			r.fail("arrays nested too deep")
			return
		}
		r.skipArray(r.valueType(), depth)
	default:
		r.fail("unknown value type %d", typ)
	}
}

// skipArray skips the count and the elements of an array of type et, the
// array's own type having been read.
func (r *ggufReader) skipArray(et gguf.GGUFMetadataValueType, depth int) {
	if sz, ok := ggufSizes[et]; ok {
		n := r.count(sz)
		r.skip(int64(n) * sz)
		return
	}
	n := r.count(8)
	for i := 0; i < n && r.err == nil; i++ {
		r.skipValue(et, depth+1)
	}
}

package layout

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
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
		typ := r.u32()
		if r.err != nil {
			break
		}
		switch typ {
		case ggufString:
			out.values[key] = r.str()
		case ggufArray:
			switch et := r.u32(); {
			case r.err != nil:
			case et == ggufString:
				n := r.count(8)
				ss := make([]string, 0, min(n, 1<<20))
				for j := 0; j < n && r.err == nil; j++ {
					ss = append(ss, r.str())
				}
				out.values[key] = ss
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
// value above MaxInt64 is an error, as in convertValue).
func (r *ggufReader) numbers(key string, et uint32) any {
	sz := ggufSizes[et]
	n := r.count(sz)
	if n > maxArray {
		r.fail("metadata %q: array of %d entries (cap %d)", key, n, maxArray)
		return nil
	}
	b := r.read(int64(n) * sz)
	if b == nil {
		return nil
	}
	le := binary.LittleEndian
	switch et {
	case 6: // float32
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return out
	case 12: // float64
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(math.Float64frombits(le.Uint64(b[8*i:])))
		}
		return out
	}
	out := make([]int64, n)
	for i := range out {
		switch et {
		case 0: // uint8
			out[i] = int64(b[i])
		case 1: // int8
			out[i] = int64(int8(b[i]))
		case 2: // uint16
			out[i] = int64(le.Uint16(b[2*i:]))
		case 3: // int16
			out[i] = int64(int16(le.Uint16(b[2*i:])))
		case 4: // uint32
			out[i] = int64(le.Uint32(b[4*i:]))
		case 5: // int32
			out[i] = int64(int32(le.Uint32(b[4*i:])))
		case 7: // bool
			if b[i] != 0 {
				out[i] = 1
			}
		case 10: // uint64
			u := le.Uint64(b[8*i:])
			if u > math.MaxInt64 {
				r.fail("metadata %q: entry %d is %d, above the int64 range", key, i, u)
				return nil
			}
			out[i] = int64(u)
		case 11: // int64
			out[i] = int64(le.Uint64(b[8*i:]))
		}
	}
	return out
}

const (
	ggufString = 8
	ggufArray  = 9
)

// ggufSizes are the byte sizes of the fixed-size GGUF value types.
var ggufSizes = map[uint32]int64{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

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
	b := r.read(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *ggufReader) u64() uint64 {
	b := r.read(8)
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
	return string(r.read(int64(n)))
}

func (r *ggufReader) skipValue(typ uint32, depth int) {
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
		r.skipArray(r.u32(), depth)
	default:
		r.fail("unknown value type %d", typ)
	}
}

// skipArray skips the count and the elements of an array of type et, the
// array's own type having been read.
func (r *ggufReader) skipArray(et uint32, depth int) {
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

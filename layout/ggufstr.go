package layout

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// readGGUFStrings returns the exact values of every metadata key of the
// GGUF file at path whose value is a string or an array of strings.
//
// It exists because the third-party parser behind layout.OpenGGUF
// (gguf-parser-go v0.28.2, _GGUFReader.ReadString) applies bytes.TrimSpace to
// every string it reads: vocabulary entries such as "  " (GPT-NeoX's space
// runs) come back empty and others collide ("▁{" twice in Llama's
// vocabulary). OpenGGUF therefore reads every string value again here,
// bounded by the file size, with every count checked against the bytes that
// remain.
func readGGUFStrings(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
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
	out := map[string]any{}
	for i := 0; i < nkv && r.err == nil; i++ {
		key := r.str()
		typ := r.u32()
		if r.err != nil {
			break
		}
		switch typ {
		case ggufString:
			out[key] = r.str()
		case ggufArray:
			et := r.u32()
			if et != ggufString {
				r.skipArray(et, 0)
				continue
			}
			n := r.count(8)
			ss := make([]string, 0, min(n, 1<<20))
			for j := 0; j < n && r.err == nil; j++ {
				ss = append(ss, r.str())
			}
			out[key] = ss
		default:
			r.skipValue(typ, 0)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
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

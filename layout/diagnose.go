package layout

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"os"

	"github.com/xdna-go/xdna/planar"
)

// diagnose walks the header of a GGUF file that the parser refused, to turn
// the parser's message into one that names the tensor at fault. It returns
// nil when it finds nothing more precise to say. It never allocates a size
// read from the file.
func diagnose(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	r := &walker{r: bufio.NewReader(f)}
	var hdr struct {
		Magic   [4]byte
		Version uint32
		NT, NKV uint64
	}
	if !r.read(&hdr) || hdr.Version < 2 {
		return nil
	}
	ferr := func(tensor string, format string, a ...any) error {
		return &FormatError{File: path, Offset: r.off, Tensor: tensor, Msg: fmt.Sprintf(format, a...)}
	}
	if hdr.NT > uint64(size)/24 || hdr.NKV > uint64(size)/12 {
		return ferr("", "header claims %d tensors and %d metadata entries, more than %d bytes can hold", hdr.NT, hdr.NKV, size)
	}
	alignment := uint64(32)
	for i := uint64(0); i < hdr.NKV; i++ {
		key, ok := r.str(size)
		if !ok {
			return ferr("", "metadata entry %d runs past the end of the file", i)
		}
		var vt uint32
		if !r.read(&vt) {
			return ferr("", "metadata %q runs past the end of the file", key)
		}
		v, ok := r.skipValue(vt, size, 0)
		if !ok {
			return ferr("", "metadata %q: bad or truncated value of type %d", key, vt)
		}
		if key == "general.alignment" && v > 0 {
			alignment = v
		}
	}
	type info struct {
		name string
		typ  planar.Type
		size uint64
		off  uint64
	}
	infos := make([]info, 0, min(hdr.NT, 1<<16))
	for i := uint64(0); i < hdr.NT; i++ {
		name, ok := r.str(size)
		if !ok {
			return ferr("", "tensor info %d runs past the end of the file", i)
		}
		var nd uint32
		if !r.read(&nd) {
			return ferr(name, "tensor info runs past the end of the file")
		}
		if nd == 0 || nd > 4 {
			return ferr(name, "%d dimensions (1..4 allowed)", nd)
		}
		dims := make([]uint64, nd)
		if !r.read(dims) {
			return ferr(name, "tensor info runs past the end of the file")
		}
		var typ uint32
		var off uint64
		if !r.read(&typ) || !r.read(&off) {
			return ferr(name, "tensor info runs past the end of the file")
		}
		t := planar.Type(typ)
		if !t.Known() {
			return ferr(name, "unknown tensor type %d", typ)
		}
		elems := uint64(1)
		for _, d := range dims {
			hi, lo := bits.Mul64(elems, d)
			if hi != 0 || d == 0 {
				return ferr(name, "dimensions %v overflow or are zero", dims)
			}
			elems = lo
		}
		if dims[0]%uint64(t.BlockSize()) != 0 {
			return ferr(name, "row length %d is not a multiple of the %s block size %d", dims[0], t, t.BlockSize())
		}
		hi, nb := bits.Mul64(elems/uint64(t.BlockSize()), uint64(t.BlockBytes()))
		if hi != 0 {
			return ferr(name, "dimensions %v overflow", dims)
		}
		infos = append(infos, info{name, t, nb, off})
	}
	start := (uint64(r.off) + alignment - 1) / alignment * alignment
	for _, in := range infos {
		if in.off > uint64(size) || in.size > uint64(size) || start+in.off+in.size > uint64(size) {
			return &FormatError{File: path, Offset: int64(min(start+in.off, uint64(size))), Tensor: in.name,
				Msg: fmt.Sprintf("data (%d bytes at %d) runs past the end of the file (%d bytes)", in.size, start+in.off, size)}
		}
	}
	return nil
}

type walker struct {
	r   *bufio.Reader
	off int64
}

func (w *walker) read(v any) bool {
	if err := binary.Read(w.r, binary.LittleEndian, v); err != nil {
		return false
	}
	w.off += int64(binary.Size(v))
	return true
}

func (w *walker) str(size int64) (string, bool) {
	var n uint64
	if !w.read(&n) || n > uint64(size) || n > 1<<20 {
		return "", false
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(w.r, b); err != nil {
		return "", false
	}
	w.off += int64(n)
	return string(b), true
}

// skipValue skips a value of type vt and returns it when it is an unsigned integer.
func (w *walker) skipValue(vt uint32, size int64, depth int) (uint64, bool) {
	fixed := map[uint32]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	if n, ok := fixed[vt]; ok {
		var b [8]byte
		if _, err := io.ReadFull(w.r, b[:n]); err != nil {
			return 0, false
		}
		w.off += int64(n)
		return binary.LittleEndian.Uint64(b[:]), true
	}
	switch vt {
	case 8:
		_, ok := w.str(size)
		return 0, ok
	case 9:
		if depth > 0 {
			return 0, false
		}
		var et uint32
		var n uint64
		if !w.read(&et) || !w.read(&n) || n > uint64(size) {
			return 0, false
		}
		for i := uint64(0); i < n; i++ {
			if _, ok := w.skipValue(et, size, depth+1); !ok {
				return 0, false
			}
		}
		return 0, true
	}
	return 0, false
}

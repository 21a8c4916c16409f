package layout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/xdna-go/xdna/internal/hugepage"
)

// The .xdna container: a 64-byte header, blobs each on a BlobAlign boundary
// from offset BlobAlign on, and the TOML manifest after the last blob.
//
//	off  size  field
//	0    8     magic "XDNAPACK"
//	8    4     container version (1), little endian
//	12   4     header size (64)
//	16   8     manifest offset
//	24   8     manifest size
//	32   4     manifest crc32c
//	36   4     reserved (0)
//	40   8     file size
//	48   12    reserved (0)
//	60   4     crc32c of bytes 0..60
const (
	Magic         = "XDNAPACK"
	HeaderSize    = 64
	BlobAlign     = 4096
	containerVers = 1
	maxManifest   = 256 << 20
)

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// Padded returns n rounded up to BlobAlign: the room a blob of n bytes
// takes in the file, and in the buffers and copies that keep blobs on
// BlobAlign boundaries as the file does.
func Padded(n int64) int64 { return alignUp(n, BlobAlign) }

// File is an opened .xdna file: its manifest and its bytes (memory-mapped
// when opened from a path).
type File struct {
	Name     string
	Manifest *Manifest // read-only: lookups go through an index of it
	data     []byte
	src      *os.File // the mapped file, for ReadBlob; nil when data is in memory
	unmap    func() error
	byName   map[string]int // the index in Manifest.Tensors of each name's first entry
}

// Open memory-maps and validates the .xdna file name (header, manifest,
// every blob's offset and size; checksums with Verify). A zstd-compressed
// file (the distribution form) is unpacked once into the cache and the
// unpacked file is mapped (see openZstd).
func Open(name string) (*File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", name)
	}
	if st.Size() < HeaderSize {
		return nil, &FormatError{File: name, Offset: 0, Msg: fmt.Sprintf("%d bytes is too short for an .xdna header", st.Size())}
	}
	var magic [4]byte
	if _, err := f.ReadAt(magic[:], 0); err != nil {
		return nil, err
	}
	if IsZstd(magic[:]) {
		return openZstd(f, name, st.Size())
	}
	return mapFile(f, name, st.Size())
}

// mapFile maps the opened .xdna file f of size bytes and validates it.
func mapFile(f *os.File, name string, size int64) (*File, error) {
	if size > 1<<46 {
		return nil, &FormatError{File: name, Offset: -1, Msg: "file too large"}
	}
	if size < HeaderSize {
		return nil, &FormatError{File: name, Offset: 0, Msg: fmt.Sprintf("%d bytes is too short for an .xdna header", size)}
	}
	data, unmap, err := hugepage.MapFile(int(f.Fd()), size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	xf, err := newFile(name, data)
	if err != nil {
		unmap()
		return nil, err
	}
	// A descriptor of its own for ReadBlob (the caller closes f).
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	xf.src = os.NewFile(uintptr(fd), name)
	xf.unmap = func() error { return errors.Join(unmap(), xf.src.Close()) }
	return xf, nil
}

// NewReader reads a whole .xdna file of size bytes from r into memory.
func NewReader(r io.ReaderAt, size int64) (*File, error) {
	if size < HeaderSize || size > 1<<34 {
		return nil, &FormatError{File: "<reader>", Offset: 0, Msg: fmt.Sprintf("size %d", size)}
	}
	data := make([]byte, size)
	if _, err := r.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return newFile("<reader>", data)
}

// parseHeader checks the fixed header h (magic, checksum, version) and
// returns the manifest's offset and size and the file size it declares.
func parseHeader(name string, h []byte) (moff, msize, fsize uint64, err error) {
	ferr := func(off int64, format string, a ...any) error {
		return &FormatError{File: name, Offset: off, Msg: fmt.Sprintf(format, a...)}
	}
	if string(h[:8]) != Magic {
		return 0, 0, 0, ferr(0, "not an .xdna file (magic %q)", h[:8])
	}
	if Checksum(h[:60]) != binary.LittleEndian.Uint32(h[60:]) {
		return 0, 0, 0, ferr(60, "header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != containerVers {
		return 0, 0, 0, ferr(8, "container version %d, this program reads %d", v, containerVers)
	}
	return binary.LittleEndian.Uint64(h[16:]), binary.LittleEndian.Uint64(h[24:]), binary.LittleEndian.Uint64(h[40:]), nil
}

func newFile(name string, data []byte) (*File, error) {
	ferr := func(off int64, format string, a ...any) error {
		return &FormatError{File: name, Offset: off, Msg: fmt.Sprintf(format, a...)}
	}
	size := int64(len(data))
	if size < HeaderSize {
		return nil, ferr(0, "%d bytes is too short for an .xdna header", size)
	}
	h := data[:HeaderSize]
	moff, msize, fsize, err := parseHeader(name, h)
	if err != nil {
		return nil, err
	}
	if fsize != uint64(size) {
		return nil, ferr(40, "header says %d bytes, file has %d (truncated or appended to)", fsize, size)
	}
	if msize > maxManifest || moff < HeaderSize || moff > uint64(size) || msize > uint64(size)-moff {
		return nil, ferr(16, "manifest at %d+%d lies outside the file", moff, msize)
	}
	body := data[moff : moff+msize]
	if Checksum(body) != binary.LittleEndian.Uint32(h[32:]) {
		return nil, ferr(int64(moff), "manifest checksum mismatch")
	}
	m, err := ParseManifest(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	inFile := func(what string, r BlobRef) error {
		if r.Offset < BlobAlign || r.Offset%BlobAlign != 0 || r.Size < 0 ||
			r.Offset > int64(moff) || r.Size > int64(moff)-r.Offset {
			return &FormatError{File: name, Offset: r.Offset, Tensor: what, Msg: fmt.Sprintf("blob %d+%d lies outside the data area", r.Offset, r.Size)}
		}
		return nil
	}
	if m.Tokenizer.Size > 0 {
		if err := inFile("tokenizer", m.Tokenizer); err != nil {
			return nil, err
		}
	}
	for _, t := range m.Tensors {
		if err := inFile(t.Name, t.BlobRef); err != nil {
			return nil, err
		}
	}
	for _, s := range m.Slots {
		if err := inFile("slot "+s.Name, s.BlobRef); err != nil {
			return nil, err
		}
	}
	byName := make(map[string]int, len(m.Tensors))
	for i, t := range m.Tensors {
		if _, ok := byName[t.Name]; !ok {
			byName[t.Name] = i
		}
	}
	return &File{Name: name, Manifest: m, data: data, byName: byName}, nil
}

// Close unmaps the file.
func (f *File) Close() error {
	if f.unmap != nil {
		u := f.unmap
		f.unmap = nil
		f.data = nil
		return u()
	}
	return nil
}

// Size returns the file's size in bytes: Bytes(BlobRef{Size: f.Size()})
// is the whole file.
func (f *File) Size() int64 { return int64(len(f.data)) }

// Bytes returns the blob r; it was bounds-checked at open.
func (f *File) Bytes(r BlobRef) []byte { return f.data[r.Offset : r.Offset+r.Size : r.Offset+r.Size] }

// Tensor returns the manifest entry and blob of the tensor named name.
func (f *File) Tensor(name string) (*TensorEntry, []byte, bool) {
	t := f.tensor(name)
	if t == nil {
		return nil, nil, false
	}
	return t, f.Bytes(t.BlobRef), true
}

// tensor is Manifest.Tensor through the index made at open: the engine
// looks every tensor up, and loading verifies every blob, asking Packed of
// each, so a linear search is quadratic in the tensor count. The manifest
// of an open File is not to be changed.
func (f *File) tensor(name string) *TensorEntry {
	if i, ok := f.byName[name]; ok {
		return &f.Manifest.Tensors[i]
	}
	return nil
}

// Verify checks the crc32c of every blob and returns one error per bad blob,
// each naming the tensor. A page fault on a file truncated under us is
// returned as an error too.
func (f *File) Verify() (errs []error) { return f.VerifyExcept(nil) }

// VerifyExcept is Verify but for the blobs for which skip returns true
// (those the caller reads with ReadBlob, which checks them), named as its
// errors name them: a tensor's name, "tokenizer" or "slot NAME". skip is
// called on the calling goroutine; the blobs are checked on up to
// GOMAXPROCS goroutines, the largest first, and the errors come in the
// manifest's order.
func (f *File) VerifyExcept(skip func(what string) bool) (errs []error) {
	type blob struct {
		what string
		r    BlobRef
		err  error
	}
	var bs []blob
	add := func(what string, r BlobRef) {
		if skip == nil || !skip(what) {
			bs = append(bs, blob{what: what, r: r})
		}
	}
	if f.Manifest.Tokenizer.Size > 0 {
		add("tokenizer", f.Manifest.Tokenizer)
	}
	for _, t := range f.Manifest.Tensors {
		add(t.Name, t.BlobRef)
	}
	for _, s := range f.Manifest.Slots {
		add("slot "+s.Name, s.BlobRef)
	}
	order := make([]int, len(bs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return bs[order[i]].r.Size > bs[order[j]].r.Size })
	var next atomic.Int64
	work := func() {
		for {
			k := int(next.Add(1) - 1)
			if k >= len(order) {
				return
			}
			b := &bs[order[k]]
			b.err = f.checkBlob(b.what, b.r)
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(bs)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	for _, b := range bs {
		if b.err != nil {
			errs = append(errs, b.err)
		}
	}
	return errs
}

func (f *File) checkBlob(what string, r BlobRef) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			err = &FormatError{File: f.Name, Offset: r.Offset, Tensor: what, Msg: fmt.Sprintf("reading blob: %v", p)}
		}
	}()
	return f.checkSum(what, r, f.Bytes(r))
}

// checkSum checks that b, the bytes of blob r (of what), have its checksum.
func (f *File) checkSum(what string, r BlobRef, b []byte) error {
	if got := Checksum(b); got != r.CRC32C {
		return &FormatError{File: f.Name, Offset: r.Offset, Tensor: what, Msg: fmt.Sprintf("checksum %08x, manifest says %08x: blob is corrupted", got, r.CRC32C)}
	}
	return nil
}

// Packed reports whether the blob what (named as VerifyExcept names it) is
// a packed tensor: a matrix, which the engine multiplies, not a vector.
func (f *File) Packed(what string) bool {
	t := f.tensor(what)
	return t != nil && t.Format != FormatRaw
}

// ReadBlob reads blob r (of what, a tensor's name) into dst, r.Size bytes,
// and checks its checksum there, so that the bytes checked are the bytes
// the caller keeps. A mapped file is read with pread, which touches none of
// the mapping's pages (on a VM whose host shadows the guest's page tables
// the first touch of each mapped page is a trip to the host).
func (f *File) ReadBlob(what string, r BlobRef, dst []byte) error {
	if int64(len(dst)) != r.Size {
		return fmt.Errorf("%s: tensor %q: a buffer of %d bytes for a blob of %d", f.Name, what, len(dst), r.Size)
	}
	if f.src == nil {
		copy(dst, f.Bytes(r))
	} else if _, err := f.src.ReadAt(dst, r.Offset); err != nil {
		return &FormatError{File: f.Name, Offset: r.Offset, Tensor: what, Msg: fmt.Sprintf("reading blob: %v", err)}
	}
	return f.checkSum(what, r, dst)
}

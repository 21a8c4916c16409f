package layout

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/xdna-go/xdna/cache"
)

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// IsZstd reports whether b starts with the zstd frame magic.
func IsZstd(b []byte) bool { return bytes.HasPrefix(b, zstdMagic) }

const (
	// maxExpanded caps the size a compressed .xdna may declare.
	maxExpanded = 1 << 40
	// maxWindow caps the zstd window, and with it the decoder's memory;
	// xdnapack compress writes windows of at most 8 MiB.
	maxWindow = 128 << 20
)

// openZstd opens the distribution form f (size bytes, named name): it
// checks the .xdna header from the first decompressed bytes, then maps the
// unpacked file from the cache (cache.Unpacked, keyed by f's content, cache.Key),
// unpacking it there first by streaming, in bounded memory, when it is not
// there yet. The unpacked file must be exactly as long as its header says.
func openZstd(f *os.File, name string, size int64) (*File, error) {
	ferr := func(format string, a ...any) error {
		return &FormatError{File: name, Offset: -1, Msg: fmt.Sprintf(format, a...)}
	}
	d, err := zstd.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20),
		zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxWindow))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var h [HeaderSize]byte
	if n, err := io.ReadFull(d, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, ferr("expands to %d bytes, too short for an .xdna header", n)
		}
		return nil, ferr("zstd: %v", err)
	}
	_, _, fsize, err := parseHeader(name, h[:])
	if err != nil {
		return nil, err
	}
	if fsize < HeaderSize || fsize > maxExpanded {
		return nil, ferr("its header declares %d bytes", fsize)
	}
	key, err := cache.FileKey(f, io.NewSectionReader(f, 0, size))
	if err != nil {
		return nil, err
	}
	path, err := cache.Unpacked(key)
	if err == nil {
		if xf, err := openUnpacked(path, name, fsize); err == nil || !errors.Is(err, os.ErrNotExist) {
			return xf, err
		}
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err != nil {
		// No cache: unpack into an unlinked file of the temporary directory.
		path = filepath.Join(os.TempDir(), fmt.Sprintf("xdna-unpack-%d.xdna", os.Getpid()))
	}
	if err := freeSpace(filepath.Dir(path), int64(fsize)); err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", name, err)
	}
	tmp, err := createTemp(path)
	if err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", name, err)
	}
	fail := func(err error) (*File, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	w, flush := ChunkWriter(tmp) // whole 2 MiB chunks: the cache can map them on huge pages
	w.Write(h[:])
	n, err := io.Copy(w, io.LimitReader(d, int64(fsize)-HeaderSize+1))
	switch {
	case err != nil:
		return fail(ferr("zstd: %v", err))
	case n > int64(fsize)-HeaderSize:
		return fail(ferr("expands past the %d bytes its header declares", fsize))
	case n < int64(fsize)-HeaderSize:
		return fail(ferr("expands to %d bytes, its header declares %d", n+HeaderSize, fsize))
	}
	if err := flush(); err != nil {
		return fail(fmt.Errorf("unpacking %s: %w", name, tempErr(path, err)))
	}
	// Validate before the file takes its name in the cache.
	xf, err := mapFile(tmp, name, int64(fsize))
	if err != nil {
		return fail(err)
	}
	if errs := xf.Verify(); len(errs) > 0 {
		xf.Close()
		return fail(errs[0])
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		xf.Close()
		return fail(fmt.Errorf("unpacking %s: %w", name, tempErr(path, err)))
	}
	tmp.Close()
	if filepath.Dir(path) == os.TempDir() {
		os.Remove(path) // the mapping keeps the data
	}
	return xf, nil
}

// openUnpacked maps the cached unpacked file path, reporting errors as
// name's; a cached file of the wrong size is removed and unpacked again.
func openUnpacked(path, name string, size uint64) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if uint64(st.Size()) != size {
		os.Remove(path)
		return nil, os.ErrNotExist
	}
	xf, err := mapFile(f, name, st.Size())
	if err != nil {
		os.Remove(path)
		return nil, os.ErrNotExist
	}
	return xf, nil
}

// freeSpace errs when the file system of dir has fewer than n bytes free.
func freeSpace(dir string, n int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // unknown: let the writes say
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < n {
		return fmt.Errorf("needs %d bytes in %s, which has %d free", n, dir, free)
	}
	return nil
}

// Compress writes the zstd distribution form of the .xdna file src to dst,
// atomically, with dst's mode that of a new file (0644 under umask 022). It
// checks that src is a valid .xdna first, and stops when ctx is done.
func Compress(ctx context.Context, src, dst string, level zstd.EncoderLevel) error {
	f, err := Open(src)
	if err != nil {
		return err
	}
	errs := f.Verify()
	f.Close()
	if len(errs) > 0 {
		return errs[0]
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := createTemp(dst)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	enc, err := zstd.NewWriter(tmp, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return fail(err)
	}
	if _, err := io.Copy(enc, ctxReader{ctx, in}); err != nil {
		enc.Close()
		if ctx.Err() != nil {
			return fail(err)
		}
		return fail(fmt.Errorf("compress %s: %w", src, tempErr(dst, err)))
	}
	steps := []func() error{enc.Close, tmp.Sync, tmp.Close, func() error { return os.Rename(tmp.Name(), dst) }}
	for _, s := range steps {
		if err := s(); err != nil {
			return fail(tempErr(dst, err))
		}
	}
	return nil
}

// ctxReader stops reading with the context's cause when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if r.ctx.Err() != nil {
		return 0, context.Cause(r.ctx)
	}
	return r.r.Read(p)
}

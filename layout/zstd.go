package layout

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
)

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// IsZstd reports whether b starts with the zstd frame magic.
func IsZstd(b []byte) bool { return bytes.HasPrefix(b, zstdMagic) }

// maxExpanded caps the expanded size of a compressed .xdna read into memory.
const maxExpanded = 16 << 30

func decompressFile(r io.Reader, name string) ([]byte, error) {
	d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(d, maxExpanded+1))
	if err != nil {
		return nil, &FormatError{File: name, Offset: -1, Msg: "zstd: " + err.Error()}
	}
	if n > maxExpanded {
		return nil, &FormatError{File: name, Offset: -1, Msg: "expands past 16 GiB"}
	}
	return buf.Bytes(), nil
}

// Compress writes the zstd distribution form of the .xdna file src to dst,
// atomically. It checks that src is a valid .xdna first.
func Compress(src, dst string, level zstd.EncoderLevel) error {
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
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp*")
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
	if _, err := io.Copy(enc, in); err != nil {
		enc.Close()
		return fail(fmt.Errorf("compress %s: %w", src, err))
	}
	if err := enc.Close(); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

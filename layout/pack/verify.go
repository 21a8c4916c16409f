package pack

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/tokenizer"
)

// Against compares f with the GGUF file it was packed from: every
// hyperparameter (rope settings included), the tokenizer, and every tensor
// unpacked bit for bit. It returns one error per mismatch, each naming the
// hyperparameter or tensor once, and the number of tensors compared exact.
func Against(f *layout.File, ggufPath string) (exact int, errs []error) {
	g, err := layout.OpenGGUF(ggufPath)
	if err != nil {
		return 0, []error{err}
	}
	src, err := os.Open(ggufPath)
	if err != nil {
		return 0, []error{err}
	}
	defer src.Close()
	errs = append(errs, compareParams(f.Manifest.Model, g, ggufPath)...)
	seen := map[string]bool{}
	var want, got []byte
	for i := range f.Manifest.Tensors {
		e := &f.Manifest.Tensors[i]
		blob := f.Bytes(e.BlobRef)
		parts := e.Parts
		if len(parts) == 0 {
			parts = []layout.Part{{Name: e.Name, Shape: e.Shape}}
		}
		for _, p := range parts {
			seen[p.Name] = true // a mismatch is reported once, here
		}
		n := 0
		var srcs []*layout.Tensor
		bad := false
		for _, p := range parts {
			t, ok := g.Tensor(p.Name)
			if !ok {
				errs = append(errs, fmt.Errorf("tensor %q: not in %s", p.Name, ggufPath))
				bad = true
				break
			}
			if t.Type.String() != e.Type || fmt.Sprint(t.Dims) != fmt.Sprint(p.Shape) {
				errs = append(errs, fmt.Errorf("tensor %q: %s %v in the package, %s %v in %s", p.Name, e.Type, p.Shape, t.Type, t.Dims, ggufPath))
				bad = true
				break
			}
			srcs = append(srcs, t)
			n += int(t.Size)
		}
		if bad {
			continue
		}
		want = grow(want, n)
		off := 0
		for _, t := range srcs {
			if err := g.ReadTensor(src, t, want[off:off+int(t.Size)]); err != nil {
				errs = append(errs, err)
				bad = true
				break
			}
			off += int(t.Size)
		}
		if bad {
			continue
		}
		if e.Format == layout.FormatRaw {
			got = append(got[:0], blob...)
		} else {
			geom, err := e.Geometry(f.Manifest.Package.Columns)
			if err != nil {
				errs = append(errs, fmt.Errorf("tensor %q: %w", e.Name, err))
				continue
			}
			got = grow(got, n)
			if err := planar.Unpack(geom, blob, got); err != nil {
				errs = append(errs, fmt.Errorf("tensor %q: unpack: %w", e.Name, err))
				continue
			}
		}
		if !bytes.Equal(got[:n], want[:n]) {
			off := 0
			for i := range want[:n] {
				if got[i] != want[i] {
					off = i
					break
				}
			}
			errs = append(errs, fmt.Errorf("tensor %q: unpacked bytes differ from the GGUF at byte %d", e.Name, off))
			continue
		}
		exact += len(srcs)
	}
	for _, t := range g.Tensors {
		if !seen[t.Name] {
			errs = append(errs, fmt.Errorf("tensor %q of %s is missing from the package", t.Name, ggufPath))
		}
	}
	if _, ok := g.Strings("tokenizer.ggml.tokens"); ok {
		v, err := tokenizer.VocabFromGGUF(g)
		var b []byte
		if err == nil {
			b, err = v.MarshalBinary()
		}
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("tokenizer of %s: %w", ggufPath, err))
		case f.Manifest.Tokenizer.Size == 0:
			errs = append(errs, fmt.Errorf("tokenizer: missing from the package"))
		case !bytes.Equal(f.Bytes(f.Manifest.Tokenizer), b):
			errs = append(errs, fmt.Errorf("tokenizer: differs from the vocabulary of %s", ggufPath))
		}
	}
	return exact, errs
}

// compareParams compares the package's hyperparameters with the ones
// xdnapack would take from g, one error per differing field (named by its
// manifest key).
func compareParams(have layout.Params, g *layout.GGUF, ggufPath string) []error {
	want, err := layout.ParamsFromGGUF(g)
	if err != nil {
		return []error{err}
	}
	var errs []error
	a, b := reflect.ValueOf(have), reflect.ValueOf(want)
	for i := 0; i < a.NumField(); i++ {
		x, y := a.Field(i).Interface(), b.Field(i).Interface()
		if x != y {
			key, _, _ := strings.Cut(a.Type().Field(i).Tag.Get("toml"), ",")
			errs = append(errs, fmt.Errorf("hyperparameter %s: %#v in the package, %#v in %s", key, x, y, ggufPath))
		}
	}
	return errs
}

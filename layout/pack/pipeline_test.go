package pack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/gguftest"
	"github.com/xdna-go/xdna/planar"
)

// writeTensorsSerial is the tensor stage as Run did it before the pipeline
// (one tensor at a time: read, hash, repack, write), kept as the reference
// whose bytes the pipeline must reproduce.
func writeTensorsSerial(ctx context.Context, opt *Options, g *layout.GGUF, src io.ReaderAt, plan *Plan, w *layout.Writer, m *layout.Manifest, digest hash.Hash) error {
	var total, done int64
	for _, e := range plan.Entries {
		total += e.Size
	}
	var srcBuf, dstBuf []byte
	hashMetadata(digest, g)
	for _, e := range plan.Entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := 0
		for _, t := range e.parts {
			n += int(t.Size)
		}
		srcBuf = grow(srcBuf, n)
		off := 0
		for _, t := range e.parts {
			if err := g.ReadTensor(src, t, srcBuf[off:off+int(t.Size)]); err != nil {
				return err
			}
			hashTensor(digest, t, srcBuf[off:off+int(t.Size)])
			off += int(t.Size)
		}
		out := srcBuf[:n]
		if e.Format != layout.FormatRaw {
			dstBuf = grow(dstBuf, int(e.Size))
			out = dstBuf[:e.Size]
			if err := planar.Pack(e.geom, srcBuf[:n], out); err != nil {
				return fmt.Errorf("%s: tensor %q: %w", opt.Input, e.Name, err)
			}
		}
		ref, err := w.AddBlob(out)
		if err != nil {
			return err
		}
		e.BlobRef = ref
		m.Tensors = append(m.Tensors, e.TensorEntry)
		done += e.Size
		if opt.Progress != nil {
			opt.Progress(done, total, e.Name)
		}
	}
	return nil
}

// packWith runs Run with the given tensor stage and returns the output's
// bytes and the progress calls.
func packWith(t *testing.T, stage func(context.Context, *Options, *layout.GGUF, io.ReaderAt, *Plan, *layout.Writer, *layout.Manifest, hash.Hash) error, in, target string, fuse bool) ([]byte, []string) {
	t.Helper()
	saved := writeTensors
	writeTensors = stage
	defer func() { writeTensors = saved }()
	out := filepath.Join(t.TempDir(), "m.xdna")
	var progress []string
	opt := &Options{Input: in, Output: out, Target: target, Catalog: kernelsel.Default(), CPUMaxN: 256, NoFuse: !fuse,
		Progress: func(done, total int64, name string) { progress = append(progress, fmt.Sprint(done, total, name)) }}
	if _, err := Run(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b, progress
}

// TestPipelineBytes packs generated models of several types with the
// pipeline and with the serial reference and wants the same bytes and the
// same progress calls (the vocabulary built beside the tensors for one of
// the two and after them for the other), with the in-flight budget as it is and so small that
// every entry outgrows the arenas (each then runs alone), each with
// entries whole and in pieces of a few KiB (pieces: runs of column groups,
// runs of bytes off the pages' bounds). The generated models store fused
// parts back to back; tiny-llama-q4_k_m stores attn_k before attn_q.
func TestPipelineBytes(t *testing.T) {
	dir := t.TempDir()
	var models []string
	for i, typ := range []planar.Type{planar.Q4_0, planar.Q8_0, planar.Q4_K, planar.F16} {
		in := filepath.Join(dir, fmt.Sprintf("m%d.gguf", i))
		s := gguftest.Shape{Arch: "llama", Layers: 3, Dim: 256, FFN: 768, Heads: 4, HeadsKV: 2, Vocab: 700, Type: typ, Seed: uint64(10 + i)}
		if err := gguftest.WriteModel(in, s); err != nil {
			t.Fatal(err)
		}
		models = append(models, in)
	}
	models = append(models, filepath.Join("../../../shared/fixtures/models", "tiny-llama-q4_k_m.gguf"))
	saved, savedPiece, savedAfter := inFlight, pieceBytes, vocabAfter
	defer func() { inFlight, pieceBytes, vocabAfter = saved, savedPiece, savedAfter }()
	for _, c := range [][2]int64{{saved, savedPiece}, {1 << 10, savedPiece}, {saved, 5000}, {1 << 10, 5000}} {
		budget := c[0]
		inFlight, pieceBytes = c[0], c[1]
		for i, in := range models {
			if _, err := os.Stat(in); err != nil {
				t.Logf("%s: %v, skipped", in, err)
				continue
			}
			target, fuse := "xdna2", i%2 == 0
			if i%3 == 1 {
				target = "xdna1"
			}
			// The vocabulary's blob is built beside the tensor stage for one
			// and after it for the other, in turn (vocabAfter).
			after := i%2 == 0
			vocabAfter = func() bool { return after }
			want, wantProgress := packWith(t, writeTensorsSerial, in, target, fuse)
			after = !after
			got, gotProgress := packWith(t, writeTensorsPipelined, in, target, fuse)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s (budget %d, pieces of %d): the pipeline's %d bytes differ from the serial writer's %d", in, budget, pieceBytes, len(got), len(want))
			}
			if fmt.Sprint(gotProgress) != fmt.Sprint(wantProgress) {
				t.Fatalf("%s: progress %v, want %v", in, gotProgress, wantProgress)
			}
		}
	}
}

// TestPipelineCancel cancels a pack after its first tensor: Run returns the
// context's error, leaves no output and no temporary file, and returns at
// all (the stages drain rather than block).
func TestPipelineCancel(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.gguf")
	if err := gguftest.WriteModel(in, gguftest.Shape{Arch: "llama", Layers: 4, Dim: 256, FFN: 768, Heads: 4, HeadsKV: 2, Vocab: 700, Type: planar.Q4_0, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	saved := inFlight
	defer func() { inFlight = saved }()
	for _, budget := range []int64{saved, 1 << 10} {
		inFlight = budget
		ctx, cancel := context.WithCancel(context.Background())
		out := filepath.Join(dir, "m.xdna")
		calls := 0
		_, err := Run(ctx, &Options{Input: in, Output: out, Target: "xdna2", Catalog: kernelsel.Default(), CPUMaxN: 256,
			Progress: func(done, total int64, name string) { calls++; cancel() }})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("budget %d: err %v, want context.Canceled", budget, err)
		}
		if calls != 1 {
			t.Errorf("budget %d: %d progress calls after the cancel, want 1", budget, calls)
		}
		left, _ := filepath.Glob(filepath.Join(dir, "*.xdna*"))
		left2, _ := filepath.Glob(filepath.Join(dir, ".*"))
		if len(left)+len(left2) > 0 {
			t.Errorf("budget %d: left behind %v %v", budget, left, left2)
		}
	}
}

// TestSourceRead checks that the source gives every entry the bytes
// ReadTensor gives its parts, whether they lie back to back in the file or
// not, whole and in runs, and refuses a buffer of the wrong size.
func TestSourceRead(t *testing.T) {
	for _, in := range []string{genModel(t, planar.Q4_0), filepath.Join("../../../shared/fixtures/models", "tiny-llama-q4_k_m.gguf")} {
		if _, err := os.Stat(in); err != nil {
			t.Logf("%s: %v, skipped", in, err)
			continue
		}
		g, plan := openPlan(t, in)
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		s := &source{g: g, r: f}
		var nadjacent, nsplit int
		for _, e := range plan.Entries {
			b := make([]byte, entryBytes(e))
			if err := s.read(e, 0, b); err != nil {
				t.Fatal(err)
			}
			var want []byte
			for _, p := range e.parts {
				buf := make([]byte, p.Size)
				if err := g.ReadTensor(f, p, buf); err != nil {
					t.Fatal(err)
				}
				want = append(want, buf...)
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("%s: entry %s: the bytes differ from ReadTensor's", in, e.Name)
			}
			if err := s.read(e, 0, make([]byte, len(b)+1)); err == nil {
				t.Fatalf("%s: entry %s: a buffer one byte too long was taken", in, e.Name)
			}
			if err := s.read(e, 1, make([]byte, len(b))); err == nil {
				t.Fatalf("%s: entry %s: bytes past its end were taken", in, e.Name)
			}
			// Runs of the entry's bytes, across the parts' bounds.
			for k := range 8 {
				lo := int64(k) * int64(len(b)) / 8
				hi := min(int64(len(b)), lo+int64(len(b))/5+int64(k))
				r := make([]byte, hi-lo)
				if err := s.read(e, lo, r); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(r, want[lo:hi]) {
					t.Fatalf("%s: entry %s: bytes %d..%d differ from ReadTensor's", in, e.Name, lo, hi)
				}
			}
			if adjacent(e.parts) {
				nadjacent++
			} else {
				nsplit++
			}
		}
		t.Logf("%s: %d entries with parts back to back, %d not", filepath.Base(in), nadjacent, nsplit)
	}
}

// adjacent reports whether each part starts where the one before ends.
func adjacent(parts []*layout.Tensor) bool {
	for i := 1; i < len(parts); i++ {
		if parts[i].Offset != parts[i-1].Offset+parts[i-1].Size {
			return false
		}
	}
	return true
}

// TestTruncatedSource truncates the GGUF file after it was opened: reading
// the entry past the end is an error naming the file and the tensor, Run
// refuses the file and leaves no output, and a file truncated while Run
// packs it is an error naming the file and a tensor, not a crash.
func TestTruncatedSource(t *testing.T) {
	in := genModel(t, planar.Q4_0)
	g, plan := openPlan(t, in)
	var last *Entry // the entry whose data ends last in the file
	for _, e := range plan.Entries {
		if p := e.parts[len(e.parts)-1]; last == nil || p.Offset > last.parts[len(last.parts)-1].Offset {
			last = e
		}
	}
	lp := last.parts[len(last.parts)-1]
	f, err := os.OpenFile(in, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(lp.Offset + lp.Size/2); err != nil {
		t.Fatal(err)
	}
	s := &source{g: g, r: f}
	err = s.read(last, 0, make([]byte, entryBytes(last)))
	t.Logf("truncated: %v", err)
	if err == nil || !strings.Contains(err.Error(), lp.Name) || !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("truncated: err %v, want one naming %s and %q, past the end", err, in, lp.Name)
	}

	out := filepath.Join(t.TempDir(), "m.xdna")
	_, err = Run(context.Background(), &Options{Input: in, Output: out, Target: "xdna2", Catalog: kernelsel.Default(), CPUMaxN: 256})
	if err == nil {
		t.Fatal("Run on a truncated file: no error")
	}
	t.Logf("Run: %v", err)
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*")); len(left) > 0 {
		t.Errorf("Run on a truncated file left %v", left)
	}

	// Truncated while Run packs it, after its first tensor, one entry in
	// flight at a time: the reader comes to an entry past the end.
	saved := inFlight
	defer func() { inFlight = saved }()
	inFlight = 1 << 10
	in = genModel(t, planar.Q4_0)
	cut := int64(0)
	_, err = Run(context.Background(), &Options{Input: in, Output: out, Target: "xdna2", Catalog: kernelsel.Default(), CPUMaxN: 256,
		Progress: func(done, total int64, name string) {
			if cut == 0 {
				cut = 64 << 10
				if err := os.Truncate(in, cut); err != nil {
					t.Error(err)
				}
			}
		}})
	t.Logf("truncated during Run: %v", err)
	if err == nil || !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), "tensor") {
		t.Errorf("truncated during Run: err %v, want one naming %s and a tensor", err, in)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*")); len(left) > 0 {
		t.Errorf("Run on a file truncated under it left %v", left)
	}
}

// TestPieces splits every entry of two models at several sizes: the pieces
// cover the entry's source bytes and its blob in order, each once, a
// planar entry's on whole column groups, no piece larger than the size
// unless it is one group, the last marked, and an entry that fits is one
// piece.
func TestPieces(t *testing.T) {
	for _, typ := range []planar.Type{planar.Q4_0, planar.Q6_K} {
		_, plan := openPlan(t, genModel(t, typ))
		for _, max := range []int64{1, 5000, 1 << 16, 1 << 30} {
			for _, e := range plan.Entries {
				js := pieces(e, max)
				n := entryBytes(e)
				if n <= max && e.Size <= max && (len(js) != 1 || !js[0].last) {
					t.Fatalf("%s (%d bytes, max %d): %d pieces, want it whole", e.Name, n, max, len(js))
				}
				var lo, off int64
				c := 0
				for i, j := range js {
					if j.lo != lo || j.off != off || j.hi < j.lo || j.last != (i == len(js)-1) {
						t.Fatalf("%s (max %d): piece %d: source %d..%d at %d, last %v; want source from %d, at %d", e.Name, max, i, j.lo, j.hi, j.off, j.last, lo, off)
					}
					if e.Format == layout.FormatRaw {
						if j.size != j.hi-j.lo || (len(js) > 1 && j.size > max) {
							t.Fatalf("%s (max %d): raw piece %d of %d bytes for %d of source", e.Name, max, i, j.size, j.hi-j.lo)
						}
					} else {
						g := e.geom
						first, _ := g.GroupRows(j.c0)
						end, _ := g.GroupRows(j.c1)
						if j.c1 == g.Columns {
							end = g.N
						}
						rb := int64(g.Type.RowBytes(g.K))
						if j.c0 != c || j.c1 <= j.c0 || j.lo != int64(first)*rb || j.hi != int64(end)*rb || j.size != int64(g.GroupOffset(j.c1)-g.GroupOffset(j.c0)) {
							t.Fatalf("%s (max %d): piece %d: groups %d..%d, source %d..%d, %d bytes", e.Name, max, i, j.c0, j.c1-1, j.lo, j.hi, j.size)
						}
						if len(js) > 1 && j.c1-j.c0 > 1 && (j.hi-j.lo > max || j.size > max) {
							t.Fatalf("%s (max %d): piece %d of %d groups is %d bytes of source, %d of blob", e.Name, max, i, j.c1-j.c0, j.hi-j.lo, j.size)
						}
						c = j.c1
					}
					lo, off = j.hi, off+j.size
				}
				if lo != n || off != e.Size {
					t.Fatalf("%s (max %d): pieces cover %d of %d source bytes, %d of %d blob bytes", e.Name, max, lo, n, off, e.Size)
				}
			}
		}
	}
}

// genModel writes a small generated model of type typ and returns its path.
func genModel(t *testing.T, typ planar.Type) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "m.gguf")
	if err := gguftest.WriteModel(in, gguftest.Shape{Arch: "llama", Layers: 3, Dim: 256, FFN: 768, Heads: 4, HeadsKV: 2, Vocab: 700, Type: typ, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	return in
}

// openPlan opens the GGUF file in and plans it for xdna2.
func openPlan(t *testing.T, in string) (*layout.GGUF, *Plan) {
	t.Helper()
	g, err := layout.OpenGGUF(in)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := MakePlan(g, &Options{Target: "xdna2", Catalog: kernelsel.Default(), CPUMaxN: 256})
	if err != nil {
		t.Fatal(err)
	}
	return g, plan
}

// TestArena hands out buffers of random sizes, some larger than the region,
// gives them back in random order, and checks that every buffer is
// page-aligned, that no two buffers out at once share a byte, that the
// region is never overcommitted, and that cancel wakes a waiting get.
func TestArena(t *testing.T) {
	const a4k = layout.BlobAlign
	rng := rand.New(rand.NewPCG(7, 7))
	a := newArena(10 * a4k)
	type out struct {
		b []byte
		s *span
	}
	var live []out
	for range 2000 {
		if len(live) > 0 && (rng.IntN(3) == 0 || len(live) > 8) {
			i := rng.IntN(len(live))
			a.put(live[i].s)
			live = append(live[:i], live[i+1:]...)
			continue
		}
		n := 1 + rng.IntN(4*a4k)
		if rng.IntN(50) == 0 {
			n = 11*a4k + rng.IntN(a4k) // larger than the region
		}
		// get would wait (this goroutine holds what it waits for): give
		// everything back first.
		c, start := layout.Padded(int64(n)), a.head
		if off := start % a.size; off+c > a.size {
			start += a.size - off
		}
		tail := start
		if len(a.spans) > 0 {
			tail = a.spans[0].start
		}
		if start+c-tail > a.size || c > a.size {
			for _, o := range live {
				a.put(o.s)
			}
			live = live[:0]
		}
		b, s, ok := a.get(n)
		if !ok || len(b) != n || int64(cap(b)) != layout.Padded(int64(n)) {
			t.Fatalf("get(%d): ok %v len %d cap %d", n, ok, len(b), cap(b))
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%a4k != 0 {
			t.Fatalf("get(%d) at %#x, not aligned", n, p)
		}
		for _, o := range live {
			p, q := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(o.b)))
			if p < q+uintptr(cap(o.b)) && q < p+uintptr(cap(b)) {
				t.Fatalf("get(%d) overlaps a buffer still out", n)
			}
		}
		live = append(live, out{b, s})
	}
	for _, o := range live {
		a.put(o.s)
	}
	if len(a.spans) != 0 {
		t.Fatalf("%d spans left after every buffer came back", len(a.spans))
	}
	// A buffer larger than the region reuses the last one that fits.
	b1, s1, _ := a.get(int(a.size) + 3*a4k)
	a.put(s1)
	b2, s2, _ := a.get(int(a.size) + a4k + 1)
	a.put(s2)
	if &b1[0] != &b2[0] || int64(cap(b2)) != a.size+2*a4k {
		t.Errorf("a second buffer larger than the region: new memory (%v) or cap %d, want the first one's memory, cap %d", &b1[0] != &b2[0], cap(b2), a.size+2*a4k)
	}
	// A get that must wait is woken by cancel.
	_, s, _ := a.get(int(a.size))
	got := make(chan bool)
	go func() { _, _, ok := a.get(1); got <- ok }()
	a.cancel()
	if <-got {
		t.Errorf("get after cancel succeeded")
	}
	a.put(s)
	a.free()
}

// TestBadVocabulary packs a model whose vocabulary cannot be built, with the
// vocabulary built beside the tensor stage and after it (vocabAfter): both
// fail with the tokenizer's error naming the input, and leave nothing
// behind.
func TestBadVocabulary(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.gguf")
	if err := gguftest.WriteModel(good, gguftest.Shape{Arch: "llama", Layers: 2, Dim: 256, FFN: 768, Heads: 4, HeadsKV: 2, Vocab: 700, Type: planar.Q4_0, Seed: 6}); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "bad.gguf")
	bogus := func(kvs []gguftest.KV) []gguftest.KV {
		for i := range kvs {
			if kvs[i].Key == "tokenizer.ggml.model" {
				kvs[i].Value = "bogus"
			}
		}
		return kvs
	}
	if err := gguftest.Rewrite(good, in, bogus, nil); err != nil {
		t.Fatal(err)
	}
	saved := vocabAfter
	defer func() { vocabAfter = saved }()
	for _, after := range []bool{false, true} {
		vocabAfter = func() bool { return after }
		out := filepath.Join(dir, "bad.xdna")
		_, err := Run(context.Background(), &Options{Input: in, Output: out, Target: "xdna2", Catalog: kernelsel.Default(), CPUMaxN: 256})
		if err == nil || !strings.Contains(err.Error(), in+": tokenizer: ") || !strings.Contains(err.Error(), "bogus") {
			t.Errorf("vocabulary after the tensors %v: err %v, want %q and the model's name", after, err, in+": tokenizer: ")
		}
		left, _ := filepath.Glob(filepath.Join(dir, "*.xdna*"))
		left2, _ := filepath.Glob(filepath.Join(dir, ".*"))
		if len(left)+len(left2) > 0 {
			t.Errorf("vocabulary after the tensors %v: left behind %v %v", after, left, left2)
		}
	}
}

package pack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"testing"

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
// same progress calls, with the in-flight budget as it is and so small that
// every entry outgrows it (each then runs alone).
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
	saved := inFlight
	defer func() { inFlight = saved }()
	for _, budget := range []int64{saved, 1 << 10} {
		inFlight = budget
		for i, in := range models {
			if _, err := os.Stat(in); err != nil {
				t.Logf("%s: %v, skipped", in, err)
				continue
			}
			target, fuse := "xdna2", i%2 == 0
			if i%3 == 1 {
				target = "xdna1"
			}
			want, wantProgress := packWith(t, writeTensorsSerial, in, target, fuse)
			got, gotProgress := packWith(t, writeTensorsPipelined, in, target, fuse)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s (budget %d): the pipeline's %d bytes differ from the serial writer's %d", in, budget, len(got), len(want))
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

// TestBufPool checks that the pool hands back the smallest fitting buffer,
// that every buffer is a layout.BlobBuf one (aligned capacity, so AddBlob
// writes it with O_DIRECT), and that it keeps at most inFlight idle bytes.
func TestBufPool(t *testing.T) {
	saved := inFlight
	defer func() { inFlight = saved }()
	const a4k = layout.BlobAlign
	inFlight = 4 * a4k
	var p bufPool
	a, b := p.get(10), p.get(a4k+1)
	if cap(a) != a4k || cap(b) != 2*a4k {
		t.Errorf("caps %d and %d, want %d and %d", cap(a), cap(b), a4k, 2*a4k)
	}
	p.put(b)
	p.put(a)
	if c := p.get(5); cap(c) != a4k {
		t.Errorf("get(5) gave a buffer of cap %d, want the idle one of %d", cap(c), a4k)
	}
	p.put(p.get(3 * a4k)) // 2 + 3 pages idle > 4: the largest goes
	if p.idle > int(inFlight) {
		t.Errorf("%d idle bytes, limit %d", p.idle, inFlight)
	}
}

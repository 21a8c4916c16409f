package planar_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
)

// TestFixtures packs every 2-D tensor of the shared GGUF fixtures whose type
// has a planar format, with 4 and 8 column groups and the whole row as one
// K-tile (and, where K allows, 256-element tiles), and checks that Unpack
// gives back the file's bytes and that DequantRow matches DequantGGUF bit for
// bit on every row.
func TestFixtures(t *testing.T) {
	paths, _ := filepath.Glob("../../shared/fixtures/models/*.gguf")
	if len(paths) == 0 {
		t.Skip("no fixtures in ../../shared/fixtures/models")
	}
	seen := map[planar.Type]int{}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			gf, err := layout.OpenGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for i := range gf.Tensors {
				ti := &gf.Tensors[i]
				if len(ti.Dims) != 2 {
					continue
				}
				if _, err := planar.FormatOf(ti.Type); err != nil {
					continue
				}
				src := make([]byte, ti.Size)
				if err := gf.ReadTensor(f, ti, src); err != nil {
					t.Fatal(err)
				}
				k, n := ti.Dims[0], ti.Dims[1]
				tiles := []int{k}
				if k%256 == 0 && k > 256 {
					tiles = append(tiles, 256)
				}
				for _, cols := range []int{4, 8} {
					for _, kt := range tiles {
						g := planar.Geometry{Type: ti.Type, N: n, K: k, Columns: cols, KTile: kt}
						checkTensor(t, ti.Name, g, src)
					}
				}
				seen[ti.Type]++
			}
		})
	}
	t.Logf("tensors checked per type: %v", seen)
}

func checkTensor(t *testing.T, name string, g planar.Geometry, src []byte) {
	t.Helper()
	blob := make([]byte, g.Size())
	if err := planar.Pack(g, src, blob); err != nil {
		t.Fatalf("%s %+v: Pack: %v", name, g, err)
	}
	back := make([]byte, len(src))
	if err := planar.Unpack(g, blob, back); err != nil {
		t.Fatalf("%s %+v: Unpack: %v", name, g, err)
	}
	if !bytes.Equal(back, src) {
		t.Fatalf("%s %+v: Unpack(Pack(x)) != x", name, g)
	}
	rowBytes := len(src) / g.N
	got, want := make([]float32, g.K), make([]float32, g.K)
	for r := 0; r < g.N; r++ {
		if err := planar.DequantGGUF(g.Type, src[r*rowBytes:(r+1)*rowBytes], want); err != nil {
			t.Fatal(err)
		}
		planar.DequantRow(g, blob, r, got)
		for k := range got {
			if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
				t.Fatalf("%s %+v: row %d element %d: DequantRow %g, DequantGGUF %g", name, g, r, k, got[k], want[k])
			}
		}
	}
}

// TestFixturesAgree is an outside check of the dequantisers: the fixtures
// hold the same weights at several precisions, so each quantised tensor,
// dequantised by DequantGGUF, must lie within its type's quantisation error
// of the same tensor at higher precision. A misplaced nibble, bit or scale
// gives an error near 1. Tolerances are normalised mean squared errors
// (sum (x-ref)^2 / sum ref^2, as ggml's test-backend-ops nmse), about
// three times what llama-quantize's output shows.
func TestFixturesAgree(t *testing.T) {
	tol := map[planar.Type]float64{
		planar.F32: 0, planar.F16: 1e-6, planar.Q8_0: 1e-4, planar.Q6_K: 1e-3,
		planar.Q4_K: 2e-2, planar.Q4_0: 3e-2,
	}
	dir := "../../shared/fixtures/models/"
	pairs := [][2]string{
		{"stories260K-f16", "stories260K-f32"}, {"stories260K-q8_0", "stories260K-f32"},
		{"stories260K-q4_0", "stories260K-f32"}, {"tiny-llama-q4_k_m", "tiny-llama-q8_0"},
		{"tiny-llama-q4_0", "tiny-llama-q8_0"},
	}
	if _, err := os.Stat(dir + pairs[0][0] + ".gguf"); err != nil {
		t.Skip("no fixtures:", err)
	}
	checked := map[planar.Type]int{}
	for _, p := range pairs {
		x, ref := dequantAll(t, dir+p[0]+".gguf"), dequantAll(t, dir+p[1]+".gguf")
		for name, a := range x {
			b, ok := ref[name]
			if !ok || len(b.v) != len(a.v) || a.typ == b.typ {
				continue
			}
			var num, den float64
			for i := range a.v {
				d := float64(a.v[i]) - float64(b.v[i])
				num += d * d
				den += float64(b.v[i]) * float64(b.v[i])
			}
			if nmse := num / den; !(nmse <= tol[a.typ]) {
				t.Errorf("%s %s (%s) against %s: nmse %.3g, want <= %.3g", p[0], name, a.typ, p[1], nmse, tol[a.typ])
			}
			checked[a.typ]++
		}
	}
	for _, typ := range []planar.Type{planar.F16, planar.Q8_0, planar.Q6_K, planar.Q4_K, planar.Q4_0} {
		if checked[typ] == 0 {
			t.Errorf("no %s tensor compared", typ)
		}
	}
	t.Logf("tensors compared per type: %v", checked)
}

type dequantized struct {
	typ planar.Type
	v   []float32
}

func dequantAll(t *testing.T, path string) map[string]dequantized {
	t.Helper()
	gf, err := layout.OpenGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]dequantized{}
	for i := range gf.Tensors {
		ti := &gf.Tensors[i]
		if _, err := planar.FormatOf(ti.Type); err != nil {
			continue
		}
		src := make([]byte, ti.Size)
		if err := gf.ReadTensor(f, ti, src); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, ti.Elements())
		if err := planar.DequantGGUF(ti.Type, src, y); err != nil {
			t.Fatalf("%s: %v", ti.Name, err)
		}
		out[ti.Name] = dequantized{ti.Type, y}
	}
	return out
}

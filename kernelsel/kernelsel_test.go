package kernelsel

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdna-go/xdna/planar"
)

// testCatalog has slots whose ranges make every edge testable:
//
//	q4_0-k256  N in [300, 1000]     q4_0-k128  N in [257, 2000]
//	q8_0-k256 and q8_0-k256-b are identical but for the name (tie by name)
//	q4_k-k512 (4 columns) and q4_k-k256-narrow (1 column): cost against tie-break
const testCatalog = `version = "test-1"
cpu_max_n = 256

[targets.xdna1]
columns = 4
dispatch_us = 100
context_switch_us = 1000
weight_gbps = 1
max_contexts = 6

[[slots]]
name = "q4_0-k256"
target = "xdna1"
format = "Q4_0"
k_tile = 256
min_n = 300
max_n = 1000
xclbin = "kernels/q4_0_k256.xclbin"
kernel = "MLIR_AIE"

[[slots]]
name = "q4_0-k128"
target = "xdna1"
format = "Q4_0"
k_tile = 128
min_n = 257
max_n = 2000
xclbin = "kernels/q4_0_k128.xclbin"
kernel = "MLIR_AIE"

[[slots]]
name = "q8_0-k256-b"
target = "xdna1"
format = "Q8_0"
k_tile = 256
min_n = 257
max_n = 500
xclbin = "kernels/q8_0_b.xclbin"
kernel = "MLIR_AIE"

[[slots]]
name = "q8_0-k256"
target = "xdna1"
format = "q8_0"
k_tile = 256
min_n = 257
max_n = 500
xclbin = "kernels/q8_0.xclbin"
kernel = "MLIR_AIE"

[[slots]]
name = "q4_k-k512"
target = "xdna1"
format = "Q4_K"
k_tile = 512
min_n = 1
max_n = 100000
xclbin = "kernels/q4_k_k512.xclbin"
kernel = "MLIR_AIE"

[[slots]]
name = "q4_k-k256-narrow"
target = "xdna1"
format = "Q4_K"
k_tile = 256
min_n = 1
max_n = 100000
columns = 1
xclbin = "kernels/q4_k_narrow.xclbin"
kernel = "MLIR_AIE"
`

func parseTest(t testing.TB) *Catalog {
	t.Helper()
	c, err := Parse([]byte(testCatalog), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDefaultMatchesManifest(t *testing.T) {
	manifest, err := os.ReadFile("../manifest.toml")
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile("default.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(manifest, local) || !bytes.Equal(manifest, defaultTOML) {
		t.Fatal("manifest.toml and kernelsel/default.toml differ: cp manifest.toml kernelsel/default.toml")
	}
}

func TestDefaultCatalog(t *testing.T) {
	c := Default()
	if c.Version != "2026.12-1" || c.CPUMaxN != 256 {
		t.Errorf("version %q cpu_max_n %d", c.Version, c.CPUMaxN)
	}
	want := map[string]Target{
		"xdna1": {Name: "xdna1", Columns: 4, DispatchUS: 170, ContextSwitchUS: 1300, WeightGBps: 32, MaxContexts: 6},
		"xdna2": {Name: "xdna2", Columns: 8, DispatchUS: 150, ContextSwitchUS: 360, ContextSwitchPerColumn: true, WeightGBps: 56, MaxContexts: 16},
	}
	for name, w := range want {
		got, err := c.Target(name)
		if err != nil || *got != w {
			t.Errorf("Target(%s) = %+v, %v; want %+v", name, got, err, w)
		}
	}
	if _, err := c.Target("xdna3"); err == nil {
		t.Error("Target(xdna3) succeeded")
	}
	tiles := map[planar.Type][]int{
		planar.Q4_0: {256, 128}, planar.Q8_0: {256, 128}, planar.Q5_0: {256, 128},
		planar.Q4_K: {256}, planar.Q5_K: {256}, planar.Q6_K: {256},
		planar.F16: nil, planar.BF16: nil, planar.F32: nil,
	}
	for _, target := range []string{"xdna1", "xdna2"} {
		for typ, w := range tiles {
			var got []int
			for _, s := range c.Slots {
				if s.Target == target && s.Type == typ {
					got = append(got, s.KTile)
					if s.Columns != want[target].Columns || s.MinN != 257 || s.Kernel != "MLIR_AIE" {
						t.Errorf("slot %s: columns %d min_n %d kernel %q", s.Name, s.Columns, s.MinN, s.Kernel)
					}
				}
			}
			if len(got) != len(w) || (len(w) > 0 && (got[0] != w[0] || got[len(got)-1] != w[len(w)-1])) {
				t.Errorf("%s %s k_tiles %v, want %v", target, typ, got, w)
			}
		}
	}
	if s := c.Slot("xdna2-q6_k-k256"); s == nil || c.XCLBINPath(s) != filepath.FromSlash("kernels/xdna2/gemv_q6_k_k256.xclbin") {
		t.Errorf("Slot(xdna2-q6_k-k256) = %+v", s)
	}
	// Default returns a fresh copy each time.
	c.Slots[0].KTile = 1
	if Default().Slots[0].KTile == 1 {
		t.Error("Default shares state between calls")
	}
}

func TestDefaultSelections(t *testing.T) {
	c := Default()
	cases := []struct {
		target string
		typ    planar.Type
		n, k   int
		slot   string // "" = CPU
	}{
		{"xdna2", planar.Q4_K, 4096, 4096, "xdna2-q4_k-k256"},
		{"xdna2", planar.Q6_K, 128256, 4096, "xdna2-q6_k-k256"},
		{"xdna1", planar.Q4_0, 4096, 4096, "xdna1-q4_0-k256"},
		{"xdna1", planar.Q4_0, 4096, 1408, "xdna1-q4_0-k128"},
		{"xdna1", planar.Q8_0, 11008, 4096, "xdna1-q8_0-k256"},
		{"xdna1", planar.Q5_0, 2432, 2432, "xdna1-q5_0-k128"},
		{"xdna1", planar.Q4_0, 4096, 1440, ""}, // 45 blocks of 32
		{"xdna1", planar.F16, 4096, 4096, ""},
		{"xdna2", planar.Q4_K, 256, 4096, ""},
		{"xdna2", planar.Q4_K, 262145, 4096, ""},
	}
	for _, tc := range cases {
		ch := c.Select(tc.target, tc.typ, tc.n, tc.k, -1)
		got := ""
		if ch.Slot != nil {
			got = ch.Slot.Name
		}
		if got != tc.slot {
			t.Errorf("Select(%s, %s, N=%d, K=%d) = %q (%s), want %q", tc.target, tc.typ, tc.n, tc.k, got, ch.Reason, tc.slot)
		}
	}
}

func TestSelectEdges(t *testing.T) {
	c := parseTest(t)
	cases := []struct {
		name   string
		typ    planar.Type
		n, k   int
		cpuMax int
		slot   string // "" = CPU
		ktile  int
		reason string // substring
	}{
		// CPU threshold.
		{"N == cpu_max_n", planar.Q4_0, 256, 512, -1, "", 512, "N=256 <= cpu-max-n 256"},
		{"N == cpu_max_n+1", planar.Q4_0, 257, 512, -1, "q4_0-k128", 128, "q4_0-k128"},
		{"explicit threshold", planar.Q4_0, 600, 512, 600, "", 512, "N=600 <= cpu-max-n 600"},
		{"explicit threshold+1", planar.Q4_0, 601, 512, 600, "q4_0-k256", 256, ""},
		// MIN_N / MAX_N of q4_0-k256 [300, 1000] and q4_0-k128 [257, 2000].
		{"k256 min_n-1", planar.Q4_0, 299, 512, -1, "q4_0-k128", 128, ""},
		{"k256 min_n", planar.Q4_0, 300, 512, -1, "q4_0-k256", 256, ""},
		{"k256 max_n", planar.Q4_0, 1000, 512, -1, "q4_0-k256", 256, ""},
		{"k256 max_n+1", planar.Q4_0, 1001, 512, -1, "q4_0-k128", 128, ""},
		{"k128 max_n", planar.Q4_0, 2000, 512, -1, "q4_0-k128", 128, ""},
		{"k128 max_n+1", planar.Q4_0, 2001, 512, -1, "", 512, "N=2001 outside every [min_n, max_n]"},
		{"k128 min_n-1 below threshold 0", planar.Q4_0, 256, 512, 0, "", 512, "N=256 outside every"},
		// K-tile divisibility.
		{"K = 256", planar.Q4_0, 500, 256, -1, "q4_0-k256", 256, ""},
		{"K = 128", planar.Q4_0, 500, 128, -1, "q4_0-k128", 128, ""},
		{"K = 384 (128 only)", planar.Q4_0, 500, 384, -1, "q4_0-k128", 128, ""},
		{"K = 640 (128 only)", planar.Q4_0, 500, 640, -1, "q4_0-k128", 128, ""},
		{"K = 768 (both)", planar.Q4_0, 500, 768, -1, "q4_0-k256", 256, ""},
		{"K = 96 (blocks, no tile)", planar.Q4_0, 500, 96, -1, "", 96, "K=96 is not a multiple of any xdna1 Q4_0 k_tile (256, 128)"},
		{"K = 100 (not blocks)", planar.Q4_0, 500, 100, -1, "", 0, "no planar layout"},
		{"K range with N outside", planar.Q4_0, 2001, 384, -1, "", 384, "[257, 2000]"},
		// Formats and targets.
		{"no slot for F16", planar.F16, 500, 512, -1, "", 512, "no xdna1 slot for F16"},
		{"no format for Q4_1", planar.Q4_1, 500, 512, -1, "", 0, "no xdna1 slot for Q4_1; no planar layout"},
		{"bad shape", planar.Q4_0, 500, 0, -1, "", 0, "bad shape"},
		// Ties: same cost and k_tile, the name that sorts first.
		{"tie by name", planar.Q8_0, 400, 256, -1, "q8_0-k256", 256, ""},
		// Cost beats tie-breaks: the narrow k256 slot packs 1280 bytes against
		// 1536 for the k512 one.
		{"cheapest wins", planar.Q4_K, 4, 512, 0, "q4_k-k256-narrow", 256, ""},
		// Equal cost (1212416 bytes each): the larger k_tile.
		{"tie by k_tile", planar.Q4_K, 4096, 512, 0, "q4_k-k512", 512, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch := c.Select("xdna1", tc.typ, tc.n, tc.k, tc.cpuMax)
			got := ""
			if ch.Slot != nil {
				got = ch.Slot.Name
			}
			if got != tc.slot || ch.KTile != tc.ktile || !strings.Contains(ch.Reason, tc.reason) || ch.CPU() != (tc.slot == "") {
				t.Errorf("got slot %q k_tile %d reason %q; want %q, %d, containing %q", got, ch.KTile, ch.Reason, tc.slot, tc.ktile, tc.reason)
			}
			if ch.Slot == nil {
				if ch.Predicted != 0 {
					t.Errorf("CPU choice predicts %v", ch.Predicted)
				}
				return
			}
			g := planar.Geometry{Type: tc.typ, N: tc.n, K: tc.k, Columns: ch.Slot.Columns, KTile: ch.KTile}
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
			if want := c.Targets["xdna1"].Predict(1, int64(g.Size()), 0); ch.Predicted != want {
				t.Errorf("Predicted %v, want %v", ch.Predicted, want)
			}
		})
	}
	if ch := c.Select("xdna2", planar.Q4_0, 500, 512, -1); ch.Slot != nil || !strings.Contains(ch.Reason, `unknown target "xdna2"`) {
		t.Errorf("unknown target: %+v", ch)
	}
}

// TestSelectDeterministic shuffles the slot order and expects the same
// choice, reason and all, for every shape.
func TestSelectDeterministic(t *testing.T) {
	base := Default()
	rng := rand.New(rand.NewPCG(1, 2))
	types := append(planar.Supported(), planar.Q4_1)
	ns := []int{1, 256, 257, 4095, 4096, 262144, 262145}
	ks := []int{32, 128, 256, 384, 1408, 4096, 14336}
	for round := range 5 {
		c := Default()
		rng.Shuffle(len(c.Slots), func(i, j int) { c.Slots[i], c.Slots[j] = c.Slots[j], c.Slots[i] })
		for _, target := range []string{"xdna1", "xdna2"} {
			for _, typ := range types {
				for _, n := range ns {
					for _, k := range ks {
						a, b := base.Select(target, typ, n, k, -1), c.Select(target, typ, n, k, -1)
						if (a.Slot == nil) != (b.Slot == nil) || (a.Slot != nil && a.Slot.Name != b.Slot.Name) ||
							a.KTile != b.KTile || a.Reason != b.Reason || a.Predicted != b.Predicted {
							t.Fatalf("round %d %s %s N=%d K=%d: %+v vs %+v", round, target, typ, n, k, a, b)
						}
					}
				}
			}
		}
	}
}

func TestPredict(t *testing.T) {
	c := Default()
	x1, _ := c.Target("xdna1")
	x2, _ := c.Target("xdna2")
	cases := []struct {
		t        *Target
		d        int
		bytes    int64
		switches int
		want     time.Duration
	}{
		{x2, 1, 56_000_000, 0, 1150 * time.Microsecond}, // 150 us + 56 MB at 56 GB/s
		{x2, 0, 0, 1, 2880 * time.Microsecond},          // 360 us x 8 columns
		{x1, 0, 0, 1, 1300 * time.Microsecond},
		{x1, 2, 32_000_000, 0, 1340 * time.Microsecond}, // 2 x 170 us + 1 ms
		{x1, 0, 0, 0, 0},
		{x1, math.MaxInt, math.MaxInt64, math.MaxInt, math.MaxInt64}, // saturates
	}
	for _, tc := range cases {
		if got := tc.t.Predict(tc.d, tc.bytes, tc.switches); got != tc.want {
			t.Errorf("%s.Predict(%d, %d, %d) = %v, want %v", tc.t.Name, tc.d, tc.bytes, tc.switches, got, tc.want)
		}
	}
}

func TestStrictSchema(t *testing.T) {
	cases := []struct {
		name     string
		old, new string // replace the first old in testCatalog by new
		want     []string
		invalid  bool // errors.Is(err, ErrInvalid)
	}{
		{"unknown top-level key", "cpu_max_n = 256", "cpu_max_n = 256\ncolour = \"red\"", []string{"unknown key colour"}, true},
		{"unknown target key", "max_contexts = 6", "max_contexts = 6\ncolums = 4", []string{"targets.xdna1.colums"}, true},
		{"unknown slot keys", "k_tile = 256", "k_tile = 256\nk_tiles = [256]\nmin = 3", []string{"unknown keys slots.k_tiles, slots.min"}, true},
		{"bad type", "columns = 4", `columns = "four"`, []string{"test.toml", "line 5", "targets.xdna1.columns", "incompatible types"}, false},
		{"syntax error", "k_tile = 128", "k_tile = = 128", []string{"test.toml:25:"}, false},
		{"duplicate key", "k_tile = 128", "k_tile = 128\nk_tile = 64", []string{"test.toml:26:", "k_tile"}, false},
		{"integer overflow", "max_n = 2000", "max_n = 99999999999999999999", []string{"test.toml:27:"}, false},
		{"duplicate slot", `name = "q4_0-k128"`, `name = "q4_0-k256"`, []string{`slot 1 "q4_0-k256": duplicate name (also slot 0)`}, true},
		{"slot target undefined", `target = "xdna1"`, `target = "xdna2"`, []string{`target "xdna2" is not defined`}, true},
		{"unknown target table", "[targets.xdna1]", "[targets.xdna3]", []string{`unknown target "xdna3"`}, true},
		{"unknown format", `format = "Q4_0"`, `format = "Q9_9"`, []string{`format "Q9_9"`}, true},
		{"format without planar layout", `format = "Q4_0"`, `format = "Q4_1"`, []string{`format "Q4_1"`, "unsupported"}, true},
		{"k_tile not a block multiple", "k_tile = 256", "k_tile = 100", []string{"k_tile 100 is not a positive multiple of the Q4_0 block size 32"}, true},
		{"k_tile zero", "k_tile = 256", "k_tile = 0", []string{"k_tile 0"}, true},
		{"k_tile negative", "k_tile = 256", "k_tile = -256", []string{"k_tile -256"}, true},
		{"K-quant k_tile 128", "k_tile = 512", "k_tile = 128", []string{"Q4_K block size 256"}, true},
		{"min_n zero", "min_n = 300", "min_n = 0", []string{"min_n 0"}, true},
		{"min_n above max_n", "min_n = 300", "min_n = 1001", []string{"min_n 1001, max_n 1000"}, true},
		{"dispatch zero", "dispatch_us = 100", "dispatch_us = 0", []string{"dispatch_us 0"}, true},
		{"switch negative", "context_switch_us = 1000", "context_switch_us = -1.5", []string{"context_switch_us -1.5"}, true},
		{"bandwidth inf", "weight_gbps = 1", "weight_gbps = inf", []string{"weight_gbps +Inf"}, true},
		{"bandwidth nan", "weight_gbps = 1", "weight_gbps = nan", []string{"weight_gbps NaN"}, true},
		{"max_contexts zero", "max_contexts = 6", "max_contexts = 0", []string{"max_contexts 0"}, true},
		{"columns wrong for target", "columns = 4", "columns = 8", []string{"columns 8, but xdna1 has 4"}, true},
		{"slot columns too many", "columns = 1", "columns = 5", []string{"columns 5 outside [1, 4]"}, true},
		{"cpu_max_n negative", "cpu_max_n = 256", "cpu_max_n = -1", []string{"cpu_max_n -1"}, true},
		{"version missing", `version = "test-1"`, "", []string{"version missing"}, true},
		{"kernel missing", `kernel = "MLIR_AIE"`, "", []string{"kernel missing"}, true},
		{"xclbin missing", `xclbin = "kernels/q4_0_k256.xclbin"`, "", []string{"xclbin missing"}, true},
		{"two problems at once", "k_tile = 256\nmin_n = 300", "k_tile = 100\nmin_n = 0", []string{"k_tile 100", "min_n 0"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(testCatalog, tc.old) {
				t.Fatalf("test catalog lacks %q", tc.old)
			}
			src := strings.Replace(testCatalog, tc.old, tc.new, 1)
			_, err := Parse([]byte(src), "test.toml")
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if errors.Is(err, ErrInvalid) != tc.invalid {
				t.Errorf("errors.Is(%v, ErrInvalid) = %v, want %v", err, !tc.invalid, tc.invalid)
			}
			if strings.Contains(err.Error(), "failed to") {
				t.Errorf("error %q says \"failed to\"", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.toml")
	if err := os.WriteFile(path, []byte(testCatalog), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir != dir || c.XCLBINPath(c.Slot("q4_0-k256")) != filepath.Join(dir, "kernels", "q4_0_k256.xclbin") {
		t.Errorf("Dir %q, path %q", c.Dir, c.XCLBINPath(c.Slot("q4_0-k256")))
	}
	if c.Slot("nope") != nil {
		t.Error("Slot(nope) != nil")
	}
	if _, err := Load(filepath.Join(dir, "missing.toml")); err == nil {
		t.Error("Load(missing) succeeded")
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("version = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Load(bad) = %v, want an error naming the file", err)
	}
}

// FuzzParse feeds arbitrary text to Parse. It must not panic, and a catalog
// it accepts must validate again and give selections that honour the slot
// they name.
func FuzzParse(f *testing.F) {
	f.Add(defaultTOML)
	f.Add([]byte(testCatalog))
	f.Add([]byte("version = \"x\"\n[targets.xdna2]\ncolumns = 8\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.toml")
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted catalog fails Validate: %v", err)
		}
		for _, s := range c.Slots {
			for _, n := range []int{1, s.MinN - 1, s.MinN, s.MaxN, s.MaxN + 1, 4096} {
				for _, k := range []int{s.KTile, 2 * s.KTile, 4096, 4096 + 32} {
					ch := c.Select(s.Target, s.Type, n, k, -1)
					if ch.Slot == nil {
						continue
					}
					if ch.Slot.Type != s.Type || ch.Slot.Target != s.Target || k%ch.KTile != 0 ||
						n < ch.Slot.MinN || n > ch.Slot.MaxN || n <= c.CPUMaxN {
						t.Fatalf("Select(%s, %s, %d, %d) chose %+v", s.Target, s.Type, n, k, ch.Slot)
					}
				}
			}
		}
	})
}

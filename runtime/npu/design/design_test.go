package design

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/target"
)

// catalogDesigns returns the design of every slot of the default catalog.
func catalogDesigns(t *testing.T) []*Design {
	t.Helper()
	var ds []*Design
	for _, s := range kernelsel.Default().Slots {
		tg, err := target.ByName(s.Target)
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(tg, s.Type, s.KTile)
		if err != nil {
			t.Fatalf("slot %s: %v", s.Name, err)
		}
		if d.Name() != s.Name {
			t.Errorf("slot %s: design named %s", s.Name, d.Name())
		}
		ds = append(ds, d)
	}
	return ds
}

// TestCatalogSlots: every slot of the catalog has a design within its
// target's limits; the most any tile uses of each limit is logged.
func TestCatalogSlots(t *testing.T) {
	ds := catalogDesigns(t)
	if len(ds) != 18 {
		t.Errorf("%d slots, want 18", len(ds))
	}
	for _, d := range ds {
		u := d.Usage()
		t.Logf("%s: %s", d.Name(), d.UsageString())
		for _, k := range []target.TileKind{target.Mem, target.Core} {
			f := d.Target.Tile(k)
			if u[k].BDs > f.BDs || u[k].Locks > f.Locks || u[k].Memory > f.Memory || u[k].S2MM > f.S2MM || u[k].MM2S > f.MM2S {
				t.Errorf("%s %s: %+v beyond %+v", d.Name(), k, u[k], f)
			}
		}
	}
}

// TestValidateRefuses breaks a valid design in each way the hardware or
// the toolchain would refuse, including the landed IRON design's defects
// (kernels/common/design.py, since removed: this design and its MLIR
// replace it; git history keeps it): three input fifos per core (a
// compute tile has two S2MM channels), three MM2S channels filled on shim
// (0,0) (a shim has two), and join offsets in bytes where the link takes
// element offsets (the slices point past the object).
func TestValidateRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		mut  func(d *Design)
		want []string
	}{
		{"three input channels on a core (design.py: hdr, act, w)", func(d *Design) {
			core := d.Tile(0, 2)
			ch := core.channel(S2MM, 2)
			core.bd(ch, &BD{Buf: core.Buffers[0], Len: 64})
		}, []string{"core (0,2)", "3 S2MM channels", "a core has 2"}},
		{"three MM2S fills on shim (0,0) (design.py: hdr, act, w0)", func(d *Design) {
			d.Shim.ActCh = 2
		}, []string{"shim map", "MM2S channel 2", "a shim tile has 2"}},
		{"join offsets in bytes (design.py: k*MAX_TOKENS*rows_core*4)", func(d *Design) {
			mem := d.Tile(0, 1)
			b := mem.Channels[1].BDs[0] // the join of core 0's outputs
			b.Off = 3 * 4 * b.Len
		}, []string{"memtile (0,1)", "run past buffer"}},
		{"a seventh memtile S2MM channel", func(d *Design) {
			mem := d.Tile(0, 1)
			ch := mem.channel(S2MM, 6)
			mem.bd(ch, &BD{Buf: mem.Buffers[0], Len: 64})
		}, []string{"memtile (0,1)", "S2MM channel 6", "channels 0..5"}},
		{"a BD of an even memtile channel from the odd pool", func(d *Design) {
			d.Tile(0, 1).Channels[0].BDs[0].ID = 30
		}, []string{"memtile (0,1) MM2S channel 0 BD 30", "may chain BDs 0..23"}},
		{"a core BD id twice", func(d *Design) {
			core := d.Tile(1, 3)
			core.Channels[1].BDs[0].ID = core.Channels[0].BDs[0].ID
		}, []string{"core (1,3)", "already"}},
		{"a seventeenth core lock", func(d *Design) {
			core := d.Tile(0, 4)
			for len(core.Locks) < 17 {
				core.lock("extra", 0)
			}
		}, []string{"core (0,4)", "17 locks", "has 16"}},
		{"a lock past its maximum", func(d *Design) { d.Tile(0, 5).Locks[0].Init = 64 }, []string{"core (0,5)", "starts at 64", "0..63"}},
		{"a buffer over the stack", func(d *Design) { d.Tile(0, 2).Buffers[0].Addr = 512 }, []string{"core (0,2)", "overlaps the", "stack"}},
		{"buffers past the data memory", func(d *Design) {
			core := d.Tile(0, 2)
			core.Buffers[len(core.Buffers)-1].Addr = 63 << 10
		}, []string{"core (0,2)", "a core has 65536"}},
		{"a destination fed twice", func(d *Design) {
			d.Flows[0].Dsts = append(d.Flows[0].Dsts, d.Flows[1].Dsts[0])
		}, []string{"both feed"}},
		{"a channel on no flow", func(d *Design) { d.Flows = d.Flows[1:] }, []string{"on no flow"}},
		{"a piece passed where a record goes", func(d *Design) {
			core := d.Tile(0, 2)
			Walk(core.Program.Body, func(s Stmt) {
				if c, ok := s.(*Call); ok && len(c.Args) > 1 {
					c.Args[1] = c.Args[0]
				}
			})
		}, []string{"core (0,2) program", "passes w0_2_0"}},
	} {
		d, err := New(target.XDNA1, planar.Q4_0, 256)
		if err != nil {
			t.Fatal(err)
		}
		c.mut(d)
		err = d.Validate()
		if !errors.Is(err, ErrDesign) {
			t.Errorf("%s: %v, want ErrDesign", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
}

// TestHeaderRoundTrip: a header parses back to itself; each wrong word is
// refused naming it.
func TestHeaderRoundTrip(t *testing.T) {
	d, err := New(target.XDNA2, planar.Q6_K, 256)
	if err != nil {
		t.Fatal(err)
	}
	h := d.NewHeader(3, 5, []int{300, 300, 300, 300, 300, 300, 300, 299})
	b := make([]byte, d.RecordBytes())
	h.Put(b)
	got, err := d.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(*got) != fmt.Sprint(h) {
		t.Errorf("parsed %+v, put %+v", *got, h)
	}
	if h.Blocks != 2 || h.ColBlocks(7) != 2 {
		t.Errorf("300 rows in blocks of %d: %d blocks", d.BlockRows(), h.Blocks)
	}
	for _, c := range []struct {
		word int
		val  uint32
		want string
	}{{0, 1, "magic"}, {HdrType, 2, "type"}, {HdrT, 128, "K-tile"}, {HdrRows, 32, "rows a piece"},
		{HdrTokens, 17, "tokens"}, {HdrColumns, 9, "columns"}, {HdrColBlock + 1, 7, "column 1"}, {HdrBlocks, 3, "row blocks"}} {
		bb := append([]byte(nil), b...)
		bb[4*c.word], bb[4*c.word+1], bb[4*c.word+2], bb[4*c.word+3] = byte(c.val), byte(c.val>>8), 0, 0
		if _, err := d.ParseHeader(bb); !errors.Is(err, ErrHeader) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("word %d = %d: %v, want an error naming %s", c.word, c.val, err, c.want)
		}
	}
}

package npu_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
)

// validDesc is a two-column Q4_K run: tiles 1..2 of 4, 3 tokens.
func validDesc() (*npu.Desc, npu.Limits) {
	const T = 256
	g0 := npu.RunGeometry(planar.Q4_K, 5, T, 2)
	g1 := npu.RunGeometry(planar.Q4_K, 4, T, 2)
	w0, w1 := 2*g0.TileBytes(5), 2*g1.TileBytes(4)
	al := npu.ActLayoutOf(planar.Q4_K, 4*T)
	d := &npu.Desc{
		Type: planar.Q4_K, K: 4 * T, N: 9, T: T, Tile0: 1, Tiles: 2, Tokens: 3,
		ActOff: 0, ActStride: al.Stride, OutOff: 0, OutStride: 4 * 9, Flags: npu.FlagAccumulate,
		Cols: []npu.Column{{Row0: 0, Rows: 5, WOff: 0, WBytes: w0}, {Row0: 5, Rows: 4, WOff: w0, WBytes: w1}},
	}
	return d, npu.Limits{Columns: 4, WBytes: w0 + w1, ActBytes: 3 * al.Stride, OutBytes: 3 * 4 * 9}
}

func encode(d *npu.Desc) []byte {
	buf := make([]byte, 4*npu.MaxDescWords)
	n := d.Encode(buf)
	return buf[:n]
}

// TestDescRoundTrip: Encode then ParseDesc gives the descriptor back.
func TestDescRoundTrip(t *testing.T) {
	d, lim := validDesc()
	b := encode(d)
	got, err := npu.ParseDesc(b, d.Words(), lim)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != d.Type || got.K != d.K || got.N != d.N || got.Tile0 != d.Tile0 || got.Tiles != d.Tiles ||
		got.Tokens != d.Tokens || got.Flags != d.Flags || len(got.Cols) != 2 || got.Cols[1] != d.Cols[1] {
		t.Fatalf("round trip: %+v, want %+v", got, d)
	}
}

// TestDescValidation: every kind of bad descriptor is refused with
// ErrDescriptor, whether the check word is left stale or recomputed.
func TestDescValidation(t *testing.T) {
	d0, lim := validDesc()
	words := d0.Words()
	for _, c := range []struct {
		name string
		mut  func(d *npu.Desc, lim *npu.Limits)
	}{
		{"unknown type", func(d *npu.Desc, _ *npu.Limits) { d.Type = 99 }},
		{"type without a format", func(d *npu.Desc, _ *npu.Limits) { d.Type = planar.Q2_K }},
		{"K not a multiple of T", func(d *npu.Desc, _ *npu.Limits) { d.K = 1000 }},
		{"T not a multiple of the block", func(d *npu.Desc, _ *npu.Limits) { d.T, d.K = 128, 512 }},
		{"tile past K", func(d *npu.Desc, _ *npu.Limits) { d.Tile0 = 3 }},
		{"no tiles", func(d *npu.Desc, _ *npu.Limits) { d.Tiles = 0 }},
		{"no tokens", func(d *npu.Desc, _ *npu.Limits) { d.Tokens = 0 }},
		{"too many tokens", func(d *npu.Desc, _ *npu.Limits) { d.Tokens = npu.MaxTokens + 1 }},
		{"reserved flag", func(d *npu.Desc, _ *npu.Limits) { d.Flags |= 2 }},
		{"activation stride", func(d *npu.Desc, _ *npu.Limits) { d.ActStride += 64 }},
		{"activations unaligned", func(d *npu.Desc, _ *npu.Limits) { d.ActOff = 4 }},
		{"activations past bo1", func(d *npu.Desc, l *npu.Limits) { l.ActBytes-- }},
		{"outputs past bo2", func(d *npu.Desc, l *npu.Limits) { l.OutBytes -= 4 }},
		{"output stride short", func(d *npu.Desc, _ *npu.Limits) { d.OutStride = 4 * 8 }},
		{"output unaligned", func(d *npu.Desc, _ *npu.Limits) { d.OutOff = 2 }},
		{"too many columns for the device", func(d *npu.Desc, l *npu.Limits) { l.Columns = 1 }},
		{"rows past N", func(d *npu.Desc, _ *npu.Limits) { d.Cols[1].Rows = 5 }},
		{"rows overlap", func(d *npu.Desc, _ *npu.Limits) { d.Cols[1].Row0 = 4 }},
		{"empty column", func(d *npu.Desc, _ *npu.Limits) { d.Cols[1].Rows = 0 }},
		{"run size", func(d *npu.Desc, _ *npu.Limits) { d.Cols[0].WBytes -= 64 }},
		{"run unaligned", func(d *npu.Desc, _ *npu.Limits) { d.Cols[1].WOff += 4 }},
		{"run past bo0", func(d *npu.Desc, l *npu.Limits) { l.WBytes -= 64 }},
		{"runs overlap", func(d *npu.Desc, _ *npu.Limits) { d.Cols[1].WOff -= 64 }},
	} {
		d, l := validDesc()
		c.mut(d, &l)
		b := encode(d)
		if _, err := npu.ParseDesc(b, d.Words(), l); !errors.Is(err, npu.ErrDescriptor) {
			t.Errorf("%s: %v, want ErrDescriptor", c.name, err)
		}
	}
	// Any word changed without the check word: refused.
	good := encode(d0)
	for i := 0; i < words; i++ {
		if i == 15 {
			continue
		}
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint32(b[4*i:], binary.LittleEndian.Uint32(b[4*i:])^0x100)
		if _, err := npu.ParseDesc(b, words, lim); !errors.Is(err, npu.ErrDescriptor) {
			t.Errorf("word %d flipped: %v, want ErrDescriptor", i, err)
		}
	}
	// Two words swapped: refused by the rotating check.
	b := append([]byte(nil), good...)
	copy(b[4*3:4*4], good[4*5:4*6])
	copy(b[4*5:4*6], good[4*3:4*4])
	if _, err := npu.ParseDesc(b, words, lim); !errors.Is(err, npu.ErrDescriptor) {
		t.Errorf("words swapped: %v, want ErrDescriptor", err)
	}
	for _, w := range []int{0, 15, words - 1, words + 1, npu.MaxDescWords + 1} {
		if _, err := npu.ParseDesc(good, w, lim); !errors.Is(err, npu.ErrDescriptor) {
			t.Errorf("%d words: %v, want ErrDescriptor", w, err)
		}
	}
	if _, err := npu.ParseDesc(good[:len(good)-4], words, lim); !errors.Is(err, npu.ErrDescriptor) {
		t.Errorf("short buffer: %v, want ErrDescriptor", err)
	}
}

// FuzzParseDesc: arbitrary instruction bytes never panic the parser, and a
// descriptor it accepts encodes back to the same bytes.
func FuzzParseDesc(f *testing.F) {
	d, lim := validDesc()
	f.Add(encode(d), d.Words())
	f.Add([]byte{}, 16)
	f.Fuzz(func(t *testing.T, b []byte, words int) {
		got, err := npu.ParseDesc(b, words, lim)
		if err != nil {
			return
		}
		if again := encode(got); string(again) != string(b[:4*words]) {
			t.Fatalf("accepted descriptor does not re-encode to its bytes")
		}
	})
}

// TestPlanChunks checks the splits on the edges: a matrix that fits is one
// chunk; tiles are split evenly; groups are split when one tile of all of
// them does not fit; a group tile larger than the buffer is ErrTooLarge;
// the chunks cover every (group, tile) exactly once.
func TestPlanChunks(t *testing.T) {
	g := planar.Geometry{Type: planar.Q4_0, N: 1000, K: 4096, Columns: 8, KTile: 256}
	per := 0
	for c := 0; c < 8; c++ {
		_, n := g.GroupRows(c)
		per += g.TileBytes(n)
	}
	for _, c := range []struct {
		ring, chunks int
	}{
		{g.Size(), 1},
		{g.Size() - 1, 2},
		{per, 16},
		{per*5 + 1, 4}, // 16 tiles at most 5 per chunk: 4 chunks of 4
		// One tile of all 8 groups does not fit: 3 runs of 2, 3 and 3 groups
		// take 3, 2 and 2 tiles per chunk: 6 + 8 + 8 (2 runs of 4 would take
		// 1 tile per chunk: 32).
		{per - 1, 22},
	} {
		chunks, err := npu.PlanChunks(g, c.ring)
		if err != nil {
			t.Fatalf("ring %d: %v", c.ring, err)
		}
		if len(chunks) != c.chunks {
			t.Errorf("ring %d: %d chunks, want %d", c.ring, len(chunks), c.chunks)
		}
		seen := map[[2]int]int{}
		for _, ch := range chunks {
			if ch.Bytes > c.ring {
				t.Errorf("ring %d: chunk of %d bytes", c.ring, ch.Bytes)
			}
			for gi := ch.Group0; gi < ch.Group0+ch.Groups; gi++ {
				for ti := ch.Tile0; ti < ch.Tile0+ch.Tiles; ti++ {
					seen[[2]int{gi, ti}]++
				}
			}
		}
		if len(seen) != 8*16 {
			t.Errorf("ring %d: chunks cover %d of %d (group, tile) pairs", c.ring, len(seen), 8*16)
		}
		for k, v := range seen {
			if v != 1 {
				t.Errorf("ring %d: %v covered %d times", c.ring, k, v)
			}
		}
	}
	_, n := g.GroupRows(0)
	if _, err := npu.PlanChunks(g, g.TileBytes(n)-1); !errors.Is(err, npu.ErrTooLarge) {
		t.Errorf("group tile larger than the ring: %v, want ErrTooLarge", err)
	}
	// Empty trailing groups (N < C) are skipped.
	small := planar.Geometry{Type: planar.Q8_0, N: 3, K: 64, Columns: 8, KTile: 32}
	chunks, err := npu.PlanChunks(small, 1<<20)
	if err != nil || len(chunks) != 1 || chunks[0].Groups != 3 {
		t.Errorf("N=3 on 8 columns: %+v, %v; want one chunk of 3 groups", chunks, err)
	}
}

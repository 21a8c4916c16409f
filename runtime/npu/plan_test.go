package npu_test

import (
	"errors"
	"testing"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/target"
)

// TestPlanChunks checks the splits on the edges: a matrix that fits is one
// chunk; tiles are split evenly; groups are split when one tile of all of
// them does not fit; a group tile larger than the buffer is ErrTooLarge;
// the chunks cover every (group, tile) exactly once.
func TestPlanChunks(t *testing.T) {
	g := planar.Geometry{Type: planar.Q4_0, N: 1000, K: 4096, Columns: 8, KTile: 256}
	d := dsn(t, g, target.XDNA2)
	per := 0
	for c := 0; c < 8; c++ {
		_, n := g.GroupRows(c)
		per += npu.StagedTileBytes(d, n)
	}
	size := per * g.Tiles()
	for _, c := range []struct {
		ring, chunks int
	}{
		{size, 1},
		{size - 1, 2},
		{per, 16},
		{per*5 + 1, 4}, // 16 tiles at most 5 per chunk: 4 chunks of 4
		// One tile of all 8 groups does not fit: 3 runs of 2, 3 and 3 groups
		// take 3, 2 and 2 tiles per chunk: 6 + 8 + 8 (2 runs of 4 would take
		// 1 tile per chunk: 32).
		{per - 1, 22},
	} {
		chunks, err := npu.PlanChunks(d, g, c.ring)
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
	if _, err := npu.PlanChunks(d, g, npu.StagedTileBytes(d, n)-1); !errors.Is(err, npu.ErrTooLarge) {
		t.Errorf("group tile larger than the ring: %v, want ErrTooLarge", err)
	}
	// Empty trailing groups (N < C) are skipped.
	small := planar.Geometry{Type: planar.Q8_0, N: 3, K: 64, Columns: 8, KTile: 32}
	chunks, err := npu.PlanChunks(dsn(t, small, target.XDNA2), small, 1<<20)
	if err != nil || len(chunks) != 1 || chunks[0].Groups != 3 {
		t.Errorf("N=3 on 8 columns: %+v, %v; want one chunk of 3 groups", chunks, err)
	}
}

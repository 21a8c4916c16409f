package layout

import (
	"math/rand/v2"
	"testing"
)

// TestCombineChecksums checks CombineChecksums against the checksum of
// the joined bytes, for empty and one-byte pieces, lengths around powers
// of two and random splits.
func TestCombineChecksums(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 1<<17)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	cuts := [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {5, 3}, {64, 64}, {4095, 4097}, {1 << 16, 1 << 16}, {0, 1 << 17}, {1 << 17, 0}}
	for range 200 {
		a := rng.IntN(len(data))
		cuts = append(cuts, [2]int{a, rng.IntN(len(data) - a + 1)})
	}
	for _, c := range cuts {
		a, b := data[:c[0]], data[c[0]:c[0]+c[1]]
		want := Checksum(data[:c[0]+c[1]])
		if got := CombineChecksums(Checksum(a), Checksum(b), int64(len(b))); got != want {
			t.Fatalf("pieces of %d and %d bytes: %08x, want %08x", len(a), len(b), got, want)
		}
	}
	// Three pieces, combined left to right, are the whole.
	x, y, z := data[:1000], data[1000:70000], data[70000:]
	got := CombineChecksums(CombineChecksums(Checksum(x), Checksum(y), int64(len(y))), Checksum(z), int64(len(z)))
	if want := Checksum(data); got != want {
		t.Fatalf("three pieces: %08x, want %08x", got, want)
	}
}

package blake3

import (
	"hash"
	"testing"

	zeebo "github.com/zeebo/blake3"
)

// benchHash hashes n bytes in one Write per op (Reset, Write, Sum), as
// the project hashes a file from big reads.
func benchHash(b *testing.B, h hash.Hash, n int) {
	data := input(6, n)
	var sum [Size]byte
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		h.Reset()
		h.Write(data)
		h.Sum(sum[:0])
	}
}

// benchSets benchmarks ours (New) and zeebo's side by side.
func benchSets(b *testing.B, n int) {
	b.Run("ours", func(b *testing.B) { benchHash(b, New(), n) })
	b.Run("zeebo", func(b *testing.B) { benchHash(b, zeebo.New(), n) })
}

func BenchmarkHash64K(b *testing.B) { benchSets(b, 64<<10) }
func BenchmarkHash1M(b *testing.B)  { benchSets(b, 1<<20) }
func BenchmarkHash16M(b *testing.B) { benchSets(b, 16<<20) }

// BenchmarkWrite16M hashes 16 MiB in writes of 32 KiB (io.Copy's buffer).
func BenchmarkWrite16M(b *testing.B) {
	for _, s := range []struct {
		name string
		h    hash.Hash
	}{{"ours", New()}, {"zeebo", zeebo.New()}} {
		b.Run(s.name, func(b *testing.B) {
			data := input(6, 16<<20)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				s.h.Reset()
				for p := data; len(p) > 0; p = p[32<<10:] {
					s.h.Write(p[:32<<10])
				}
				s.h.Sum(nil)
			}
		})
	}
}

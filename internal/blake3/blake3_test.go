package blake3

import (
	"bytes"
	"fmt"
	"hash"
	"math/rand/v2"
	"testing"

	zeebo "github.com/zeebo/blake3"
)

// testSets are the kernel sets the hasher is tested over: the Go set, and
// the assembly set where this build has it and the CPU runs it.
func testSets() []*kernels {
	if asmKernels != nil {
		return []*kernels{goKernels, asmKernels}
	}
	return []*kernels{goKernels}
}

// input is n seeded pseudo-random bytes.
func input(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x626c616b6533))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func zeeboSum(b []byte) []byte {
	h := zeebo.New()
	h.Write(b)
	return h.Sum(nil)
}

// splitWrite writes b to h in pieces of size (size < 0: random sizes up
// to -size).
func splitWrite(h hash.Hash, b []byte, size int, rng *rand.Rand) {
	for len(b) > 0 {
		n := size
		if n < 0 {
			n = 1 + rng.IntN(-size)
		}
		n = min(n, len(b))
		h.Write(b[:n])
		b = b[n:]
	}
}

// testLengths are every length up to 4 KiB and 1 byte either side of
// every chunk count up to 66, and of every multiple of 16 chunks (a
// kernel call) up to 70 of them, past the largest subtree Write hashes in
// one go (maxGroups = 64 calls).
func testLengths() []int {
	var ls []int
	for n := 0; n <= 4096+1; n++ {
		ls = append(ls, n)
	}
	for c := 5; c <= 66; c++ {
		ls = append(ls, c*chunkLen-1, c*chunkLen, c*chunkLen+1)
	}
	for g := 5; g <= 70; g++ {
		ls = append(ls, g*batchLen-1, g*batchLen, g*batchLen+1)
	}
	return ls
}

// TestLengthsMatchZeebo: one Write of every test length gives zeebo's
// digest, and so does Sum again after Reset and the same Write.
func TestLengthsMatchZeebo(t *testing.T) {
	data := input(1, 70*batchLen+1)
	for _, k := range testSets() {
		h := newHasher(k)
		for _, n := range testLengths() {
			want := zeeboSum(data[:n])
			h.Reset()
			h.Write(data[:n])
			if got := h.Sum(nil); !bytes.Equal(got, want) {
				t.Fatalf("%s kernels, %d bytes: %x, zeebo %x", k.name, n, got, want)
			}
		}
	}
}

// TestSplitsMatchZeebo: random lengths up to 8 MiB written in pieces of
// 1, 63, 64, 65, 1023, 1024, 1025, 16383, 16384, 16385 bytes and of
// random sizes, with Sum called mid-stream (compared with zeebo's on the
// same prefix) and twice at the end.
func TestSplitsMatchZeebo(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	data := input(4, 8<<20)
	sizes := []int{1, 63, 64, 65, 1023, 1024, 1025, 16383, 16384, 16385, -100, -5000, -70000, -3 << 20}
	for _, k := range testSets() {
		for i := range 40 {
			n := rng.IntN(len(data) + 1)
			if i%2 == 0 {
				n = rng.IntN(300 << 10) // more lengths near the small end
			}
			size := sizes[i%len(sizes)]
			if size == 1 {
				n = min(n, 200<<10) // a write per byte is slow
			}
			b := data[:n]
			h, z := newHasher(k), zeebo.New()
			// A Sum mid-stream, at a random point, must not change
			// the digest at the end.
			mid := rng.IntN(n + 1)
			splitWrite(h, b[:mid], size, rng)
			z.Write(b[:mid])
			if got, want := h.Sum(nil), z.Sum(nil); !bytes.Equal(got, want) {
				t.Fatalf("%s kernels, %d of %d bytes in writes of %d, Sum mid-stream: %x, zeebo %x", k.name, mid, n, size, got, want)
			}
			splitWrite(h, b[mid:], size, rng)
			z.Write(b[mid:])
			want := z.Sum(nil)
			for range 2 {
				if got := h.Sum([]byte("prefix")); !bytes.Equal(got, append([]byte("prefix"), want...)) {
					t.Fatalf("%s kernels, %d bytes in writes of %d (Sum mid-stream at %d): %x, zeebo %x", k.name, n, size, mid, got, want)
				}
			}
		}
	}
}

// TestVectors: the official test vectors' input (byte i is i mod 251) at
// their lengths (BLAKE3 test_vectors.json); the expected digests are
// zeebo's, as there is no network here to fetch the file.
func TestVectors(t *testing.T) {
	lengths := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 63, 64, 65, 127, 128, 129, 1023, 1024, 1025, 2048, 2049, 3072, 3073, 4096, 4097, 5120, 5121, 6144, 6145, 7168, 7169, 8192, 8193, 16384, 31744, 102400}
	data := make([]byte, 102400)
	for i := range data {
		data[i] = byte(i % 251)
	}
	// The one digest the specification's paper and README print:
	// BLAKE3 of the empty input.
	const empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	if got := fmt.Sprintf("%x", zeeboSum(nil)); got != empty {
		t.Fatalf("zeebo's digest of the empty input %s, want %s", got, empty)
	}
	for _, k := range testSets() {
		for _, n := range lengths {
			h := newHasher(k)
			h.Write(data[:n])
			if got, want := h.Sum(nil), zeeboSum(data[:n]); !bytes.Equal(got, want) {
				t.Errorf("%s kernels, vector input of %d bytes: %x, zeebo %x", k.name, n, got, want)
			}
		}
	}
}

// TestNew: New's hash (whatever it runs on) gives zeebo's digests, and
// its sizes.
func TestNew(t *testing.T) {
	h := New()
	if h.Size() != 32 || h.BlockSize() != 64 {
		t.Fatalf("Size %d BlockSize %d, want 32 and 64", h.Size(), h.BlockSize())
	}
	data := input(5, 3<<20+12345)
	h.Write(data[:100])
	h.Reset()
	splitWrite(h, data, 1<<20+7, nil)
	if got, want := h.Sum(nil), zeeboSum(data); !bytes.Equal(got, want) {
		t.Fatalf("New: %x, zeebo %x", got, want)
	}
}

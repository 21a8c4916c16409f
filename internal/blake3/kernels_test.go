package blake3

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// kernelCase is one random input of both kernels. The counters include
// ones whose low word wraps inside the 16 lanes (the lanes past the wrap
// must carry into their high words) and the largest.
type kernelCase struct {
	key     [8]uint32
	chunks  [batchLen]byte
	counter uint64
	flags   uint32
	cvs     [2 * batch][8]uint32
}

var testCounters = []uint64{0, 1, 16, 1<<32 - 1, 1<<32 - 8, 1<<32 - 16, 1<<32 - 17, 1 << 32, 5<<32 - 3, 1<<64 - 16, 1<<64 - 9}

func randKernelCase(rng *rand.Rand, i int) *kernelCase {
	c := new(kernelCase)
	for j := range c.key {
		c.key[j] = rng.Uint32()
	}
	for j := range c.chunks {
		c.chunks[j] = byte(rng.Uint32())
	}
	c.counter = rng.Uint64()
	if i < len(testCounters) {
		c.counter = testCounters[i]
	}
	c.flags = rng.Uint32() & 0xff // the flags are a byte in the specification's use; any bits must pass through
	if i%3 == 0 {
		c.flags = 0
	}
	for j := range c.cvs {
		for w := range c.cvs[j] {
			c.cvs[j][w] = rng.Uint32()
		}
	}
	return c
}

// guarded is an output of the kernels with guard words either side, which
// must stay as they were.
type guarded struct {
	pre  [8]uint32
	out  [batch][8]uint32
	post [8]uint32
}

const guardWord = 0xdeadbeef

func newGuarded() *guarded {
	g := new(guarded)
	for i := range g.pre {
		g.pre[i], g.post[i] = guardWord, guardWord
	}
	return g
}

func (g *guarded) check(t *testing.T, what string) {
	t.Helper()
	for i := range g.pre {
		if g.pre[i] != guardWord || g.post[i] != guardWord {
			t.Fatalf("%s wrote outside its output: %x %x", what, g.pre, g.post)
		}
	}
}

// compareKernels runs k's kernels against the Go kernels on n random
// cases, and checks that out may be the first half of in for parents.
func compareKernels(t *testing.T, k *kernels, n int) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range n {
		c := randKernelCase(rng, i)
		want, got := newGuarded(), newGuarded()
		hashChunksGo(&c.key, &c.chunks, c.counter, c.flags, &want.out)
		k.chunks(&c.key, &c.chunks, c.counter, c.flags, &got.out)
		got.check(t, k.name+" chunks")
		if got.out != want.out {
			t.Fatalf("%s chunks, counter %#x flags %#x:\n got %x\nwant %x", k.name, c.counter, c.flags, got.out, want.out)
		}
		want, got = newGuarded(), newGuarded()
		hashParentsGo(&c.key, &c.cvs, c.flags, &want.out)
		k.parents(&c.key, &c.cvs, c.flags, &got.out)
		got.check(t, k.name+" parents")
		if got.out != want.out {
			t.Fatalf("%s parents, flags %#x:\n got %x\nwant %x", k.name, c.flags, got.out, want.out)
		}
		// In place: out is the first half of in.
		in := c.cvs
		k.parents(&c.key, &in, c.flags, (*[batch][8]uint32)(unsafe.Pointer(&in)))
		if [batch][8]uint32(in[:batch]) != want.out {
			t.Fatalf("%s parents in place, flags %#x:\n got %x\nwant %x", k.name, c.flags, in[:batch], want.out)
		}
	}
}

// TestAsmKernels: the assembly kernels this CPU runs against the Go ones.
func TestAsmKernels(t *testing.T) {
	if asmKernels == nil {
		t.Skip("no assembly kernels run natively here (a build without them, or a CPU without AVX-512 or with it turned off by GODEBUG): TestSimKernels runs them under x86sim where the build has them")
	}
	compareKernels(t, asmKernels, 200)
}

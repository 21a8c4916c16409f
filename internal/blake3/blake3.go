// Package blake3 is BLAKE3-256 (unkeyed, 32-byte digests) for hashing whole
// model files, 16 chunks at a time with AVX-512 where the CPU has it.
//
// New returns a hash.Hash whose digests are exactly those of
// github.com/zeebo/blake3 (the reference the tests compare with) for every
// input and every way of splitting the writes. The tree follows the BLAKE3
// specification (BLAKE3-team/BLAKE3-specs, blake3.pdf, sections 2.1-2.6
// and 5.1): 1024-byte chunks of 64-byte blocks, each chunk
// compressed from the key with its chunk counter, parents over pairs of
// chaining values, the root compressed with the ROOT flag.
//
// The work is cut for the kernels (kernels.go): whole runs of 16 chunks go
// to a kernel that hashes them side by side, and the subtrees they form are
// reduced 16 parents at a time. What is left at the end (the last chunk,
// which may be the root, and the parents above it) runs in scalar Go.
package blake3

import (
	"encoding/binary"
	"hash"
	"math/bits"
)

const (
	// Size is the length of a digest in bytes.
	Size = 32
	// BlockSize is BLAKE3's block length, in bytes.
	BlockSize = blockLen

	blockLen = 64
	chunkLen = 1024

	// batch is the number of chunks (or parents) a kernel call hashes.
	batch    = 16
	batchLen = batch * chunkLen
	// maxGroups bounds a subtree hashed in one go, in kernel calls of 16
	// chunks: 64 calls, 1024 chunks, 1 MiB of input, whose 1024 chaining
	// values (32 KiB) the hasher keeps for the reduction.
	maxGroups = 64

	// maxDepth is the deepest the CV stack can be: one entry per bit of
	// the chunk count, and 2^64 bytes are 2^54 chunks.
	maxDepth = 54
)

// Domain flags (specification, table 3).
const (
	chunkStart = 1 << 0
	chunkEnd   = 1 << 1
	parentFlag = 1 << 2
	rootFlag   = 1 << 3
)

// iv is the key of unkeyed hashing: SHA-256's initial hash value
// (specification, table 1).
var iv = [8]uint32{
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
}

// tree is the part of the state that Sum copies: the chaining values of
// the complete subtrees hashed so far, one per set bit of chunks, the
// largest (leftmost) first.
type tree struct {
	stack  [maxDepth][8]uint32
	depth  int
	chunks uint64 // the chunks under stack
}

// push adds cv, the chaining value of a subtree of 2^level chunks that
// starts at t.chunks (a multiple of 2^level), and merges every pair of
// subtrees it completes: as many as the trailing zero bits of the new
// chunk count above level (specification, section 5.1.2, where level is
// 0). The merges are scalar: a push makes one on average.
func (t *tree) push(cv [8]uint32, level int) {
	t.chunks += 1 << level
	for n := t.chunks >> level; n&1 == 0; n >>= 1 {
		t.depth--
		cv = parentCV(&iv, &t.stack[t.depth], &cv, 0)
	}
	t.stack[t.depth] = cv
	t.depth++
}

// hasher is BLAKE3-256 over the kernels k.
type hasher struct {
	k *kernels
	tree
	// buf holds the input not yet hashed: n bytes that start at chunk
	// tree.chunks. It is never empty once anything was written, since
	// its last chunk may be the root; it is hashed when it is full and
	// more input comes.
	buf [batchLen]byte
	n   int
	cvs [maxGroups * batch][8]uint32 // a subtree's chunk chaining values, reduced in place
}

func newHasher(k *kernels) *hasher { return &hasher{k: k} }

func (h *hasher) Size() int      { return Size }
func (h *hasher) BlockSize() int { return BlockSize }

func (h *hasher) Reset() {
	h.tree = tree{}
	h.n = 0
}

// Write hashes whole runs of 16 chunks as soon as it knows they are not
// the last input, and keeps the rest (at least one byte) in h.buf.
func (h *hasher) Write(p []byte) (int, error) {
	n := len(p)
	if h.n > 0 {
		c := copy(h.buf[h.n:], p)
		h.n += c
		p = p[c:]
		if len(p) == 0 {
			return n, nil
		}
		// h.buf is full and more follows: none of its chunks is the root.
		h.k.chunks(&iv, &h.buf, h.chunks, 0, (*[batch][8]uint32)(h.cvs[:batch]))
		h.reduce(&h.tree, []int{batch})
		h.n = 0
	}
	for len(p) > batchLen {
		// Up to maxGroups kernel calls that leave a byte for the end,
		// cut into subtrees: each the largest that fits and starts at a
		// multiple of its own size, as every subtree of the BLAKE3
		// tree does.
		var sizes [maxSubtrees]int
		ns, groups := 0, 0
		avail := min((len(p)-1)/batchLen, maxGroups)
		for at := h.chunks / batch; groups < avail; ns++ {
			s := 1 << (bits.Len(uint(avail-groups)) - 1)
			for (at+uint64(groups))&uint64(s-1) != 0 {
				s >>= 1
			}
			sizes[ns] = s * batch
			groups += s
		}
		for g := range groups {
			h.k.chunks(&iv, (*[batchLen]byte)(p[g*batchLen:]), h.chunks+uint64(g*batch), 0, (*[batch][8]uint32)(h.cvs[g*batch:]))
		}
		h.reduce(&h.tree, sizes[:ns])
		p = p[groups*batchLen:]
	}
	h.n = copy(h.buf[:], p)
	return n, nil
}

// maxSubtrees bounds the subtrees Write cuts a run of at most maxGroups
// kernel calls into: sizes rising to the alignment, then falling, at
// most two of each power of two up to maxGroups.
const maxSubtrees = 2 * 7

// reduce merges the chaining values in h.cvs, subtrees of sizes[i]
// values (powers of two) one after another that start at chunk t.chunks,
// to each subtree's root, and pushes those in order onto t. The subtrees'
// levels are formed together, 16 parents a kernel call, so that a run of
// small subtrees does not cost a call a level each; a subtree that is
// down to its root leaves the array, which closes up. A call's lanes past
// the last parent hash stale values and write past the level's parents,
// where nothing is read (h.cvs always has the 32 values a call reads).
func (h *hasher) reduce(t *tree, sizes []int) {
	var roots [maxSubtrees][8]uint32
	var levels [maxSubtrees]int
	var done [maxSubtrees]bool
	for level := 0; ; level++ {
		n, off := 0, 0 // the values' count after and before closing up
		for i, s := range sizes {
			switch {
			case done[i]:
				continue
			case s == 1:
				roots[i], levels[i], done[i] = h.cvs[off], level, true
			default:
				copy(h.cvs[n:], h.cvs[off:off+s])
				n += s
			}
			off += s
		}
		if n == 0 {
			break
		}
		for i := 0; i < n/2; i += batch {
			h.k.parents(&iv, (*[2 * batch][8]uint32)(h.cvs[2*i:]), 0, (*[batch][8]uint32)(h.cvs[i:]))
		}
		for i := range sizes {
			sizes[i] /= 2
		}
	}
	for i := range sizes {
		t.push(roots[i], levels[i])
	}
}

// Sum appends the digest of the input so far to b. It does not change the
// state: it works on a copy of the tree (and h.cvs, which is scratch).
func (h *hasher) Sum(b []byte) []byte {
	t := h.tree
	// The chunks in h.buf: the last one (1 to 1024 bytes, or the empty
	// chunk of the empty input) and the whole chunks before it.
	nc := max((h.n+chunkLen-1)/chunkLen, 1)
	last := h.buf[(nc-1)*chunkLen : h.n]
	whole := h.n / chunkLen // the last one too if it is whole
	if whole >= sumKernelMin {
		// Lanes past the whole chunks hash the last chunk's bytes, or
		// stale ones, and are not read.
		h.k.chunks(&iv, &h.buf, t.chunks, 0, (*[batch][8]uint32)(h.cvs[:batch]))
	} else {
		for i := range whole {
			h.cvs[i] = chunkCV(&iv, (*[chunkLen]byte)(h.buf[i*chunkLen:]), t.chunks+uint64(i), 0)
		}
	}
	lastCV := h.cvs[nc-1] // if the last chunk is whole
	// The chunks before the last go on the stack as subtrees of 8, 4,
	// 2 and 1 chunks (t.chunks is a multiple of 16).
	var sizes [4]int
	ns := 0
	for s := batch / 2; s > 0; s /= 2 {
		if (nc-1)&s != 0 {
			sizes[ns] = s
			ns++
		}
	}
	h.reduce(&t, sizes[:ns])

	var m [16]uint32
	var cv [8]uint32
	var counter uint64
	var n, flags uint32
	if len(last) == chunkLen && t.depth > 0 {
		// A whole last chunk that is not the root: its chaining value
		// is hashed already, and the top parent is the root.
		copy(m[:8], t.stack[t.depth-1][:])
		copy(m[8:], lastCV[:])
		t.depth--
		cv, n, flags = iv, blockLen, parentFlag
	} else {
		// The last chunk's blocks but its final one, then its final
		// block, compressed below.
		cv, counter, flags = iv, t.chunks, chunkStart
		for ; len(last) > blockLen; last = last[blockLen:] {
			loadBlock(&m, (*[blockLen]byte)(last))
			cv = compress(&cv, &m, counter, blockLen, flags)
			flags = 0
		}
		var final [blockLen]byte
		copy(final[:], last)
		loadBlock(&m, &final)
		flags |= chunkEnd
		n = uint32(len(last))
	}
	// Then the parents from the top of the stack down; the last
	// compression, of the chunk when it is alone or else of the top
	// parent, is the root (output block 0: counter 0).
	for ; t.depth > 0; t.depth-- {
		cv = compress(&cv, &m, counter, n, flags)
		copy(m[:8], t.stack[t.depth-1][:])
		copy(m[8:], cv[:])
		cv, counter, n, flags = iv, 0, blockLen, parentFlag
	}
	cv = compress(&cv, &m, 0, n, flags|rootFlag)
	var out [Size]byte
	for i, w := range cv {
		binary.LittleEndian.PutUint32(out[4*i:], w)
	}
	return append(b, out[:]...)
}

// sumKernelMin is the number of whole chunks before the last from which
// Sum hashes them with one kernel call (16 lanes) rather than one by one.
const sumKernelMin = 4

// loadBlock reads a block's 16 little-endian message words.
func loadBlock(m *[16]uint32, b *[blockLen]byte) {
	for i := range m {
		m[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
}

// chunkCV is the chaining value of a whole chunk that is not the root,
// hashed from key.
func chunkCV(key *[8]uint32, c *[chunkLen]byte, counter uint64, flags uint32) [8]uint32 {
	cv := *key
	var m [16]uint32
	for b := range chunkLen / blockLen {
		f := flags
		if b == 0 {
			f |= chunkStart
		}
		if b == chunkLen/blockLen-1 {
			f |= chunkEnd
		}
		loadBlock(&m, (*[blockLen]byte)(c[b*blockLen:]))
		cv = compress(&cv, &m, counter, blockLen, f)
	}
	return cv
}

// parentCV is the chaining value of the parent of left and right, not the
// root, hashed from key.
func parentCV(key, left, right *[8]uint32, flags uint32) [8]uint32 {
	var m [16]uint32
	copy(m[:8], left[:])
	copy(m[8:], right[:])
	return compress(key, &m, 0, blockLen, flags|parentFlag)
}

var _ hash.Hash = (*hasher)(nil)

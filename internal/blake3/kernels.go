package blake3

import "math/bits"

// kernels hash 16 chunks or 16 parents side by side. An assembly set and
// the Go set (goKernels, the reference) have the same signatures.
type kernels struct {
	name string
	// chunks sets out[i] to the chaining value of chunk i of in, whole
	// and not the root, hashed from key with chunk counter counter+i
	// (carried into the high word) and flags on every block besides
	// CHUNK_START on the first and CHUNK_END on the last.
	chunks func(key *[8]uint32, in *[batchLen]byte, counter uint64, flags uint32, out *[batch][8]uint32)
	// parents sets out[i] to the chaining value of the parent of in[2i]
	// and in[2i+1], not the root: the block in[2i] || in[2i+1] hashed
	// from key with counter 0 and flags|PARENT. All of in is read before
	// out is written, so out may be the first half of in.
	parents func(key *[8]uint32, in *[2 * batch][8]uint32, flags uint32, out *[batch][8]uint32)
}

// goKernels is the portable set, the reference for the assembly ones.
var goKernels = &kernels{name: "go", chunks: hashChunksGo, parents: hashParentsGo}

// hashChunksGo is the reference of kernels.chunks: chunk by chunk, block
// by block.
func hashChunksGo(key *[8]uint32, in *[batchLen]byte, counter uint64, flags uint32, out *[batch][8]uint32) {
	var m [16]uint32
	for i := range batch {
		cv := *key
		for b := range chunkLen / blockLen {
			f := flags
			if b == 0 {
				f |= chunkStart
			}
			if b == chunkLen/blockLen-1 {
				f |= chunkEnd
			}
			loadBlock(&m, (*[blockLen]byte)(in[i*chunkLen+b*blockLen:]))
			cv = compress(&cv, &m, counter+uint64(i), blockLen, f)
		}
		out[i] = cv
	}
}

// hashParentsGo is the reference of kernels.parents.
func hashParentsGo(key *[8]uint32, in *[2 * batch][8]uint32, flags uint32, out *[batch][8]uint32) {
	var res [batch][8]uint32
	var m [16]uint32
	for i := range batch {
		copy(m[:8], in[2*i][:])
		copy(m[8:], in[2*i+1][:])
		res[i] = compress(key, &m, 0, blockLen, flags|parentFlag)
	}
	*out = res
}

// msgPerm is the permutation of the message words between rounds
// (specification, table 2).
var msgPerm = [16]int{2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8}

// compress is BLAKE3's compression function (specification, section
// 2.2), truncated to the chaining value: the first 8 words of its output,
// which are also the first 32 bytes of a root's output.
func compress(cv *[8]uint32, m *[16]uint32, counter uint64, n, flags uint32) [8]uint32 {
	v := [16]uint32{
		cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7],
		iv[0], iv[1], iv[2], iv[3],
		uint32(counter), uint32(counter >> 32), n, flags,
	}
	w := *m
	for r := range 7 {
		g(&v, 0, 4, 8, 12, w[0], w[1])
		g(&v, 1, 5, 9, 13, w[2], w[3])
		g(&v, 2, 6, 10, 14, w[4], w[5])
		g(&v, 3, 7, 11, 15, w[6], w[7])
		g(&v, 0, 5, 10, 15, w[8], w[9])
		g(&v, 1, 6, 11, 12, w[10], w[11])
		g(&v, 2, 7, 8, 13, w[12], w[13])
		g(&v, 3, 4, 9, 14, w[14], w[15])
		if r < 6 {
			var p [16]uint32
			for i, j := range msgPerm {
				p[i] = w[j]
			}
			w = p
		}
	}
	var out [8]uint32
	for i := range out {
		out[i] = v[i] ^ v[i+8]
	}
	return out
}

// g is the quarter-round (specification, section 2.2).
func g(v *[16]uint32, a, b, c, d int, x, y uint32) {
	v[a] += v[b] + x
	v[d] = bits.RotateLeft32(v[d]^v[a], -16)
	v[c] += v[d]
	v[b] = bits.RotateLeft32(v[b]^v[c], -12)
	v[a] += v[b] + y
	v[d] = bits.RotateLeft32(v[d]^v[a], -8)
	v[c] += v[d]
	v[b] = bits.RotateLeft32(v[b]^v[c], -7)
}

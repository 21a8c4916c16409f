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
	for i := range batch {
		out[i] = chunkCV(key, (*[chunkLen]byte)(in[i*chunkLen:]), counter+uint64(i), flags)
	}
}

// hashParentsGo is the reference of kernels.parents.
func hashParentsGo(key *[8]uint32, in *[2 * batch][8]uint32, flags uint32, out *[batch][8]uint32) {
	var res [batch][8]uint32
	for i := range batch {
		res[i] = parentCV(key, &in[2*i], &in[2*i+1], flags)
	}
	*out = res
}

// compress is BLAKE3's compression function (specification, section
// 2.2), truncated to the chaining value: the first 8 words of its output,
// which are also the first 32 bytes of a root's output. The state is in
// 16 variables rather than an array, which the compiler keeps in
// registers: 170-190 ns a call here, against 350-410 with the array.
func compress(cv *[8]uint32, m *[16]uint32, counter uint64, n, flags uint32) [8]uint32 {
	v0, v1, v2, v3, v4, v5, v6, v7 := cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7]
	v8, v9, v10, v11 := iv[0], iv[1], iv[2], iv[3]
	v12, v13, v14, v15 := uint32(counter), uint32(counter>>32), n, flags
	w := *m
	for r := range 7 {
		v0, v4, v8, v12 = g(v0, v4, v8, v12, w[0], w[1])
		v1, v5, v9, v13 = g(v1, v5, v9, v13, w[2], w[3])
		v2, v6, v10, v14 = g(v2, v6, v10, v14, w[4], w[5])
		v3, v7, v11, v15 = g(v3, v7, v11, v15, w[6], w[7])
		v0, v5, v10, v15 = g(v0, v5, v10, v15, w[8], w[9])
		v1, v6, v11, v12 = g(v1, v6, v11, v12, w[10], w[11])
		v2, v7, v8, v13 = g(v2, v7, v8, v13, w[12], w[13])
		v3, v4, v9, v14 = g(v3, v4, v9, v14, w[14], w[15])
		if r < 6 {
			// The message permutation (specification, table 2).
			w = [16]uint32{w[2], w[6], w[3], w[10], w[7], w[0], w[4], w[13], w[1], w[11], w[12], w[5], w[9], w[14], w[15], w[8]}
		}
	}
	return [8]uint32{v0 ^ v8, v1 ^ v9, v2 ^ v10, v3 ^ v11, v4 ^ v12, v5 ^ v13, v6 ^ v14, v7 ^ v15}
}

// g is the quarter-round (specification, section 2.2).
func g(a, b, c, d, x, y uint32) (uint32, uint32, uint32, uint32) {
	a += b + x
	d = bits.RotateLeft32(d^a, -16)
	c += d
	b = bits.RotateLeft32(b^c, -12)
	a += b + y
	d = bits.RotateLeft32(d^a, -8)
	c += d
	b = bits.RotateLeft32(b^c, -7)
	return a, b, c, d
}

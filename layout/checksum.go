package layout

import "hash/crc32"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the crc32c of b, the checksum of every blob.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateChecksum returns the checksum of the bytes crc is the checksum of
// followed by b: Checksum(append(a, b...)) is UpdateChecksum(Checksum(a), b).
func UpdateChecksum(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// CombineChecksums returns the checksum of a followed by b from the
// checksums of both and the length of b: Checksum(append(a, b...)) is
// CombineChecksums(Checksum(a), Checksum(b), len(b)). It lets the pieces
// of a blob be checksummed apart, in any order (the packer's pipeline packs
// a large blob a run of column groups at a time, on several cores), and
// costs a few hundred operations per power of two of n, whatever the bytes.
//
// A CRC is linear over GF(2): the checksum of a followed by n zero bytes is
// a fixed linear map of the checksum of a (the initial and final
// inversions of crc32 cancel out of the combination), and the checksum of
// a followed by b is that value XOR the checksum of b. The map for n zero
// bytes is built from the one for a single zero bit by repeated squaring of
// its 32x32 bit matrix, applied for each set bit of 8n.
func CombineChecksums(a, b uint32, n int64) uint32 {
	if n <= 0 {
		return a
	}
	// m is the map for one zero bit: shift right by one, and XOR the
	// reflected polynomial where the bit shifted out was set. Column i of
	// a matrix (the image of bit i) is entry i.
	var m, sq gf2Matrix
	m[0] = 0x82f63b78 // crc32.Castagnoli, reflected
	for i := 1; i < 32; i++ {
		m[i] = 1 << (i - 1)
	}
	m.square(&sq) // 2 bits
	sq.square(&m) // 4 bits
	m.square(&sq) // 8 bits: one zero byte
	for cur, next := &sq, &m; ; cur, next = next, cur {
		if n&1 != 0 {
			a = cur.times(a)
		}
		if n >>= 1; n == 0 {
			break
		}
		cur.square(next)
	}
	return a ^ b
}

// gf2Matrix is a 32x32 matrix over GF(2), column i in entry i.
type gf2Matrix [32]uint32

// times returns m applied to the vector v.
func (m *gf2Matrix) times(v uint32) uint32 {
	var r uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			r ^= m[i]
		}
	}
	return r
}

// square sets dst to m times m.
func (m *gf2Matrix) square(dst *gf2Matrix) {
	for i := range m {
		dst[i] = m.times(m[i])
	}
}

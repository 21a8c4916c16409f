package xclbin

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// layout computes the header bytes and the payload offsets of f, checking
// every field that has a fixed width.
func (f *File) layout() (hdr []byte, offs []uint64, length uint64, err error) {
	n := len(f.Sections)
	if n > MaxSections {
		return nil, nil, 0, fmt.Errorf("xclbin: %d sections, more than the limit %d", n, MaxSections)
	}
	if len(f.PlatformVBNV) > vbnvSize {
		return nil, nil, 0, fmt.Errorf("xclbin: platform VBNV of %d bytes, more than %d", len(f.PlatformVBNV), vbnvSize)
	}
	if len(f.DebugBin) > debugBinSize {
		return nil, nil, 0, fmt.Errorf("xclbin: debug bin name of %d bytes, more than %d", len(f.DebugBin), debugBinSize)
	}
	headerEnd := uint64(offSections + max(n, 1)*sectionHeaderSize)
	hdr = make([]byte, headerEnd)
	le := binary.LittleEndian

	copy(hdr[offMagic:], Magic)
	le.PutUint32(hdr[offSigLength:], 0xFFFFFFFF) // -1: unsigned
	fill(hdr[offReserved:offReserved+reservedSize], 0xFF)
	fill(hdr[offKeyBlock:offKeyBlock+keyBlockSize], 0xFF)
	le.PutUint64(hdr[offUniqueID:], f.UniqueID)
	le.PutUint64(hdr[offTimeStamp:], f.TimeStamp)
	le.PutUint64(hdr[offFeatureROM:], f.FeatureROMTimeStamp)
	le.PutUint16(hdr[offVersionPatch:], f.VersionPatch)
	hdr[offVersionMajor] = f.VersionMajor
	hdr[offVersionMinor] = f.VersionMinor
	le.PutUint16(hdr[offMode:], f.Mode)
	le.PutUint16(hdr[offActionMask:], f.ActionMask)
	copy(hdr[offInterfaceUUID:], f.InterfaceUUID[:])
	copy(hdr[offPlatformVBNV:], f.PlatformVBNV)
	copy(hdr[offUUID:], f.UUID[:])
	copy(hdr[offDebugBin:], f.DebugBin)
	le.PutUint32(hdr[offNumSections:], uint32(n))

	offs = make([]uint64, n)
	pos := headerEnd
	for i, s := range f.Sections {
		if len(s.Name) > sectionNameSize {
			return nil, nil, 0, fmt.Errorf("xclbin: section %d (%s) name %q longer than %d bytes", i, s.Kind, s.Name, sectionNameSize)
		}
		pos = align8(pos)
		offs[i] = pos
		h := hdr[offSections+i*sectionHeaderSize:]
		le.PutUint32(h[0:], uint32(s.Kind))
		copy(h[4:4+sectionNameSize], s.Name)
		le.PutUint64(h[24:], pos)
		le.PutUint64(h[32:], uint64(len(s.Data)))
		pos += uint64(len(s.Data))
	}
	le.PutUint64(hdr[offLength:], pos)
	return hdr, offs, pos, nil
}

// WriteTo writes f to w: the header, the section header array, then each
// payload at the next 8-byte-aligned offset with zero padding between, as
// xclbinutil lays them out (without its JSON mirror data). m_length is the
// total size, m_signature_length is -1, the reserved bytes and key block are
// 0xFF. The output depends only on f: nothing is stamped with the time.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	hdr, offs, _, err := f.layout()
	if err != nil {
		return 0, err
	}
	var total int64
	m, err := w.Write(hdr)
	total += int64(m)
	if err != nil {
		return total, err
	}
	var zeros [8]byte
	for i, s := range f.Sections {
		if pad := int64(offs[i]) - total; pad > 0 {
			m, err = w.Write(zeros[:pad])
			total += int64(m)
			if err != nil {
				return total, err
			}
		}
		m, err = w.Write(s.Data)
		total += int64(m)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Marshal returns f in xclbin form (see WriteTo).
func (f *File) Marshal() ([]byte, error) {
	_, _, length, err := f.layout()
	if err != nil {
		return nil, err
	}
	b := bytes.NewBuffer(make([]byte, 0, length))
	if _, err := f.WriteTo(b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func align8(n uint64) uint64 { return (n + 7) &^ 7 }

func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

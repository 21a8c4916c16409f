// Package xclbin reads and writes AMD xclbin ("axlf") containers, the files
// XRT registers on an NPU to create a hardware context.
//
// The layout follows XRT's xclbin.h, pinned at
// https://github.com/Xilinx/XRT/blob/963c58ee224491e191b3be78d76f51e55e152177/src/runtime_src/core/include/xrt/detail/xclbin.h
// and is summarised in reference/npu-stack.md section 2. All integers are
// little-endian.
//
//	off  size  field (struct axlf, 496 bytes with the first section header)
//	0    8     m_magic "xclbin2\0"
//	8    4     m_signature_length (s32, -1 = unsigned)
//	12   28    reserved (0xFF)
//	40   256   m_keyBlock (0xFF when unsigned)
//	296  8     m_uniqueId
//	304  152   m_header (struct axlf_header; m_length at 304, uuid at 416,
//	           m_numSections at 448)
//	456  40*N  m_sections[N] (struct axlf_section_header)
//
// Section payloads follow the header array, each on an 8-byte boundary.
// Readers look sections up by kind, first match first, as XRT's
// get_axlf_section does.
package xclbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// ErrFormat is matched (errors.Is) by every *FormatError.
var ErrFormat = errors.New("malformed xclbin")

// ErrNoSection reports that a file lacks a section a method needs.
var ErrNoSection = errors.New("section not present")

// FormatError reports malformed input and where it is. When Section is empty,
// Offset is a file offset; otherwise it is relative to the start of that
// section's payload.
type FormatError struct {
	Section string // section kind name, such as "IP_LAYOUT"; empty for the container itself
	Offset  int64
	Msg     string
}

func (e *FormatError) Error() string {
	if e.Section == "" {
		return fmt.Sprintf("xclbin: offset 0x%x: %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("xclbin: %s offset 0x%x: %s", e.Section, e.Offset, e.Msg)
}

// Unwrap returns ErrFormat.
func (e *FormatError) Unwrap() error { return ErrFormat }

func fileErr(off int64, format string, args ...any) error {
	return &FormatError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// Magic is the file magic: XRT compares the first 7 bytes.
const Magic = "xclbin2\x00"

// MaxSections is XCLBIN_MAX_NUM_SECTION.
const MaxSections = 0x10000

// Byte offsets of struct axlf (xclbin.h; npu-stack.md section 2.1).
const (
	offMagic         = 0
	offSigLength     = 8
	offReserved      = 12 // 28 bytes
	offKeyBlock      = 40 // 256 bytes
	offUniqueID      = 296
	offHeader        = 304 // struct axlf_header, 152 bytes
	offLength        = offHeader + 0
	offTimeStamp     = offHeader + 8
	offFeatureROM    = offHeader + 16
	offVersionPatch  = offHeader + 24
	offVersionMajor  = offHeader + 26
	offVersionMinor  = offHeader + 27
	offMode          = offHeader + 28
	offActionMask    = offHeader + 30
	offInterfaceUUID = offHeader + 32
	offPlatformVBNV  = offHeader + 48 // 64 bytes
	offUUID          = offHeader + 112
	offDebugBin      = offHeader + 128 // 16 bytes
	offNumSections   = offHeader + 144
	offSections      = 456

	sectionHeaderSize = 40 // kind @0, name[16] @4, offset @24, size @32
	axlfSize          = 496
	reservedSize      = 28
	keyBlockSize      = 256
	vbnvSize          = 64
	debugBinSize      = 16
	sectionNameSize   = 16
)

// SectionKind is enum axlf_section_kind.
type SectionKind uint32

// The section kinds (xclbin.h enum axlf_section_kind).
const (
	Bitstream           SectionKind = 0
	ClearingBitstream   SectionKind = 1
	EmbeddedMetadata    SectionKind = 2 // XML kernel and argument table
	Firmware            SectionKind = 3
	DebugData           SectionKind = 4
	SchedFirmware       SectionKind = 5
	MemTopology         SectionKind = 6 // memory banks
	Connectivity        SectionKind = 7 // kernel argument -> bank
	IPLayout            SectionKind = 8 // compute units, "kernel:instance"
	DebugIPLayout       SectionKind = 9
	DesignCheckPoint    SectionKind = 10
	ClockFreqTopology   SectionKind = 11
	MCS                 SectionKind = 12
	BMC                 SectionKind = 13
	BuildMetadata       SectionKind = 14
	KeyValueMetadata    SectionKind = 15
	UserMetadata        SectionKind = 16
	DNACertificate      SectionKind = 17
	PDI                 SectionKind = 18
	BitstreamPartialPDI SectionKind = 19
	PartitionMetadata   SectionKind = 20
	EmulationData       SectionKind = 21
	SystemMetadata      SectionKind = 22
	SoftKernel          SectionKind = 23
	AskFlash            SectionKind = 24
	AIEMetadata         SectionKind = 25
	GroupTopology       SectionKind = 26 // ASK_GROUP_TOPOLOGY
	GroupConnectivity   SectionKind = 27 // ASK_GROUP_CONNECTIVITY
	SmartNIC            SectionKind = 28
	AIEResources        SectionKind = 29
	Overlay             SectionKind = 30
	VenderMetadata      SectionKind = 31
	AIEPartition        SectionKind = 32 // PDIs and column placement of an NPU design
	IPMetadata          SectionKind = 33
	AIEResourcesBin     SectionKind = 34
	AIETraceMetadata    SectionKind = 35
	DTBO                SectionKind = 36
)

var kindNames = [...]string{
	"BITSTREAM", "CLEARING_BITSTREAM", "EMBEDDED_METADATA", "FIRMWARE", "DEBUG_DATA",
	"SCHED_FIRMWARE", "MEM_TOPOLOGY", "CONNECTIVITY", "IP_LAYOUT", "DEBUG_IP_LAYOUT",
	"DESIGN_CHECK_POINT", "CLOCK_FREQ_TOPOLOGY", "MCS", "BMC", "BUILD_METADATA",
	"KEYVALUE_METADATA", "USER_METADATA", "DNA_CERTIFICATE", "PDI", "BITSTREAM_PARTIAL_PDI",
	"PARTITION_METADATA", "EMULATION_DATA", "SYSTEM_METADATA", "SOFT_KERNEL", "ASK_FLASH",
	"AIE_METADATA", "ASK_GROUP_TOPOLOGY", "ASK_GROUP_CONNECTIVITY", "SMARTNIC", "AIE_RESOURCES",
	"OVERLAY", "VENDER_METADATA", "AIE_PARTITION", "IP_METADATA", "AIE_RESOURCES_BIN",
	"AIE_TRACE_METADATA", "DTBO",
}

// String returns the xclbin.h name of k, such as "AIE_PARTITION".
func (k SectionKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("SectionKind(%d)", uint32(k))
}

// Section is one section of a File.
type Section struct {
	Kind SectionKind
	Name string // m_sectionName, at most 16 bytes; xclbinutil leaves it empty for most kinds
	Data []byte // the payload; after NewReader, a sub-slice of one buffer holding the file
}

// File is a parsed xclbin. The zero value plus Sections is a valid input to
// Marshal.
type File struct {
	UUID     [16]byte  // m_header.uuid, the xclbin UUID (file offset 416)
	Sections []Section // in file order

	// SignatureLength is m_signature_length as read; -1 means unsigned. The
	// writer always produces unsigned files (-1, 0xFF key block).
	SignatureLength     int32
	UniqueID            uint64 // m_uniqueId; xclbinutil writes time(NULL)
	TimeStamp           uint64 // m_timeStamp, seconds since the epoch; 0 unless set
	FeatureROMTimeStamp uint64
	VersionMajor        uint8
	VersionMinor        uint8
	VersionPatch        uint16
	Mode                uint16 // XCLBIN_FLAT = 0
	ActionMask          uint16 // AM_LOAD_AIE 1, AM_LOAD_PDI 2
	InterfaceUUID       [16]byte
	PlatformVBNV        string // at most 64 bytes
	DebugBin            string // m_debug_bin, at most 16 bytes
}

// Section returns the first section of the given kind, or nil.
func (f *File) Section(kind SectionKind) *Section {
	for i := range f.Sections {
		if f.Sections[i].Kind == kind {
			return &f.Sections[i]
		}
	}
	return nil
}

// HasAIEPartition reports whether f has an AIE_PARTITION section, as every
// NPU xclbin does.
func (f *File) HasAIEPartition() bool { return f.Section(AIEPartition) != nil }

// Open reads the xclbin file name.
func Open(name string) (*File, error) {
	fd, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	f, err := NewReader(fd, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// NewReader reads an xclbin of size bytes from r. Every count, offset and
// size in the file is checked before use: the magic, m_length against size,
// the section count against MaxSections and the bytes that hold the header
// array, and each section's [offset, offset+size) against m_length (with
// overflow checks) and against the other sections (no overlaps). Bytes after
// m_length (a signature, say) are ignored. The section payloads share one
// buffer of m_length bytes.
func NewReader(r io.ReaderAt, size int64) (*File, error) {
	if size < axlfSize {
		return nil, fileErr(0, "file of %d bytes is shorter than the %d-byte axlf header", size, axlfSize)
	}
	hdr, err := readAt(r, 0, axlfSize)
	if err != nil {
		return nil, fmt.Errorf("xclbin: read header: %w", err)
	}
	if !bytes.Equal(hdr[:7], []byte(Magic[:7])) {
		return nil, fileErr(offMagic, "bad magic %q, want %q", hdr[:8], Magic)
	}
	le := binary.LittleEndian
	length := le.Uint64(hdr[offLength:])
	if length < axlfSize || length > uint64(size) {
		return nil, fileErr(offLength, "m_length %d outside [%d, file size %d]", length, axlfSize, size)
	}
	n := le.Uint32(hdr[offNumSections:])
	if n > MaxSections {
		return nil, fileErr(offNumSections, "%d sections, more than the limit %d", n, MaxSections)
	}
	headerEnd := uint64(offSections) + uint64(max(n, 1))*sectionHeaderSize
	if headerEnd > length {
		return nil, fileErr(offNumSections, "%d section headers end at %d, past m_length %d", n, headerEnd, length)
	}
	buf, err := readAt(r, 0, int64(length))
	if err != nil {
		return nil, fmt.Errorf("xclbin: read %d bytes: %w", length, err)
	}
	f := &File{
		SignatureLength:     int32(le.Uint32(buf[offSigLength:])),
		UniqueID:            le.Uint64(buf[offUniqueID:]),
		TimeStamp:           le.Uint64(buf[offTimeStamp:]),
		FeatureROMTimeStamp: le.Uint64(buf[offFeatureROM:]),
		VersionPatch:        le.Uint16(buf[offVersionPatch:]),
		VersionMajor:        buf[offVersionMajor],
		VersionMinor:        buf[offVersionMinor],
		Mode:                le.Uint16(buf[offMode:]),
		ActionMask:          le.Uint16(buf[offActionMask:]),
		PlatformVBNV:        cString(buf[offPlatformVBNV : offPlatformVBNV+vbnvSize]),
		DebugBin:            cString(buf[offDebugBin : offDebugBin+debugBinSize]),
		Sections:            make([]Section, n),
	}
	copy(f.UUID[:], buf[offUUID:])
	copy(f.InterfaceUUID[:], buf[offInterfaceUUID:])

	type span struct {
		off, end uint64
		i        int
	}
	spans := make([]span, 0, n)
	for i := range f.Sections {
		h := offSections + i*sectionHeaderSize
		kind := SectionKind(le.Uint32(buf[h:]))
		off := le.Uint64(buf[h+24:])
		sz := le.Uint64(buf[h+32:])
		end := off + sz
		if end < off || end > length {
			return nil, fileErr(int64(h+24), "section %d (%s) [0x%x, +0x%x) ends past m_length %d", i, kind, off, sz, length)
		}
		if sz > 0 && off < headerEnd {
			return nil, fileErr(int64(h+24), "section %d (%s) at 0x%x overlaps the header (ends at 0x%x)", i, kind, off, headerEnd)
		}
		f.Sections[i] = Section{
			Kind: kind,
			Name: cString(buf[h+4 : h+4+sectionNameSize]),
			Data: buf[off:end:end],
		}
		if sz > 0 {
			spans = append(spans, span{off, end, i})
		}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].off < spans[b].off })
	for j := 1; j < len(spans); j++ {
		if p, q := spans[j-1], spans[j]; q.off < p.end {
			return nil, fileErr(int64(offSections+q.i*sectionHeaderSize+24),
				"section %d (%s) at 0x%x overlaps section %d (%s) ending at 0x%x",
				q.i, f.Sections[q.i].Kind, q.off, p.i, f.Sections[p.i].Kind, p.end)
		}
	}
	return f, nil
}

// readAt reads n bytes at off, growing the buffer in chunks so that a size
// larger than what r holds fails with an error before a large allocation
// (after Go's internal/saferio.ReadDataAt).
func readAt(r io.ReaderAt, off, n int64) ([]byte, error) {
	const chunk = 10 << 20
	if n < 0 {
		return nil, errors.New("negative size")
	}
	var buf []byte
	for int64(len(buf)) < n {
		c := min(n-int64(len(buf)), chunk)
		start := len(buf)
		buf = append(buf, make([]byte, c)...)
		m, err := r.ReadAt(buf[start:], off+int64(start))
		if int64(m) < c {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	if buf == nil {
		buf = []byte{}
	}
	return buf, nil
}

// cString returns b up to its first NUL (all of b if none).
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

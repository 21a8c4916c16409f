package xclbin

import (
	"encoding/binary"
	"fmt"
	"math"
)

// CDO group types (xclbin.h enum CDO_Type).
const (
	CDOUnknown = 0
	CDOPrimary = 1
	CDOLite    = 2
	CDOPrePost = 3
)

// PDIImageMaxSize is PDI_IMAGE_MAX_SIZE (32 KiB per tile, 64 x 64 tiles).
const PDIImageMaxSize = 32 * 1024 * 64 * 64

// Partition is the AIE_PARTITION payload: where an NPU design sits in the
// array and the PDIs that configure it.
//
// Binary form (xclbin.h; npu-stack.md section 2.3), every offset relative
// to the start of the section, all arrays described by an array_offset
// {u32 size (elements) @0, u32 offset @4}:
//
//	aie_partition (184): u8 schema_version @0, pad[3], u32 mpo_name @4,
//	  u32 operations_per_cycle @8, pad[4], u64 inference_fingerprint @16,
//	  u64 pre_post_fingerprint @24, aie_partition_info @32, array_offset
//	  aie_pdi @120, u32 kernel_commit_id (string offset) @128, reserved[52] @132
//	aie_partition_info (88): u16 column_width @0, pad[6], array_offset
//	  start_columns (u16) @8, reserved[72] @16
//	aie_pdi (96): u8 uuid[16] @0, array_offset pdi_image (bytes) @16,
//	  array_offset cdo_groups @24, reserved[64] @32
//	cdo_group (96): u32 mpo_name @0, u8 cdo_type @4, pad[3], u64 pdi_id @8,
//	  array_offset dpu_kernel_ids (u64) @16, array_offset pre_cdo_groups @24,
//	  reserved[64] @32
//
// xclbin.h comments pre_cdo_groups as uint32_t elements, but xclbinutil both
// writes and reads them as uint64_t (SectionAIEPartition.cxx,
// process_pre_cdo_groups and populate_pre_cdo_groups), so this package uses
// 8-byte elements. The heap after the header is laid out as xclbinutil lays
// it out: name, start columns, then per PDI its image, per CDO group its name,
// kernel ids and pre-CDO groups, then the PDI's CDO group array; the PDI
// array last. Every item starts on an 8-byte boundary.
type Partition struct {
	SchemaVersion        uint8
	Name                 string // mlir-aie: "QoS"
	OperationsPerCycle   uint32 // mlir-aie: 2048
	InferenceFingerprint uint64 // mlir-aie: 23423
	PrePostFingerprint   uint64 // mlir-aie: 12345
	ColumnWidth          uint16 // columns the design occupies
	StartColumns         []uint16
	PDIs                 []PartitionPDI
	KernelCommitID       string // empty: offset 0
}

// PartitionPDI is one aie_pdi of a Partition.
type PartitionPDI struct {
	UUID      [16]byte
	Image     []byte // the PDI (bootgen output); after ParsePartition, a sub-slice of the section
	CDOGroups []CDOGroup
}

// CDOGroup is one cdo_group of a PartitionPDI.
type CDOGroup struct {
	Name         string // mlir-aie: "DPU"
	Type         uint8  // CDOPrimary, ...
	PDIID        uint64
	DPUKernelIDs []uint64 // mlir-aie: [0x901]
	PreCDOGroups []uint64 // mlir-aie: [0xC1]
}

const (
	partSize     = 184
	partInfoOff  = 32
	partPDIOff   = 120
	partCommitID = 128
	pdiSize      = 96
	cdoSize      = 96
)

// EncodePartition encodes p as an AIE_PARTITION payload.
func EncodePartition(p *Partition) ([]byte, error) {
	b := make([]byte, partSize)
	le := binary.LittleEndian
	var err error
	// put appends raw to the heap at the next 8-byte boundary and returns
	// its section offset.
	put := func(raw []byte) uint32 {
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		off := len(b)
		b = append(b, raw...)
		if uint64(len(b)) > math.MaxUint32 && err == nil {
			err = fmt.Errorf("xclbin: AIE_PARTITION larger than 4 GiB")
		}
		return uint32(off)
	}
	str := func(s string) []byte { return append([]byte(s), 0) }
	arr := func(dst []byte, n int, off uint32) {
		le.PutUint32(dst[0:], uint32(n))
		le.PutUint32(dst[4:], off)
	}

	b[0] = p.SchemaVersion
	// Each put may move b, so offsets are taken before b is indexed.
	nameOff := put(str(p.Name))
	le.PutUint32(b[4:], nameOff)
	le.PutUint32(b[8:], p.OperationsPerCycle)
	le.PutUint64(b[16:], p.InferenceFingerprint)
	le.PutUint64(b[24:], p.PrePostFingerprint)
	le.PutUint16(b[partInfoOff:], p.ColumnWidth)
	if len(p.StartColumns) > 0 {
		cols := make([]byte, 2*len(p.StartColumns))
		for i, c := range p.StartColumns {
			le.PutUint16(cols[2*i:], c)
		}
		off := put(cols)
		arr(b[partInfoOff+8:], len(p.StartColumns), off)
	}
	if p.KernelCommitID != "" {
		off := put(str(p.KernelCommitID))
		le.PutUint32(b[partCommitID:], off)
	}
	u64s := func(v []uint64) []byte {
		out := make([]byte, 8*len(v))
		for i, x := range v {
			le.PutUint64(out[8*i:], x)
		}
		return out
	}
	pdis := make([]byte, pdiSize*len(p.PDIs))
	for i, d := range p.PDIs {
		if len(d.Image) > PDIImageMaxSize {
			return nil, fmt.Errorf("xclbin: PDI %d image of %d bytes, more than PDI_IMAGE_MAX_SIZE %d", i, len(d.Image), PDIImageMaxSize)
		}
		e := pdis[i*pdiSize:]
		copy(e[0:16], d.UUID[:])
		arr(e[16:], len(d.Image), put(d.Image))
		cdos := make([]byte, cdoSize*len(d.CDOGroups))
		for j, g := range d.CDOGroups {
			c := cdos[j*cdoSize:]
			le.PutUint32(c[0:], put(str(g.Name)))
			c[4] = g.Type
			le.PutUint64(c[8:], g.PDIID)
			if len(g.DPUKernelIDs) > 0 {
				arr(c[16:], len(g.DPUKernelIDs), put(u64s(g.DPUKernelIDs)))
			}
			if len(g.PreCDOGroups) > 0 {
				arr(c[24:], len(g.PreCDOGroups), put(u64s(g.PreCDOGroups)))
			}
		}
		arr(e[24:], len(d.CDOGroups), put(cdos))
	}
	pdiOff := put(pdis)
	arr(b[partPDIOff:], len(p.PDIs), pdiOff)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// ParsePartition decodes an AIE_PARTITION payload. Every array and string is
// checked against the section; the total of all array elements is bounded by
// the section size, so a file whose arrays alias each other cannot make the
// decoder allocate more than a small multiple of its input. PDI images are
// sub-slices of data.
func ParsePartition(data []byte) (*Partition, error) {
	const kind = AIEPartition
	if len(data) < partSize {
		return nil, secErr(kind, 0, "%d bytes, shorter than the %d-byte aie_partition header", len(data), partSize)
	}
	le := binary.LittleEndian
	budget := int64(len(data)) // bytes of array elements we agree to decode
	// array validates the array_offset at off holding elem-byte elements
	// and returns its element count and start.
	array := func(off int, elem int, what string) (n, start int, err error) {
		cnt, at := le.Uint32(data[off:]), le.Uint32(data[off+4:])
		end := uint64(at) + uint64(cnt)*uint64(elem)
		if end > uint64(len(data)) {
			return 0, 0, secErr(kind, int64(off), "%s array of %d x %d bytes at 0x%x ends past the section end 0x%x", what, cnt, elem, at, len(data))
		}
		if budget -= int64(cnt) * int64(elem); budget < 0 {
			return 0, 0, secErr(kind, int64(off), "%s array of %d entries: arrays referenced more bytes than the section holds", what, cnt)
		}
		return int(cnt), int(at), nil
	}

	p := &Partition{
		SchemaVersion:        data[0],
		OperationsPerCycle:   le.Uint32(data[8:]),
		InferenceFingerprint: le.Uint64(data[16:]),
		PrePostFingerprint:   le.Uint64(data[24:]),
		ColumnWidth:          le.Uint16(data[partInfoOff:]),
	}
	var err error
	if p.Name, err = cStringAt(kind, data, le.Uint32(data[4:]), "partition name"); err != nil {
		return nil, err
	}
	if off := le.Uint32(data[partCommitID:]); off != 0 {
		if p.KernelCommitID, err = cStringAt(kind, data, off, "kernel commit id"); err != nil {
			return nil, err
		}
	}
	n, at, err := array(partInfoOff+8, 2, "start_columns")
	if err != nil {
		return nil, err
	}
	if n > 0 {
		p.StartColumns = make([]uint16, n)
		for i := range p.StartColumns {
			p.StartColumns[i] = le.Uint16(data[at+2*i:])
		}
	}
	u64s := func(off int, what string) ([]uint64, error) {
		n, at, err := array(off, 8, what)
		if err != nil || n == 0 {
			return nil, err
		}
		v := make([]uint64, n)
		for i := range v {
			v[i] = le.Uint64(data[at+8*i:])
		}
		return v, nil
	}

	n, at, err = array(partPDIOff, pdiSize, "aie_pdi")
	if err != nil {
		return nil, err
	}
	p.PDIs = make([]PartitionPDI, n)
	for i := range p.PDIs {
		e := at + i*pdiSize
		d := &p.PDIs[i]
		copy(d.UUID[:], data[e:e+16])
		in, iat, err := array(e+16, 1, fmt.Sprintf("pdi %d image", i))
		if err != nil {
			return nil, err
		}
		d.Image = data[iat : iat+in : iat+in]
		cn, cat, err := array(e+24, cdoSize, fmt.Sprintf("pdi %d cdo_groups", i))
		if err != nil {
			return nil, err
		}
		if cn > 0 {
			d.CDOGroups = make([]CDOGroup, cn)
		}
		for j := range d.CDOGroups {
			c := cat + j*cdoSize
			g := &d.CDOGroups[j]
			if g.Name, err = cStringAt(kind, data, le.Uint32(data[c:]), fmt.Sprintf("pdi %d cdo group %d name", i, j)); err != nil {
				return nil, err
			}
			g.Type = data[c+4]
			g.PDIID = le.Uint64(data[c+8:])
			if g.DPUKernelIDs, err = u64s(c+16, "dpu_kernel_ids"); err != nil {
				return nil, err
			}
			if g.PreCDOGroups, err = u64s(c+24, "pre_cdo_groups"); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// Partition decodes f's AIE_PARTITION section.
func (f *File) Partition() (*Partition, error) {
	s := f.Section(AIEPartition)
	if s == nil {
		return nil, fmt.Errorf("xclbin: %w: %s", ErrNoSection, AIEPartition)
	}
	return ParsePartition(s.Data)
}

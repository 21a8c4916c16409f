package xclbin

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

func secErr(kind SectionKind, off int64, format string, args ...any) error {
	return &FormatError{Section: kind.String(), Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// checkCount validates an element count read from a section against the
// bytes that remain after the array start.
func checkCount(kind SectionKind, count int64, start, elem, have int, countOff int64) error {
	if count < 0 {
		return secErr(kind, countOff, "negative count %d", count)
	}
	if have < start || count > int64(have-start)/int64(elem) {
		return secErr(kind, countOff, "count %d of %d-byte entries at %d does not fit in %d bytes", count, elem, start, have)
	}
	return nil
}

// IP types (xclbin.h enum IP_TYPE).
const (
	IPTypeMB       = 0
	IPTypeKernel   = 1 // kernel instance (compute unit)
	IPTypePSKernel = 7 // PS kernel; NPU designs are "dpu" PS kernels
)

// IP is one ip_data entry of IP_LAYOUT (80 bytes): u32 m_type @0,
// u32 properties @4, u64 m_base_address @8, u8 m_name[64] @16.
type IP struct {
	Type        uint32
	Properties  uint32 // for PS kernels see PSProperties
	BaseAddress uint64 // ^0 ("not_used") for PS kernels
	Name        string // "kernel:instance", at most 63 bytes
}

// Kernel returns the part of the name before the first colon.
func (ip IP) Kernel() string {
	k, _, _ := strings.Cut(ip.Name, ":")
	return k
}

// PSProperties packs the ps_kernel bit-fields of ip_data.properties:
// m_subtype in bits 1:0 (ST_PS 0, ST_DPU 1), m_functional in bits 5:4
// (FC_DPU 0, FC_PREPOST 1), m_kernel_id in bits 27:16. An mlir-aie kernel
// (subtype DPU, functional 0, kernel id 0x901) gives 0x09010001.
func PSProperties(subtype, functional, kernelID uint32) uint32 {
	return subtype&3 | (functional&3)<<4 | (kernelID&0xFFF)<<16
}

const (
	ipHeader   = 8 // s32 m_count, then 4 bytes padding
	ipSize     = 80
	ipNameSize = 64
)

// ParseIPLayout decodes an IP_LAYOUT payload: s32 m_count @0, ip_data[] @8.
func ParseIPLayout(data []byte) ([]IP, error) {
	if len(data) < 4 {
		return nil, secErr(IPLayout, 0, "%d bytes, too short for m_count", len(data))
	}
	n := int64(int32(binary.LittleEndian.Uint32(data)))
	if err := checkCount(IPLayout, n, ipHeader, ipSize, len(data), 0); err != nil {
		return nil, err
	}
	ips := make([]IP, n)
	for i := range ips {
		e := data[ipHeader+i*ipSize:]
		ips[i] = IP{
			Type:        binary.LittleEndian.Uint32(e[0:]),
			Properties:  binary.LittleEndian.Uint32(e[4:]),
			BaseAddress: binary.LittleEndian.Uint64(e[8:]),
			Name:        cString(e[16 : 16+ipNameSize]),
		}
	}
	return ips, nil
}

// EncodeIPLayout encodes ips as an IP_LAYOUT payload.
func EncodeIPLayout(ips []IP) ([]byte, error) {
	if int64(len(ips)) > 1<<24 {
		return nil, fmt.Errorf("xclbin: %d IP entries", len(ips))
	}
	b := make([]byte, ipHeader+len(ips)*ipSize)
	binary.LittleEndian.PutUint32(b, uint32(len(ips)))
	for i, ip := range ips {
		if len(ip.Name) >= ipNameSize {
			return nil, fmt.Errorf("xclbin: IP %d name %q longer than %d bytes", i, ip.Name, ipNameSize-1)
		}
		e := b[ipHeader+i*ipSize:]
		binary.LittleEndian.PutUint32(e[0:], ip.Type)
		binary.LittleEndian.PutUint32(e[4:], ip.Properties)
		binary.LittleEndian.PutUint64(e[8:], ip.BaseAddress)
		copy(e[16:16+ipNameSize], ip.Name)
	}
	return b, nil
}

// IPs decodes f's IP_LAYOUT section.
func (f *File) IPs() ([]IP, error) {
	s := f.Section(IPLayout)
	if s == nil {
		return nil, fmt.Errorf("xclbin: %w: %s", ErrNoSection, IPLayout)
	}
	return ParseIPLayout(s.Data)
}

// KernelNames returns the kernel names of f's compute units: for each
// IP_LAYOUT entry of type IP_KERNEL or IP_PS_KERNEL, named
// "kernel:instance", the kernel part, each name once, in IP_LAYOUT order.
// An mlir-aie xclbin gives ["MLIR_AIE"].
func (f *File) KernelNames() ([]string, error) {
	ips, err := f.IPs()
	if err != nil {
		return nil, err
	}
	var names []string
	seen := map[string]bool{}
	for _, ip := range ips {
		if ip.Type != IPTypeKernel && ip.Type != IPTypePSKernel {
			continue
		}
		if k := ip.Kernel(); !seen[k] {
			seen[k] = true
			names = append(names, k)
		}
	}
	return names, nil
}

// Memory types (xclbin.h enum MEM_TYPE), the ones NPU designs use.
const (
	MemDRAM     = 2
	MemHost     = 10
	MemPSKernel = 11
)

// MemBank is one mem_data entry of MEM_TOPOLOGY or GROUP_TOPOLOGY (40 bytes):
// u8 m_type @0, u8 m_used @1, pad[6], u64 m_size (KiB) @8,
// u64 m_base_address @16, u8 m_tag[16] @24.
type MemBank struct {
	Type        uint8
	Used        uint8
	SizeKB      uint64 // or route_id for streaming banks
	BaseAddress uint64 // or flow_id for streaming banks
	Tag         string // at most 15 bytes, such as "HOST" or "SRAM"
}

const (
	memHeader  = 8
	memSize    = 40
	memTagSize = 16
)

// ParseMemTopology decodes a MEM_TOPOLOGY (or GROUP_TOPOLOGY) payload:
// s32 m_count @0, mem_data[] @8.
func ParseMemTopology(data []byte) ([]MemBank, error) { return parseMemTopology(MemTopology, data) }

func parseMemTopology(kind SectionKind, data []byte) ([]MemBank, error) {
	if len(data) < 4 {
		return nil, secErr(kind, 0, "%d bytes, too short for m_count", len(data))
	}
	n := int64(int32(binary.LittleEndian.Uint32(data)))
	if err := checkCount(kind, n, memHeader, memSize, len(data), 0); err != nil {
		return nil, err
	}
	banks := make([]MemBank, n)
	for i := range banks {
		e := data[memHeader+i*memSize:]
		banks[i] = MemBank{
			Type:        e[0],
			Used:        e[1],
			SizeKB:      binary.LittleEndian.Uint64(e[8:]),
			BaseAddress: binary.LittleEndian.Uint64(e[16:]),
			Tag:         cString(e[24 : 24+memTagSize]),
		}
	}
	return banks, nil
}

// EncodeMemTopology encodes banks as a MEM_TOPOLOGY payload.
func EncodeMemTopology(banks []MemBank) ([]byte, error) {
	if int64(len(banks)) > 1<<24 {
		return nil, fmt.Errorf("xclbin: %d memory banks", len(banks))
	}
	b := make([]byte, memHeader+len(banks)*memSize)
	binary.LittleEndian.PutUint32(b, uint32(len(banks)))
	for i, m := range banks {
		if len(m.Tag) >= memTagSize {
			return nil, fmt.Errorf("xclbin: memory bank %d tag %q longer than %d bytes", i, m.Tag, memTagSize-1)
		}
		e := b[memHeader+i*memSize:]
		e[0], e[1] = m.Type, m.Used
		binary.LittleEndian.PutUint64(e[8:], m.SizeKB)
		binary.LittleEndian.PutUint64(e[16:], m.BaseAddress)
		copy(e[24:24+memTagSize], m.Tag)
	}
	return b, nil
}

// MemBanks decodes f's section of the given kind (MemTopology or
// GroupTopology).
func (f *File) MemBanks(kind SectionKind) ([]MemBank, error) {
	s := f.Section(kind)
	if s == nil {
		return nil, fmt.Errorf("xclbin: %w: %s", ErrNoSection, kind)
	}
	return parseMemTopology(kind, s.Data)
}

// Connection is one connection entry of CONNECTIVITY or GROUP_CONNECTIVITY
// (12 bytes): s32 arg_index @0, s32 m_ip_layout_index @4, s32 mem_data_index @8.
type Connection struct {
	ArgIndex      int32
	IPLayoutIndex int32
	MemDataIndex  int32
}

const (
	connHeader = 4
	connSize   = 12
)

// ParseConnectivity decodes a CONNECTIVITY (or GROUP_CONNECTIVITY) payload:
// s32 m_count @0, connection[] @4.
func ParseConnectivity(data []byte) ([]Connection, error) {
	return parseConnectivity(Connectivity, data)
}

func parseConnectivity(kind SectionKind, data []byte) ([]Connection, error) {
	if len(data) < 4 {
		return nil, secErr(kind, 0, "%d bytes, too short for m_count", len(data))
	}
	n := int64(int32(binary.LittleEndian.Uint32(data)))
	if err := checkCount(kind, n, connHeader, connSize, len(data), 0); err != nil {
		return nil, err
	}
	cs := make([]Connection, n)
	for i := range cs {
		e := data[connHeader+i*connSize:]
		cs[i] = Connection{
			ArgIndex:      int32(binary.LittleEndian.Uint32(e[0:])),
			IPLayoutIndex: int32(binary.LittleEndian.Uint32(e[4:])),
			MemDataIndex:  int32(binary.LittleEndian.Uint32(e[8:])),
		}
	}
	return cs, nil
}

// EncodeConnectivity encodes cs as a CONNECTIVITY payload.
func EncodeConnectivity(cs []Connection) ([]byte, error) {
	if int64(len(cs)) > 1<<24 {
		return nil, fmt.Errorf("xclbin: %d connections", len(cs))
	}
	b := make([]byte, connHeader+len(cs)*connSize)
	binary.LittleEndian.PutUint32(b, uint32(len(cs)))
	for i, c := range cs {
		e := b[connHeader+i*connSize:]
		binary.LittleEndian.PutUint32(e[0:], uint32(c.ArgIndex))
		binary.LittleEndian.PutUint32(e[4:], uint32(c.IPLayoutIndex))
		binary.LittleEndian.PutUint32(e[8:], uint32(c.MemDataIndex))
	}
	return b, nil
}

// Connections decodes f's section of the given kind (Connectivity or
// GroupConnectivity).
func (f *File) Connections(kind SectionKind) ([]Connection, error) {
	s := f.Section(kind)
	if s == nil {
		return nil, fmt.Errorf("xclbin: %w: %s", ErrNoSection, kind)
	}
	return parseConnectivity(kind, s.Data)
}

// cStringAt returns the NUL-terminated string at off in data, reading at
// most maxString bytes (names in these sections are short; the cap keeps a
// hostile file from making every lookup scan the whole section).
func cStringAt(kind SectionKind, data []byte, off uint32, what string) (string, error) {
	const maxString = 4096
	if uint64(off) >= uint64(len(data)) {
		return "", secErr(kind, int64(off), "%s string at 0x%x is past the section end 0x%x", what, off, len(data))
	}
	b := data[off:]
	if len(b) > maxString {
		b = b[:maxString]
	}
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", secErr(kind, int64(off), "%s string is not NUL-terminated within %d bytes", what, len(b))
	}
	return string(b[:i]), nil
}

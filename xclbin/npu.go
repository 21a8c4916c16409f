package xclbin

import (
	"fmt"
)

// Values mlir-aie's aiecc writes into every NPU xclbin
// (python/compiler/aiecc/main.py: emit_design_kernel_json, emit_partition,
// mem_topology; npu-stack.md sections 2.3 and 2.5).
const (
	NPUKernel      = "MLIR_AIE" // default kernel name
	NPUInstance    = "MLIRAIE"  // compute unit instance: CU "MLIR_AIE:MLIRAIE"
	NPUDPUKernelID = 0x901      // dpu_kernel_id, also in the CDO group
	npuHeapBase    = 0x4000000  // device address of the 64 MiB heap
)

// NPUArgs returns the MLIR_AIE argument table: opcode, the instruction
// buffer and its length, then five buffer objects. XRT builds the ERT
// command's argument block from these offsets and sizes.
//
//	idx name   qualifier type      offset  bank
//	0   opcode SCALAR    uint64_t  0x00    -
//	1   instr  GLOBAL    char *    0x08    SRAM
//	2   ninstr SCALAR    uint32_t  0x10    -
//	3-7 bo0-4  GLOBAL    void*     0x14+8i HOST
func NPUArgs() []Arg {
	args := []Arg{
		{Name: "opcode", AddressQualifier: ArgScalar, ID: 0, Size: 8, Offset: 0x00, Type: "uint64_t"},
		{Name: "instr", AddressQualifier: ArgGlobal, ID: 1, Size: 8, Offset: 0x08, Type: "char *"},
		{Name: "ninstr", AddressQualifier: ArgScalar, ID: 2, Size: 4, Offset: 0x10, Type: "uint32_t"},
	}
	for i := range 5 {
		args = append(args, Arg{
			Name: fmt.Sprintf("bo%d", i), AddressQualifier: ArgGlobal, ID: 3 + i,
			Size: 8, Offset: 0x14 + 8*i, Type: "void*",
		})
	}
	return args
}

// NewNPU builds an xclbin shaped like the ones mlir-aie produces through
// xclbinutil, holding one PDI:
//
//   - MEM_TOPOLOGY: two MEM_DRAM banks at 0x4000000, "HOST" (0x10000 KiB) and
//     "SRAM" (0xc000 KiB);
//   - EMBEDDED_METADATA: kernel (default "MLIR_AIE") of type "dpu", subtype 1,
//     functional 0, dpu_kernel_id 0x901, the NPUArgs table, instance "MLIRAIE";
//   - IP_LAYOUT: one IP_PS_KERNEL "<kernel>:MLIRAIE", properties 0x09010001,
//     base address ^0;
//   - CONNECTIVITY: instr -> SRAM, bo0..bo4 -> HOST;
//   - AIE_PARTITION: "QoS", 2048 operations per cycle, fingerprints 23423 and
//     12345, column_width columns, start columns [0], one PDI (uuid, pdi) with
//     CDO group "DPU" (PRIMARY, pdi_id 1, kernel ids [0x901], pre-CDO
//     groups [0xC1]);
//   - GROUP_TOPOLOGY and GROUP_CONNECTIVITY: copies of MEM_TOPOLOGY and
//     CONNECTIVITY, as xclbinutil creates them when no banks are grouped.
//
// uuid is both the xclbin UUID and the PDI's UUID. Nothing depends on the
// clock, so equal arguments give equal bytes. NewNPU panics if the kernel
// name does not fit IP_LAYOUT's 64-byte name, columns is outside [1, 65535]
// or pdi is larger than PDIImageMaxSize: it builds fixtures, and those are
// programming errors.
func NewNPU(kernel string, uuid [16]byte, pdi []byte, columns int) *File {
	if kernel == "" {
		kernel = NPUKernel
	}
	if columns < 1 || columns > 0xFFFF {
		panic(fmt.Sprintf("xclbin: NewNPU: %d columns", columns))
	}
	banks := []MemBank{
		{Type: MemDRAM, Used: 1, SizeKB: 0x10000, BaseAddress: npuHeapBase, Tag: "HOST"},
		{Type: MemDRAM, Used: 1, SizeKB: 0xc000, BaseAddress: npuHeapBase, Tag: "SRAM"},
	}
	const hostBank, sramBank = 0, 1
	ips := []IP{{
		Type:        IPTypePSKernel,
		Properties:  PSProperties(1, 0, NPUDPUKernelID), // ST_DPU, FC_DPU
		BaseAddress: ^uint64(0),
		Name:        kernel + ":" + NPUInstance,
	}}
	args := NPUArgs()
	var conns []Connection
	for _, a := range args {
		switch {
		case a.Name == "instr":
			conns = append(conns, Connection{ArgIndex: int32(a.ID), MemDataIndex: sramBank})
		case a.AddressQualifier == ArgGlobal:
			conns = append(conns, Connection{ArgIndex: int32(a.ID), MemDataIndex: hostBank})
		}
	}
	kernels := []Kernel{{
		Name: kernel, Language: "c", Type: "dpu",
		Subtype: "1", Functional: "0", DPUKernelID: fmt.Sprintf("0x%x", NPUDPUKernelID),
		Args: args, Instances: []string{NPUInstance},
	}}
	part := &Partition{
		Name:                 "QoS",
		OperationsPerCycle:   2048,
		InferenceFingerprint: 23423,
		PrePostFingerprint:   12345,
		ColumnWidth:          uint16(columns),
		StartColumns:         []uint16{0},
		PDIs: []PartitionPDI{{
			UUID:  uuid,
			Image: pdi,
			CDOGroups: []CDOGroup{{
				Name: "DPU", Type: CDOPrimary, PDIID: 0x01,
				DPUKernelIDs: []uint64{NPUDPUKernelID},
				PreCDOGroups: []uint64{0xC1},
			}},
		}},
	}
	mem, err := EncodeMemTopology(banks)
	must(err)
	ipl, err := EncodeIPLayout(ips)
	must(err)
	conn, err := EncodeConnectivity(conns)
	must(err)
	pb, err := EncodePartition(part)
	must(err)
	return &File{
		UUID:            uuid,
		SignatureLength: -1,
		Sections: []Section{
			{Kind: MemTopology, Data: mem},
			{Kind: EmbeddedMetadata, Data: EncodeKernels(kernels)},
			{Kind: IPLayout, Data: ipl},
			{Kind: Connectivity, Data: conn},
			{Kind: AIEPartition, Data: pb},
			{Kind: GroupTopology, Data: append([]byte(nil), mem...)},
			{Kind: GroupConnectivity, Data: append([]byte(nil), conn...)},
		},
	}
}

func must(err error) {
	if err != nil {
		panic("xclbin: NewNPU: " + err.Error())
	}
}

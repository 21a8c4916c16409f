package amdxdna

import "unsafe"

// The amdxdna DRM uAPI: the argument structs of the ioctls, the GET_INFO
// payloads and the generic DRM structs the submit path uses, laid out as
// include/uapi/drm/amdxdna_accel.h and drm.h on x86-64 (Linux 6.14+; the
// copy in ../shared/reference/amdxdna_accel.h is Debian linux-libc-dev
// 7.3.4-1~bpo13+1, npu-contract.md 4.1-4.3). TestHeaderLayouts compiles a C
// program against that header and compares every size, offset and ioctl
// number below with gcc's. Pointers into user memory are u64 fields: the
// caller pins what they point at for the duration of the ioctl.

// QoSInfo is amdxdna_qos_info (24 bytes). CREATE_HWCTX wants qos_p to
// point at one, zeroed (npu-contract.md 4.4).
type QoSInfo struct {
	GOPS          uint32
	FPS           uint32
	DMABandwidth  uint32
	Latency       uint32
	FrameExecTime uint32
	Priority      uint32 // 0x100 realtime, 0x180 high, 0x200 normal, 0x280 low
}

// CreateHwctx is amdxdna_drm_create_hwctx (56 bytes).
type CreateHwctx struct {
	Ext           uint64 // MBZ
	ExtFlags      uint64 // MBZ
	QoSP          uint64 // user pointer to a QoSInfo
	UmqBO         uint32 // 0 on KMQ devices
	LogBufBO      uint32 // 0
	MaxOpc        uint32 // ops per cycle (AIE_PARTITION operations_per_cycle; mlir-aie 2048)
	NumTiles      uint32 // columns x 4 core rows
	MemSize       uint32
	UmqDoorbell   uint32 // out
	Handle        uint32 // out
	SyncobjHandle uint32 // out: timeline syncobj of the context's completions
}

// DestroyHwctx is amdxdna_drm_destroy_hwctx (8 bytes).
type DestroyHwctx struct {
	Handle uint32
	Pad    uint32 // MBZ
}

// CUConfig is amdxdna_cu_config (8 bytes): one compute unit, a PDI in a
// DEV BO.
type CUConfig struct {
	CUBO   uint32 // DEV BO holding the PDI
	CUFunc uint8  // 0
	Pad    [3]uint8
}

// ConfigCU is the fixed part of amdxdna_hwctx_param_config_cu (8 bytes);
// NumCUs CUConfig entries follow it.
type ConfigCU struct {
	NumCUs uint16
	Pad    [3]uint16 // MBZ
}

// The CONFIG_HWCTX parameter types (amdxdna_drm_config_hwctx_param).
const (
	ConfigCUParam     = 0
	AssignDbgBufParam = 1
	RemoveDbgBufParam = 2
)

// MaxCUs is the most compute units one context takes (aie2_msg_priv.h).
const MaxCUs = 32

// ConfigHwctx is amdxdna_drm_config_hwctx (24 bytes).
type ConfigHwctx struct {
	Handle       uint32
	ParamType    uint32 // ConfigCUParam, ...
	ParamVal     uint64 // value or user pointer (at most 4 KiB behind it)
	ParamValSize uint32
	Pad          uint32 // MBZ
}

// CreateBO is amdxdna_drm_create_bo (32 bytes).
type CreateBO struct {
	Flags  uint64 // MBZ
	VAddr  uint64 // MBZ (user-pointer BOs are not used)
	Size   uint64
	Type   uint32 // BOShmem, BODevHeap, BODev, BOCmd
	Handle uint32 // out
}

// The BO types (amdxdna_bo_type; npu-contract.md 4.4).
const (
	BOShmem   = 1 // data: the firmware sees the process VA of its mapping
	BODevHeap = 2 // the 64 MiB device heap, mapped 64 MiB-aligned
	BODev     = 3 // instructions and PDIs, sub-allocated from the heap
	BOCmd     = 4 // ERT command packets
)

// GetBOInfo is amdxdna_drm_get_bo_info (48 bytes).
type GetBOInfo struct {
	Ext       uint64 // MBZ
	ExtFlags  uint64 // MBZ
	Handle    uint32
	Pad       uint32 // MBZ
	MapOffset uint64 // out: mmap offset on the accel fd
	VAddr     uint64 // out
	XDNAAddr  uint64 // out: device address (DEV and DEV_HEAP BOs)
}

// SyncBO is amdxdna_drm_sync_bo (24 bytes).
type SyncBO struct {
	Handle    uint32
	Direction uint32 // SyncToDevice or SyncFromDevice
	Offset    uint64
	Size      uint64
}

// The sync directions (SYNC_DIRECT_*).
const (
	SyncToDevice   = 0
	SyncFromDevice = 1
)

// ExecCmd is amdxdna_drm_exec_cmd (56 bytes).
type ExecCmd struct {
	Ext        uint64 // MBZ
	ExtFlags   uint64 // MBZ
	Hwctx      uint32
	Type       uint32 // CmdSubmitExecBuf
	CmdHandles uint64 // the command BO handle itself when CmdCount is 1
	Args       uint64 // user pointer to ArgCount u32 BO handles
	CmdCount   uint32 // 1
	ArgCount   uint32
	Seq        uint64 // out: point on the context's timeline syncobj
}

// CmdSubmitExecBuf is AMDXDNA_CMD_SUBMIT_EXEC_BUF.
const CmdSubmitExecBuf = 0

// MaxArgs bounds EXEC_CMD's arg_count (npu-contract.md 4.3).
const MaxArgs = 4095

// WaitCmd is amdxdna_drm_wait_cmd (16 bytes).
type WaitCmd struct {
	Hwctx   uint32
	Timeout uint32 // ms, 0 = forever
	Seq     uint64
}

// GetInfo is amdxdna_drm_get_info (16 bytes), also the layout of
// amdxdna_drm_set_state.
type GetInfo struct {
	Param      uint32
	BufferSize uint32 // in/out
	Buffer     uint64 // user pointer to the payload
}

// GetArray is amdxdna_drm_get_array (24 bytes).
type GetArray struct {
	Param       uint32
	ElementSize uint32
	NumElement  uint32 // in/out
	Pad         uint32
	Buffer      uint64
}

// The GET_INFO parameters (amdxdna_drm_get_param).
const (
	QueryAIEStatus       = 0
	QueryAIEMetadata     = 1
	QueryAIEVersion      = 2
	QueryClockMetadata   = 3
	QuerySensors         = 4
	QueryHwContexts      = 5
	QueryFirmwareVersion = 8
	GetPowerMode         = 9
)

// AIEVersion is amdxdna_drm_query_aie_version (8 bytes).
type AIEVersion struct {
	Major, Minor uint32
}

// TileMetadata is amdxdna_drm_query_aie_tile_metadata (16 bytes).
type TileMetadata struct {
	RowCount        uint16
	RowStart        uint16
	DMAChannelCount uint16
	LockCount       uint16
	EventRegCount   uint16
	Pad             [3]uint16
}

// AIEMetadata is amdxdna_drm_query_aie_metadata (64 bytes).
type AIEMetadata struct {
	ColSize uint32
	Cols    uint16
	Rows    uint16
	Version AIEVersion
	Core    TileMetadata
	Mem     TileMetadata
	Shim    TileMetadata
}

// FirmwareVersion is amdxdna_drm_query_firmware_version (16 bytes).
type FirmwareVersion struct {
	Major, Minor, Patch, Build uint32
}

// DRMVersion is the generic struct drm_version (drm.h; 64 bytes), asked
// first so that amdxdna ioctls go only to amdxdna.
type DRMVersion struct {
	Major, Minor, Patchlevel int32
	_                        int32
	NameLen                  uint64
	Name                     uint64 // user pointer
	DateLen                  uint64
	Date                     uint64
	DescLen                  uint64
	Desc                     uint64
}

// GEMClose is struct drm_gem_close (8 bytes): frees a BO handle.
type GEMClose struct {
	Handle uint32
	Pad    uint32 // MBZ
}

// SyncobjTimelineWait is struct drm_syncobj_timeline_wait (48 bytes with
// deadline_nsec, Linux 6.5+).
type SyncobjTimelineWait struct {
	Handles       uint64 // user pointer to CountHandles u32 syncobj handles
	Points        uint64 // user pointer to CountHandles u64 timeline points
	TimeoutNsec   int64  // absolute CLOCK_MONOTONIC
	CountHandles  uint32
	Flags         uint32 // SyncobjWaitAll, SyncobjWaitForSubmit
	FirstSignaled uint32 // out
	Pad           uint32
	DeadlineNsec  uint64
}

// The syncobj wait flags (DRM_SYNCOBJ_WAIT_FLAGS_*).
const (
	SyncobjWaitAll       = 1
	SyncobjWaitForSubmit = 2
)

// ioctl request encoding (include/uapi/asm-generic/ioctl.h): dir<<30 |
// size<<16 | type<<8 | nr, with write 1 and read 2; DRM's type is 'd' and
// driver ioctls start at DRM_COMMAND_BASE, 0x40 (forgetting it reaches DRM
// core ioctls instead: npu-contract.md 4.2).
const (
	iowr           = (2 | 1) << 30
	iow            = 1 << 30
	drm            = 'd' << 8
	drmCommandBase = 0x40
)

// The ioctl request numbers (npu-contract.md 4.2).
const (
	IoctlCreateHwctx  = iowr | unsafe.Sizeof(CreateHwctx{})<<16 | drm | (drmCommandBase + 0)
	IoctlDestroyHwctx = iowr | unsafe.Sizeof(DestroyHwctx{})<<16 | drm | (drmCommandBase + 1)
	IoctlConfigHwctx  = iowr | unsafe.Sizeof(ConfigHwctx{})<<16 | drm | (drmCommandBase + 2)
	IoctlCreateBO     = iowr | unsafe.Sizeof(CreateBO{})<<16 | drm | (drmCommandBase + 3)
	IoctlGetBOInfo    = iowr | unsafe.Sizeof(GetBOInfo{})<<16 | drm | (drmCommandBase + 4)
	IoctlSyncBO       = iowr | unsafe.Sizeof(SyncBO{})<<16 | drm | (drmCommandBase + 5)
	IoctlExecCmd      = iowr | unsafe.Sizeof(ExecCmd{})<<16 | drm | (drmCommandBase + 6)
	IoctlGetInfo      = iowr | unsafe.Sizeof(GetInfo{})<<16 | drm | (drmCommandBase + 7)
	IoctlSetState     = iowr | unsafe.Sizeof(GetInfo{})<<16 | drm | (drmCommandBase + 8)
	// IoctlWaitCmd is the upstream header's DRM_IOW form; the out-of-tree
	// driver's header declares it DRM_IOWR (0xc0106449).
	IoctlWaitCmd  = iow | unsafe.Sizeof(WaitCmd{})<<16 | drm | (drmCommandBase + 9)
	IoctlGetArray = iowr | unsafe.Sizeof(GetArray{})<<16 | drm | (drmCommandBase + 10)

	// Generic DRM ioctls (drm.h).
	IoctlVersion             = iowr | unsafe.Sizeof(DRMVersion{})<<16 | drm | 0x00
	IoctlGEMClose            = iow | unsafe.Sizeof(GEMClose{})<<16 | drm | 0x09
	IoctlSyncobjTimelineWait = iowr | unsafe.Sizeof(SyncobjTimelineWait{})<<16 | drm | 0xCA
)

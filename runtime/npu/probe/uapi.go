package probe

import "unsafe"

// The amdxdna DRM uAPI: the argument structs of the ioctls and the
// GET_INFO payloads, laid out as the kernel's
// include/uapi/drm/amdxdna_accel.h on x86-64 (Linux 6.14+, amd/xdna-driver
// @ 856409cafc23cee55976ebcaa0a073ab4ec6dfe2; npu-stack.md section 1.3).
// Only GetInfo and its payloads are used here; the rest are the layouts a
// pure-Go driver would need, kept with their sizes under test.

// QoSInfo is amdxdna_qos_info (24 bytes; the out-of-tree header's is 32).
type QoSInfo struct {
	GOPS          uint32
	FPS           uint32
	DMABandwidth  uint32
	Latency       uint32
	FrameExecTime uint32
	Priority      uint32
}

// CreateHwctx is amdxdna_drm_create_hwctx (56 bytes).
type CreateHwctx struct {
	Ext           uint64 // MBZ
	ExtFlags      uint64 // MBZ
	QoSP          uint64 // user pointer to QoSInfo
	UmqBO         uint32 // 0 on KMQ devices
	LogBufBO      uint32
	MaxOpc        uint32 // ops per cycle (AIE_PARTITION operations_per_cycle)
	NumTiles      uint32 // columns x core rows
	MemSize       uint32
	UmqDoorbell   uint32 // out
	Handle        uint32 // out
	SyncobjHandle uint32 // out: timeline syncobj of completions
}

// DestroyHwctx is amdxdna_drm_destroy_hwctx (8 bytes).
type DestroyHwctx struct {
	Handle uint32
	Pad    uint32
}

// ConfigHwctx is amdxdna_drm_config_hwctx (24 bytes).
type ConfigHwctx struct {
	Handle       uint32
	ParamType    uint32 // CONFIG_CU 0, ASSIGN_DBG_BUF 1, REMOVE_DBG_BUF 2
	ParamVal     uint64 // value or user pointer
	ParamValSize uint32
	Pad          uint32
}

// CreateBO is amdxdna_drm_create_bo (32 bytes).
type CreateBO struct {
	Flags  uint64 // MBZ
	VAddr  uint64
	Size   uint64
	Type   uint32 // BOShmem, BODevHeap, BODev, BOCmd
	Handle uint32 // out
}

// The BO types (amdxdna_bo_type).
const (
	BOShmem   = 1
	BODevHeap = 2
	BODev     = 3
	BOCmd     = 4
)

// GetBOInfo is amdxdna_drm_get_bo_info (48 bytes).
type GetBOInfo struct {
	Ext       uint64
	ExtFlags  uint64
	Handle    uint32
	Pad       uint32
	MapOffset uint64 // out: mmap offset on the accel fd
	VAddr     uint64 // out
	XDNAAddr  uint64 // out: device address
}

// SyncBO is amdxdna_drm_sync_bo (24 bytes).
type SyncBO struct {
	Handle    uint32
	Direction uint32 // 0 to device, 1 from device
	Offset    uint64
	Size      uint64
}

// ExecCmd is amdxdna_drm_exec_cmd (56 bytes).
type ExecCmd struct {
	Ext        uint64
	ExtFlags   uint64
	Hwctx      uint32
	Type       uint32 // 0: EXEC_BUF
	CmdHandles uint64 // the command BO handle when CmdCount is 1
	Args       uint64 // user pointer to ArgCount u32 BO handles
	CmdCount   uint32
	ArgCount   uint32
	Seq        uint64 // out: timeline point
}

// GetInfo is amdxdna_drm_get_info (16 bytes), also the layout of
// amdxdna_drm_set_state.
type GetInfo struct {
	Param      uint32
	BufferSize uint32 // in/out
	Buffer     uint64 // user pointer to the payload
}

// WaitCmd is amdxdna_drm_wait_cmd (16 bytes; not in early mainline).
type WaitCmd struct {
	Hwctx   uint32
	Timeout uint32 // ms
	Seq     uint64
}

// GetArray is amdxdna_drm_get_array (24 bytes; driver 0.1+).
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

// drmVersion is the generic DRM struct drm_version (drm.h; 64 bytes on
// 64-bit), asked first so that amdxdna ioctls go only to amdxdna.
type drmVersion struct {
	Major, Minor, Patchlevel int32
	_                        int32
	NameLen                  uint64
	Name                     uint64 // user pointer
	DateLen                  uint64
	Date                     uint64
	DescLen                  uint64
	Desc                     uint64
}

// ioctl request encoding (include/uapi/asm-generic/ioctl.h): dir<<30 |
// size<<16 | type<<8 | nr, with write 1 and read 2; DRM's type is 'd' and
// driver ioctls start at DRM_COMMAND_BASE, 0x40.
const (
	iowr           = (2 | 1) << 30
	iow            = 1 << 30
	drm            = 'd' << 8
	drmCommandBase = 0x40
)

// The ioctl request numbers (npu-stack.md 1.2).
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
	// IoctlWaitCmd is the upstream-track DRM_IOW form; the out-of-tree
	// driver's header declares it DRM_IOWR (0xc0106449).
	IoctlWaitCmd  = iow | unsafe.Sizeof(WaitCmd{})<<16 | drm | (drmCommandBase + 9)
	IoctlGetArray = iowr | unsafe.Sizeof(GetArray{})<<16 | drm | (drmCommandBase + 10)

	// Generic DRM ioctls: DRM_IOCTL_VERSION and DRM_IOCTL_GEM_CLOSE.
	ioctlVersion  = iowr | unsafe.Sizeof(drmVersion{})<<16 | drm | 0x00
	IoctlGEMClose = iow | 8<<16 | drm | 0x09
)

package probe

import "github.com/xdna-go/xdna/runtime/npu/amdxdna"

// The GET_INFO payloads of Info. The amdxdna uAPI layouts live in package
// amdxdna, which checks them against the kernel header.
type (
	AIEMetadata     = amdxdna.AIEMetadata
	AIEVersion      = amdxdna.AIEVersion
	TileMetadata    = amdxdna.TileMetadata
	FirmwareVersion = amdxdna.FirmwareVersion
)

package npu

import (
	"github.com/xdna-go/xdna/runtime/npu/design"
	"github.com/xdna-go/xdna/target"
)

// What one dispatch holds is the design's (package design: the header
// object, the records, the weight runs and the outputs, byte for byte);
// these are the limits the host plans with.
const (
	// MaxTokens is the most activation vectors one dispatch multiplies.
	MaxTokens = design.MaxTokens
	// MaxColumns is the widest design (XDNA2's 8 columns).
	MaxColumns = target.MaxColumns
)

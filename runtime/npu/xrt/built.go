//go:build xrt && cgo

package xrt

// Built reports whether this build has the XRT path (-tags xrt with cgo).
func Built() bool { return true }

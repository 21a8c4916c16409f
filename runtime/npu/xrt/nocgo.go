//go:build !(xrt && cgo)

package xrt

// openLib is the stand-in of a build without -tags xrt (or without cgo).
func openLib(int) (lib, error) { return nil, ErrNotBuilt }

// Built reports whether this build has the XRT path (-tags xrt with cgo).
func Built() bool { return false }

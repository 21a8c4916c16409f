//go:build !cgo || nosim

package sim

import (
	"errors"

	"github.com/xdna-go/xdna/planar"
)

var errNoCompiler = errors.New("sim: this build has no compiled kernels: --device sim needs cgo and a C++ compiler (g++; CGO_ENABLED=1, without the nosim tag)")

// Available reports whether the kernels were compiled into this build: never in a
// build without cgo (or with the nosim tag).
func Available() error { return errNoCompiler }

func cObjectBytes(string, planar.Type, int, int) int { return 0 }

func runCore(string, planar.Type, int, []byte, int, int, int, []byte, int, int, []float32) error {
	return errNoCompiler
}

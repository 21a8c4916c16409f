//go:build !cgo || !sim

package sim

import (
	"errors"

	"github.com/xdna-go/xdna/planar"
)

var errNoCompiler = errors.New("sim: this build has no compiled kernels: --device sim needs a build with -tags sim, cgo and a C++ compiler (g++): go build -tags sim ./cmd/xdnarun")

// Available reports whether the kernels were compiled into this build: never in a
// build without the sim tag or without cgo.
func Available() error { return errNoCompiler }

func cObjectBytes(string, planar.Type, int, int) int { return 0 }

func runCore(string, planar.Type, int, []byte, int, int, int, []byte, int, int, []float32) error {
	return errNoCompiler
}

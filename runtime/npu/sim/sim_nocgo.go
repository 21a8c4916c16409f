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

type cSlot struct{ lanes int }

type modes [2]int

func powerUp() modes { return modes{} }

const (
	fnInit = iota
	fnAcc
	fnOut
)

func lookup(string, planar.Type, int) (cSlot, bool) { return cSlot{}, false }

func compiled(string) [][2]int { return nil }

func (cSlot) call(int, *modes, []byte, []byte, []byte, []byte, int32, int32) error {
	return errNoCompiler
}

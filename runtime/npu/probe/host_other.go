//go:build !linux

package probe

import (
	"errors"

	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
)

// System returns this machine as the doctor reads it: amdxdna exists only
// on Linux, so every check finds its absence.
func System() *Host {
	no := errors.New("amdxdna exists only on Linux")
	return &Host{
		Kernel:  amdxdna.Sys{},
		Stat:    func(string) (Node, error) { return Node{}, no },
		User:    func() (User, error) { return User{}, no },
		Memlock: func() (uint64, uint64, error) { return 0, 0, no },
	}
}

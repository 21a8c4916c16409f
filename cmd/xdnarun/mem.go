package main

import "github.com/xdna-go/xdna/runtime/npu/device"

// availableMemory returns the bytes this process can still allocate and
// where the figure comes from: the smaller of /proc/meminfo's MemAvailable
// plus SwapFree and the cgroup's memory.max less memory.current. It returns
// 0 when neither can be read. A variable, so that the tests can make the
// machine small.
var availableMemory = func() (int64, string) { return device.ReadLimits().Allocatable() }

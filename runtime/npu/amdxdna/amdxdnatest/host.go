package amdxdnatest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/xdna-go/xdna/runtime/npu/probe"
)

// Break is a precondition of the NPU path that a fake Host breaks.
type Break int

// The breaks. What each looks like on a real machine is inferred from the
// driver's sources and the reports cited; none was reproduced on hardware
// by us.
const (
	BreakNone Break = iota
	// BreakNoNode: the driver is not loaded (no /sys/module/amdxdna), so the
	// NPU is on the PCI bus without a driver and there is no node.
	BreakNoNode
	// BreakPermissions: the node is root:root 0600 (no udev rule gives the
	// render group read-write), and the user is not root: open fails with
	// EACCES, as the DRM core's file permissions make it.
	BreakPermissions
	// BreakProtocol: the in-kernel driver refused the firmware's protocol at
	// probe: the module is loaded but bound nothing, there is no node, and
	// the kernel log holds aie2_check_protocol's error (the wording of
	// xdna-driver #1074: "Incompatible firmware protocol major 7 minor 3"
	// and "probe with driver amdxdna failed with error -22").
	BreakProtocol
	// BreakMemlock: RLIMIT_MEMLOCK is 8 MiB (soft and hard), the default
	// of Linux 5.16+ and of many distributions.
	BreakMemlock
)

// Breaks names the breaks, for tests and their logs.
var Breaks = map[Break]string{BreakNone: "none", BreakNoNode: "no node", BreakPermissions: "wrong permissions",
	BreakProtocol: "protocol mismatch", BreakMemlock: "memlock too low"}

// HostConfig describes a fake machine with an NPU.
type HostConfig struct {
	Device    Config // the fake driver
	OutOfTree bool   // the amdxdna module is amd/xdna-driver's (taint O, a version file)
	Break     Break
}

const (
	renderGID = 105  // Debian's render group
	userUID   = 1000 // the user running xdnarun, in the render group
	pciAddr   = "0000:c6:00.1"
)

// NewHost lays out a machine under dir (sysfs, /dev/accel, /lib/firmware,
// /etc/group) and returns it as the doctor reads one, its ioctls going to a
// fake driver of cfg.Device.
func NewHost(dir string, cfg HostConfig) (*probe.Host, error) {
	dev, rev := uint16(0x17f0), uint8(0x10) // Strix
	if cfg.Device.Cols < 8 {
		dev, rev = 0x1502, 0 // Phoenix
	}
	pci := filepath.Join(dir, "sys/bus/pci/devices", pciAddr)
	files := map[string]string{
		"etc/group": "root:x:0:\nvideo:x:44:\nrender:x:105:user\nuser:x:1000:\n",
		"sys/bus/pci/devices/" + pciAddr + "/vendor":                        "0x1022\n",
		"sys/bus/pci/devices/" + pciAddr + "/device":                        fmt.Sprintf("0x%04x\n", dev),
		"sys/bus/pci/devices/" + pciAddr + "/revision":                      fmt.Sprintf("0x%02x\n", rev),
		fmt.Sprintf("lib/firmware/amdnpu/%04x_%02x/npu.sbin.zst", dev, rev): "fake firmware\n",
	}
	loaded := cfg.Break != BreakNoNode
	bound := loaded && cfg.Break != BreakProtocol
	if loaded {
		files["sys/module/amdxdna/taint"] = "\n"
		if cfg.OutOfTree {
			files["sys/module/amdxdna/taint"] = "O\n"
			files["sys/module/amdxdna/version"] = "2.21.0\n"
		}
	}
	if bound {
		files["dev/accel/accel0"] = ""
	}
	if cfg.Break != BreakPermissions {
		// A rule giving accel nodes to render, as a distribution may ship
		// one (assumed; not checked against any distribution).
		files["usr/lib/udev/rules.d/50-udev-default.rules"] = `SUBSYSTEM=="accel", GROUP="render", MODE="0660"` + "\n"
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	if bound {
		drv := filepath.Join(dir, "sys/bus/pci/drivers/amdxdna")
		if err := os.MkdirAll(drv, 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(drv, filepath.Join(pci, "driver")); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Join(dir, "sys/class/accel/accel0"), 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(pci, filepath.Join(dir, "sys/class/accel/accel0/device")); err != nil {
			return nil, err
		}
	}
	node := probe.Node{Mode: fs.ModeDevice | fs.ModeCharDevice | 0o660, UID: 0, GID: renderGID}
	if cfg.Break == BreakPermissions {
		node = probe.Node{Mode: fs.ModeDevice | fs.ModeCharDevice | 0o600}
	}
	log := []string{
		"[    5.51] amdxdna " + pciAddr + ": enabling device (0000 -> 0002)",
		"[    5.64] [drm] Initialized amdxdna_accel_driver 0.1.0 for " + pciAddr + " on minor 0",
	}
	if cfg.Break == BreakProtocol {
		log = []string{
			"[    5.51] amdxdna " + pciAddr + ": enabling device (0000 -> 0002)",
			"[    5.57] amdxdna " + pciAddr + ": [drm] *ERROR* aie2_check_protocol: Incompatible firmware protocol major 7 minor 3",
			"[    5.57] amdxdna " + pciAddr + ": probe with driver amdxdna failed with error -22",
		}
	}
	soft, hard := probe.Unlimited, probe.Unlimited
	if cfg.Break == BreakMemlock {
		soft, hard = 8<<20, 8<<20
	}
	k := &hostKernel{Kernel: New(cfg.Device), node: node, present: bound}
	return &probe.Host{
		Root:   dir,
		Kernel: k,
		Stat: func(path string) (probe.Node, error) {
			if path != Path || !bound {
				return probe.Node{}, &fs.PathError{Op: "stat", Path: path, Err: syscall.ENOENT}
			}
			return node, nil
		},
		User:      func() (probe.User, error) { return probe.User{UID: userUID, Groups: []uint32{userUID, renderGID}}, nil },
		Memlock:   func() (uint64, uint64, error) { return soft, hard, nil },
		KernelLog: func() ([]string, error) { return log, nil },
		Release:   "6.18.0-fake",
	}, nil
}

// hostKernel is the fake driver behind the node's permissions.
type hostKernel struct {
	*Kernel
	node    probe.Node
	present bool
}

// Open checks the node's permissions for the fake user (uid 1000, groups
// 1000 and render) as the VFS does, then opens the fake device.
func (k *hostKernel) Open(path string) (int, error) {
	if path != Path || !k.present {
		return -1, syscall.ENOENT
	}
	p := k.node.Mode.Perm()
	if !(k.node.GID == renderGID && p&0o060 == 0o060 || p&0o006 == 0o006) {
		return -1, syscall.EACCES
	}
	return k.Kernel.Open(path)
}

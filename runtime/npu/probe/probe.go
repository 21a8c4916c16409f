// Package probe finds AMD XDNA NPUs and reads what they are, in pure Go
// (no XRT, no cgo): it opens /dev/accel/accel*, checks that the DRM driver
// is amdxdna, and asks DRM_IOCTL_AMDXDNA_GET_INFO for the AIE array's
// metadata (columns, rows, version) and the firmware version.
package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
)

// ErrNoDevice reports that no amdxdna device was found.
var ErrNoDevice = errors.New("no AMD XDNA NPU: no /dev/accel/accel* device driven by amdxdna (needs Linux 6.14+ or the out-of-tree amdxdna driver)")

// ErrNotXDNA reports an accel device driven by another driver.
var ErrNotXDNA = errors.New("not an amdxdna device")

// DriverName is the DRM driver name amdxdna reports.
const DriverName = "amdxdna_accel_driver"

// Info is what a device says about itself.
type Info struct {
	Path          string // /dev/accel/accelN
	Driver        string // DRM driver name
	DriverDesc    string // DRM driver description
	DriverVersion [3]int // major, minor, patch level
	PCIDevice     uint16 // PCI device id from sysfs (0 if unknown): 0x1502 NPU1, 0x17f0 NPU4/5/6
	PCIRevision   uint8
	Metadata      AIEMetadata     // QUERY_AIE_METADATA
	AIEVersion    AIEVersion      // QUERY_AIE_VERSION
	Firmware      FirmwareVersion // QUERY_FIRMWARE_VERSION
}

// Columns returns the AIE columns of the array, as the driver reports them
// (on NPU1 this counts column 0, which contexts cannot use).
func (i *Info) Columns() int { return int(i.Metadata.Cols) }

// Rows returns the AIE rows (core, memory and shim rows together).
func (i *Info) Rows() int { return int(i.Metadata.Rows) }

// Generation names the NPU from its PCI id: "npu1" (Phoenix / Hawk Point),
// "npu4" (Strix), "npu5" (Strix Halo), "npu6" (Krackan), or "" if unknown
// (npu-stack.md 1.1).
func (i *Info) Generation() string {
	switch {
	case i.PCIDevice == 0x1502:
		return "npu1"
	case i.PCIDevice == 0x17f0 && i.PCIRevision == 0x10:
		return "npu4"
	case i.PCIDevice == 0x17f0 && i.PCIRevision == 0x11:
		return "npu5"
	case i.PCIDevice == 0x17f0 && i.PCIRevision == 0x20:
		return "npu6"
	}
	return ""
}

// Target returns the xdna target a package for this device should be
// packed for: "xdna1" for NPU1, "xdna2" for NPU4/5/6; without a PCI id, by
// the column count (5 on NPU1, 8 on the others); "" if neither tells.
func (i *Info) Target() string {
	switch i.Generation() {
	case "npu1":
		return "xdna1"
	case "npu4", "npu5", "npu6":
		return "xdna2"
	}
	switch i.Metadata.Cols {
	case 4, 5:
		return "xdna1"
	case 8:
		return "xdna2"
	}
	return ""
}

func (i *Info) String() string {
	return fmt.Sprintf("%s: %s %d.%d.%d, %s (pci %04x rev %02x), AIE %d.%d, %d columns x %d rows, firmware %d.%d.%d.%d",
		i.Path, i.Driver, i.DriverVersion[0], i.DriverVersion[1], i.DriverVersion[2],
		cmpOr(i.Generation(), "unknown npu"), i.PCIDevice, i.PCIRevision,
		i.AIEVersion.Major, i.AIEVersion.Minor, i.Metadata.Cols, i.Metadata.Rows,
		i.Firmware.Major, i.Firmware.Minor, i.Firmware.Patch, i.Firmware.Build)
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Probe returns every amdxdna device under /dev/accel, or ErrNoDevice.
// Accel devices of other drivers are skipped; if no device qualifies, the
// error wraps ErrNoDevice and says what was found instead.
func Probe() ([]Info, error) { return probeGlob("/dev/accel/accel*") }

func probeGlob(pattern string) ([]Info, error) {
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var infos []Info
	var errs []string
	for _, p := range paths {
		info, err := Device(p)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		infos = append(infos, *info)
	}
	if len(infos) == 0 {
		if len(errs) > 0 {
			return nil, fmt.Errorf("%w (%s)", ErrNoDevice, strings.Join(errs, "; "))
		}
		return nil, ErrNoDevice
	}
	return infos, nil
}

// Device queries the accel device at path. A missing path wraps
// ErrNoDevice; a device of another driver wraps ErrNotXDNA.
func Device(path string) (*Info, error) { return deviceOn(amdxdna.Sys{}, "", path) }

// DeviceWith is Device through the system calls of k (a fake driver in
// tests).
func DeviceWith(k amdxdna.Kernel, path string) (*Info, error) { return deviceOn(k, "", path) }

// deviceOn is Device through the system calls of k, reading sysfs under
// root ("" for /).
func deviceOn(k amdxdna.Kernel, root, path string) (*Info, error) {
	fd, err := k.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: open %s: %v", ErrNoDevice, path, err)
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err} // permission: the user may need the render group
	}
	defer k.Close(fd)
	info := &Info{Path: path}
	if err := drmDriver(k, fd, info); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !strings.HasPrefix(info.Driver, "amdxdna") {
		return nil, fmt.Errorf("%s: driver %q: %w", path, info.Driver, ErrNotXDNA)
	}
	readPCI(root, path, info)
	if err := getInfo(k, fd, amdxdna.QueryAIEMetadata, &info.Metadata); err != nil {
		return nil, fmt.Errorf("%s: query AIE metadata: %w", path, err)
	}
	if err := getInfo(k, fd, amdxdna.QueryAIEVersion, &info.AIEVersion); err != nil {
		return nil, fmt.Errorf("%s: query AIE version: %w", path, err)
	}
	if err := getInfo(k, fd, amdxdna.QueryFirmwareVersion, &info.Firmware); err != nil {
		return nil, fmt.Errorf("%s: query firmware version: %w", path, err)
	}
	return info, nil
}

// drmDriver asks DRM_IOCTL_VERSION for the driver's name and version.
func drmDriver(k amdxdna.Kernel, fd int, info *Info) error {
	var name, desc [128]byte
	var p runtime.Pinner
	defer p.Unpin()
	p.Pin(&name[0])
	p.Pin(&desc[0])
	v := amdxdna.DRMVersion{NameLen: uint64(len(name)), Name: uint64(uintptr(unsafe.Pointer(&name[0]))),
		DescLen: uint64(len(desc)), Desc: uint64(uintptr(unsafe.Pointer(&desc[0])))}
	if err := k.Ioctl(fd, amdxdna.IoctlVersion, unsafe.Pointer(&v)); err != nil {
		if errors.Is(err, syscall.ENOTTY) || errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("not a DRM device: %w", err)
		}
		return fmt.Errorf("DRM_IOCTL_VERSION: %w", err)
	}
	n := min(int(v.NameLen), len(name))
	info.Driver = strings.TrimRight(string(name[:n]), "\x00")
	info.DriverVersion = [3]int{int(v.Major), int(v.Minor), int(v.Patchlevel)}
	info.DriverDesc = strings.TrimRight(string(desc[:min(int(v.DescLen), len(desc))]), "\x00")
	return nil
}

// getInfo runs DRM_IOCTL_AMDXDNA_GET_INFO for param into *out.
func getInfo[T any](k amdxdna.Kernel, fd int, param uint32, out *T) error {
	var p runtime.Pinner
	defer p.Unpin()
	p.Pin(out)
	size := uint32(unsafe.Sizeof(*out))
	arg := amdxdna.GetInfo{Param: param, BufferSize: size, Buffer: uint64(uintptr(unsafe.Pointer(out)))}
	return k.Ioctl(fd, amdxdna.IoctlGetInfo, unsafe.Pointer(&arg))
}

// readPCI reads the PCI id of /dev/accel/accelN from
// /sys/class/accel/accelN/device, if sysfs has it.
func readPCI(root, path string, info *Info) {
	dir := filepath.Join(root, "/sys/class/accel", filepath.Base(path), "device")
	read := func(name string) (uint64, bool) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 16)
		return v, err == nil
	}
	if v, ok := read("device"); ok {
		info.PCIDevice = uint16(v)
	}
	if v, ok := read("revision"); ok {
		info.PCIRevision = uint8(v)
	}
}

package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
)

// Verdict is a check's outcome.
type Verdict string

// The verdicts. Unknown is for what this process cannot see (a kernel log
// it may not read, a node that is absent for another reason).
const (
	Pass    Verdict = "pass"
	Fail    Verdict = "fail"
	Unknown Verdict = "unknown"
)

// Check is one precondition of the NPU path and what was found.
type Check struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	Found   string  `json:"found"`         // what the check saw
	Fix     string  `json:"fix,omitempty"` // what to do when it is not a pass
	// Needed is true when the NPU path cannot run without it: a fail of a
	// needed check makes the doctor's exit status 1.
	Needed bool `json:"needed"`
}

// Node is what stat(2) says of a device node.
type Node struct {
	Mode     fs.FileMode
	UID, GID uint32
}

// User is the process's identity as the kernel checks it.
type User struct {
	UID    uint32
	Groups []uint32 // the primary group and the supplementary ones of this process
}

// Host is the machine the doctor reads: System is this one, and package
// amdxdnatest fakes one with each precondition broken in turn.
type Host struct {
	// Root prefixes the files read: /dev/accel, /sys, /lib/firmware,
	// /etc/group, /etc/udev ("" for the real root).
	Root string
	// Kernel makes the system calls on the device.
	Kernel amdxdna.Kernel
	// Stat returns the node of a device path (not prefixed with Root).
	Stat func(path string) (Node, error)
	// User returns the process's user and groups.
	User func() (User, error)
	// Memlock returns RLIMIT_MEMLOCK (soft, hard; ^uint64(0) is unlimited).
	Memlock func() (soft, hard uint64, err error)
	// IPCLock reports whether the process has CAP_IPC_LOCK, which lifts
	// RLIMIT_MEMLOCK (nil: it has not).
	IPCLock func() bool
	// KernelLog returns the kernel's log lines (dmesg); an error when this
	// process may not read it.
	KernelLog func() ([]string, error)
	// Release is the running kernel's release (uname -r).
	Release string
}

// Unlimited is RLIM_INFINITY.
const Unlimited = ^uint64(0)

// XCLBinNeed is a kernel a package (or the catalog, without one) needs.
type XCLBinNeed struct {
	Slot     string // the slot name
	Path     string // where the xclbin is looked for when not embedded
	Embedded bool   // the package carries it
}

// DoctorOptions says what the NPU path will ask of the machine.
type DoctorOptions struct {
	Target   string       // the package's target, "" when no package is given
	Pinned   int64        // bytes the NPU path pins: the staging ring (2 x 64 MiB) and the resident budget
	PinnedBy string       // what Pinned is made of, for the message
	XCLBins  []XCLBinNeed // the kernels needed; nil: the check is not run
	// XRT, when set (a -tags xrt build), opens XRT and describes it.
	XRT func() (string, error)
}

// The PCI ids of the XDNA NPUs (vendor 0x1022; npu-stack.md 1.1).
var npuPCI = map[uint16]bool{0x1502: true, 0x17f0: true}

// Protocol versions the in-kernel driver accepts, from the mainline
// npuN_regs.c of Linux 6.14 to 6.19 (protocol_major, protocol_minor: the
// firmware's major must be equal and its minor at least this); later
// drivers replace the fixed pair by a firmware directory and a feature
// table that accepts major 7 too. Not checked on hardware by us. Firmware
// 1.0.x speaks protocol 6 and 1.1.x protocol 7 on NPU4/5/6 (xdna-driver
// #1074, #1257).
var kernelProtocol = map[string][2]int{"npu1": {5, 7}, "npu4": {6, 12}, "npu5": {6, 12}, "npu6": {6, 12}}

// state is what the checks share as they run in order.
type state struct {
	h       *Host
	o       DoctorOptions
	nodes   []string // device paths found
	info    *Info    // the first device that answered
	openErr error
	pci     []pciDev // NPUs on the PCI bus
	log     []string
	logErr  error
	module  string // the amdxdna module's directory under /sys/module, "" if not loaded
}

type pciDev struct {
	addr   string // 0000:c6:00.1
	device uint16
	rev    uint8
	driver string // bound driver, "" if none
}

func (p pciDev) gen() string { return (&Info{PCIDevice: p.device, PCIRevision: p.rev}).Generation() }

// checks is the doctor's table: in order, each check reads the state the
// earlier ones filled.
var checks = []struct {
	name string
	run  func(s *state) Check
}{
	{"NPU on the PCI bus", checkPCI},
	{"driver", checkDriver},
	{"firmware protocol", checkProtocol},
	{"device node", checkNode},
	{"permissions", checkPermissions},
	{"firmware", checkFirmware},
	{"NPU generation and columns", checkTopology},
	{"memlock limit", checkMemlock},
	{"kernels (xclbins)", checkXCLBins},
	{"XRT", checkXRT},
}

// Doctor runs every check against h, one Check each; XRT's only in a
// -tags xrt build (o.XRT set).
func Doctor(h *Host, o DoctorOptions) []Check {
	s := &state{h: h, o: o}
	s.gather()
	var out []Check
	for _, c := range checks {
		r := c.run(s)
		if r.Name == "" {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Failed reports whether a needed check failed.
func Failed(cs []Check) bool {
	return slices.ContainsFunc(cs, func(c Check) bool { return c.Needed && c.Verdict == Fail })
}

func (s *state) path(p string) string { return filepath.Join(s.h.Root, p) }

func (s *state) gather() {
	matches, _ := filepath.Glob(s.path("/dev/accel/accel*"))
	for _, m := range matches {
		rel, _ := filepath.Rel(s.path("/"), m)
		s.nodes = append(s.nodes, "/"+rel)
	}
	slices.Sort(s.nodes)
	for _, n := range s.nodes {
		info, err := deviceOn(s.h.Kernel, s.h.Root, n)
		if err == nil {
			s.info = info
			break
		}
		if s.openErr == nil || !errors.Is(err, ErrNotXDNA) {
			s.openErr = err
		}
	}
	devs, _ := filepath.Glob(s.path("/sys/bus/pci/devices/*"))
	for _, d := range devs {
		read := func(name string) uint64 {
			b, _ := os.ReadFile(filepath.Join(d, name))
			v, _ := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 16)
			return v
		}
		if read("vendor") != 0x1022 || !npuPCI[uint16(read("device"))] {
			continue
		}
		p := pciDev{addr: filepath.Base(d), device: uint16(read("device")), rev: uint8(read("revision"))}
		if l, err := os.Readlink(filepath.Join(d, "driver")); err == nil {
			p.driver = filepath.Base(l)
		}
		s.pci = append(s.pci, p)
	}
	if _, err := os.Stat(s.path("/sys/module/amdxdna")); err == nil {
		s.module = s.path("/sys/module/amdxdna")
	}
	if s.h.KernelLog != nil {
		s.log, s.logErr = s.h.KernelLog()
	} else {
		s.logErr = errors.New("no kernel log")
	}
}

func needed(name string, v Verdict, found, fix string) Check {
	return Check{Name: name, Verdict: v, Found: found, Fix: fix, Needed: true}
}

func checkPCI(s *state) Check {
	const name = "NPU on the PCI bus"
	if len(s.pci) == 0 {
		if s.info != nil { // sysfs hidden (a container): the device answered anyway
			return needed(name, Unknown, "no PCI device 1022:1502 or 1022:17f0 visible in /sys, but "+s.info.Path+" answers", "")
		}
		return needed(name, Fail, "no AMD XDNA NPU (PCI 1022:1502 or 1022:17f0) in /sys/bus/pci/devices",
			"this machine has no Ryzen AI NPU (Phoenix, Hawk Point, Strix, Strix Halo, Krackan), or the BIOS disables it (look for \"IPU\" or \"NPU\" in its settings); xdnarun runs on the CPU (--device cpu)")
	}
	p := s.pci[0]
	return needed(name, Pass, fmt.Sprintf("%s: 1022:%04x rev %02x (%s)", p.addr, p.device, p.rev, cmpOr(p.gen(), "unknown generation")), "")
}

// moduleKind says whether the loaded amdxdna is the in-kernel module or the
// out-of-tree one (taint flag O), and its version when it has one.
func (s *state) moduleKind() string {
	if s.module == "" {
		return ""
	}
	taint, _ := os.ReadFile(filepath.Join(s.module, "taint"))
	kind := "in-kernel (Linux " + cmpOr(s.h.Release, "?") + ")"
	if strings.Contains(string(taint), "O") {
		kind = "out-of-tree (amd/xdna-driver)"
	}
	if v, err := os.ReadFile(filepath.Join(s.module, "version")); err == nil {
		kind += " version " + strings.TrimSpace(string(v))
	}
	return kind
}

func checkDriver(s *state) Check {
	const name = "driver"
	if s.info != nil {
		v := s.info.DriverVersion
		return needed(name, Pass, fmt.Sprintf("%s %d.%d.%d, %s", s.info.Driver, v[0], v[1], v[2], cmpOr(s.moduleKind(), "module information not in /sys")), "")
	}
	if s.module == "" {
		if len(s.pci) == 0 {
			return needed(name, Fail, "amdxdna is not loaded", "no NPU to drive (see above)")
		}
		return needed(name, Fail, "amdxdna is not loaded (no /sys/module/amdxdna)",
			"Linux 6.14 or later has it (CONFIG_DRM_ACCEL_AMDXDNA=m): sudo modprobe amdxdna; on an older kernel build the out-of-tree driver (github.com/amd/xdna-driver)")
	}
	found := "amdxdna loaded: " + s.moduleKind()
	if len(s.pci) > 0 && s.pci[0].driver == "" {
		return needed(name, Fail, found+", but it did not bind "+s.pci[0].addr+" (its probe failed)",
			"the kernel log says why (sudo dmesg | grep -i amdxdna); the firmware protocol line below is the usual cause")
	}
	return needed(name, Pass, found, "")
}

var protocolRE = regexp.MustCompile(`Incompatible firmware protocol(?: version)? major (\d+) minor (\d+)`)

func checkProtocol(s *state) Check {
	const name = "firmware protocol"
	gen := ""
	if len(s.pci) > 0 {
		gen = s.pci[0].gen()
	}
	want, known := kernelProtocol[gen]
	expect := "the in-kernel driver of Linux 6.14-6.19 expects protocol " + fmt.Sprintf("%d.%d or a later minor", want[0], want[1])
	if !known {
		expect = "the driver checks the protocol at probe"
	}
	if s.info != nil || len(s.nodes) > 0 && len(s.pci) > 0 && s.pci[0].driver != "" {
		return needed(name, Pass, "the driver bound the NPU, so it accepted the firmware's protocol at probe (it refuses a mismatch); "+expect+" on "+cmpOr(gen, "this NPU"), "")
	}
	if len(s.pci) == 0 || s.module == "" {
		return needed(name, Unknown, "not checked: no NPU and driver to compare (the lines above say why)", "")
	}
	if s.logErr != nil {
		return needed(name, Unknown, "no device, and the kernel log is not readable here ("+s.logErr.Error()+")",
			"sudo dmesg | grep -i amdxdna: a line \"Incompatible firmware protocol major M minor N\" means the firmware and driver disagree")
	}
	for _, l := range s.log {
		if m := protocolRE.FindStringSubmatch(l); m != nil {
			fix := "install the firmware this driver expects: the amdnpu/ files of the linux-firmware release that matches your kernel, or a firmware file of protocol " + fmt.Sprintf("%d.%d+", want[0], want[1]) + " (1.0.x on NPU4/5/6); or a newer kernel, or the out-of-tree driver (github.com/amd/xdna-driver) with the firmware it installs"
			if !known {
				fix = "install the firmware that matches this driver (the linux-firmware release of your kernel), or the out-of-tree driver with its firmware"
			}
			return needed(name, Fail, fmt.Sprintf("the firmware speaks protocol %s.%s; %s: %q", m[1], m[2], expect, strings.TrimSpace(l)), fix)
		}
	}
	return needed(name, Unknown, "no device, and no protocol message in the kernel log", "sudo dmesg | grep -i amdxdna says why the probe failed")
}

func checkNode(s *state) Check {
	const name = "device node"
	if len(s.nodes) == 0 {
		return needed(name, Fail, "no /dev/accel/accel*", cmpOr(noNodeFix(s), "the lines above say why"))
	}
	if s.info == nil && errors.Is(s.openErr, ErrNotXDNA) {
		return needed(name, Fail, strings.Join(s.nodes, ", ")+": "+s.openErr.Error(), "another accelerator's node; the NPU's needs the amdxdna driver (see driver)")
	}
	return needed(name, Pass, strings.Join(s.nodes, ", "), "")
}

func noNodeFix(s *state) string {
	switch {
	case len(s.pci) == 0:
		return ""
	case s.module == "":
		return "load the driver (see the driver line)"
	}
	return "the driver is loaded but made no node: see the driver and firmware protocol lines"
}

// udevRule is the rule that gives the render group the NPU, as distributions
// ship it for DRM render nodes.
const udevRule = `SUBSYSTEM=="accel", KERNEL=="accel*", DRIVERS=="amdxdna", MODE="0660", GROUP="render"`

func checkPermissions(s *state) Check {
	const name = "permissions"
	if len(s.nodes) == 0 {
		return needed(name, Unknown, "not checked: no device node", "")
	}
	path := s.nodes[0]
	if s.info != nil {
		path = s.info.Path
	}
	n, err := s.h.Stat(path)
	if err != nil {
		return needed(name, Unknown, err.Error(), "")
	}
	u, err := s.h.User()
	if err != nil {
		return needed(name, Unknown, err.Error(), "")
	}
	groups := s.groupNames()
	gname := cmpOr(groups[n.GID], strconv.Itoa(int(n.GID)))
	found := fmt.Sprintf("%s: %s, owner %d, group %s", path, modeString(n.Mode), n.UID, gname)
	if n.Mode&fs.ModeCharDevice == 0 {
		return needed(name, Fail, found+": not a character device", "remove it and reload the driver (sudo modprobe -r amdxdna; sudo modprobe amdxdna)")
	}
	perm := n.Mode.Perm()
	ok := u.UID == 0 || perm&0o006 == 0o006 || u.UID == n.UID && perm&0o600 == 0o600 ||
		slices.Contains(u.Groups, n.GID) && perm&0o060 == 0o060
	var mine []string
	for _, g := range u.Groups {
		mine = append(mine, cmpOr(groups[g], strconv.Itoa(int(g))))
	}
	found += "; you: uid " + strconv.Itoa(int(u.UID)) + ", groups " + strings.Join(mine, ",")
	if rules := s.udevRules(); len(rules) > 0 {
		found += "; udev rules for accel: " + strings.Join(rules, ", ")
	} else {
		found += "; no udev rule names accel"
	}
	if ok && s.info == nil && s.openErr != nil && errors.Is(s.openErr, fs.ErrPermission) {
		ok = false
	}
	if ok {
		if s.info == nil && s.openErr != nil {
			return needed(name, Unknown, found+"; opening it: "+s.openErr.Error(), "")
		}
		return needed(name, Pass, found+": read-write", "")
	}
	switch {
	case perm&0o060 == 0o060 && n.GID != 0:
		return needed(name, Fail, found+": no read-write access",
			fmt.Sprintf("sudo usermod -aG %s $USER, then log out and in again (groups are read at login)", gname))
	default:
		return needed(name, Fail, found+": no read-write access for the group",
			fmt.Sprintf("a udev rule: echo '%s' | sudo tee /etc/udev/rules.d/70-amdxdna.rules; sudo udevadm control --reload; sudo udevadm trigger; then sudo usermod -aG render $USER and log in again", udevRule))
	}
}

// udevRules lists the udev rule files that mention the accel subsystem.
func (s *state) udevRules() []string {
	var out []string
	for _, dir := range []string{"/etc/udev/rules.d", "/usr/lib/udev/rules.d", "/lib/udev/rules.d", "/run/udev/rules.d"} {
		files, _ := filepath.Glob(s.path(dir + "/*.rules"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err == nil && strings.Contains(string(b), `"accel"`) {
				rel := strings.TrimPrefix(f, s.h.Root)
				if !slices.Contains(out, rel) {
					out = append(out, rel)
				}
			}
		}
	}
	return out
}

// modeString is ls -l's: crw-rw---- for a character device.
func modeString(m fs.FileMode) string {
	kind := "-"
	switch {
	case m&fs.ModeCharDevice != 0:
		kind = "c"
	case m&fs.ModeDevice != 0:
		kind = "b"
	case m.IsDir():
		kind = "d"
	}
	return kind + m.Perm().String()[1:]
}

// groupNames reads /etc/group.
func (s *state) groupNames() map[uint32]string {
	m := map[uint32]string{}
	b, err := os.ReadFile(s.path("/etc/group"))
	if err != nil {
		return m
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) < 3 {
			continue
		}
		if id, err := strconv.ParseUint(f[2], 10, 32); err == nil {
			m[uint32(id)] = f[0]
		}
	}
	return m
}

func checkFirmware(s *state) Check {
	const name = "firmware"
	var files []string
	if len(s.pci) > 0 {
		p := s.pci[0]
		files, _ = filepath.Glob(s.path(fmt.Sprintf("/lib/firmware/amdnpu/%04x_%02x/npu*.sbin*", p.device, p.rev)))
		for i, f := range files {
			files[i] = strings.TrimPrefix(f, s.h.Root)
		}
	}
	if s.info != nil {
		f := s.info.Firmware
		found := fmt.Sprintf("version %d.%d.%d.%d running", f.Major, f.Minor, f.Patch, f.Build)
		if len(files) > 0 {
			found += "; files " + strings.Join(files, ", ")
		}
		return needed(name, Pass, found, "")
	}
	if len(s.pci) == 0 {
		return needed(name, Unknown, "not checked: no NPU to say which firmware it needs", "")
	}
	p := s.pci[0]
	if len(files) == 0 {
		return needed(name, Fail, fmt.Sprintf("no /lib/firmware/amdnpu/%04x_%02x/npu*.sbin*", p.device, p.rev),
			"install linux-firmware (20241017 or later carries amdnpu/), or the firmware the out-of-tree driver installs")
	}
	return needed(name, Unknown, "files "+strings.Join(files, ", ")+"; no device to ask which version runs", "")
}

func checkTopology(s *state) Check {
	const name = "NPU generation and columns"
	if s.info == nil {
		return needed(name, Unknown, "not checked: no device to ask (QUERY_AIE_METADATA)", "")
	}
	in := s.info
	found := fmt.Sprintf("%s, AIE %d.%d, %d columns x %d rows (QUERY_AIE_METADATA), target %s",
		cmpOr(in.Generation(), "unknown generation"), in.AIEVersion.Major, in.AIEVersion.Minor, in.Metadata.Cols, in.Metadata.Rows, cmpOr(in.Target(), "unknown"))
	if in.Generation() == "npu1" && in.Metadata.Cols == 5 {
		found += "; 4 columns usable (contexts cannot use column 0)"
	}
	switch {
	case in.Target() == "":
		return needed(name, Fail, found, "xdna knows xdna1 (Phoenix, Hawk Point) and xdna2 (Strix, Strix Halo, Krackan); please report this device")
	case s.o.Target != "" && s.o.Target != in.Target():
		return needed(name, Fail, found+"; the package is packed for "+s.o.Target, "repack for this NPU: xdnapack MODEL.gguf -o MODEL.xdna --target "+in.Target())
	}
	return needed(name, Pass, found, "")
}

func checkMemlock(s *state) Check {
	const name = "memlock limit"
	if s.h.Memlock == nil {
		return Check{}
	}
	soft, hard, err := s.h.Memlock()
	if err != nil {
		return needed(name, Unknown, err.Error(), "")
	}
	show := func(v uint64) string {
		if v == Unlimited {
			return "unlimited"
		}
		return mib(int64(v))
	}
	found := fmt.Sprintf("RLIMIT_MEMLOCK %s (hard %s); the NPU path pins %s (%s)", show(soft), show(hard), mib(s.o.Pinned), s.o.PinnedBy)
	if soft == Unlimited || soft >= uint64(s.o.Pinned) {
		return needed(name, Pass, found, "")
	}
	if s.h.IPCLock != nil && s.h.IPCLock() {
		return needed(name, Pass, found+"; this process has CAP_IPC_LOCK, which lifts the limit (a user without it needs the fix: raise it in /etc/security/limits.d)", "")
	}
	fix := fmt.Sprintf("ulimit -l %d for this shell (the hard limit allows it)", (s.o.Pinned+1023)/1024)
	if hard != Unlimited && hard < uint64(s.o.Pinned) {
		fix = "raise it for your user: echo '" + "@render - memlock unlimited" + "' | sudo tee /etc/security/limits.d/99-xdna.conf and log in again (a systemd service: LimitMEMLOCK=infinity)"
	}
	return needed(name, Fail, found, fix)
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func checkXCLBins(s *state) Check {
	const name = "kernels (xclbins)"
	if s.o.XCLBins == nil {
		return needed(name, Unknown, "not checked: no package and no NPU to say which target's kernels", "xdnarun doctor MODEL.xdna checks the kernels that package needs")
	}
	var have, missing []string
	for _, x := range s.o.XCLBins {
		switch {
		case x.Embedded:
			have = append(have, x.Slot+" (in the package)")
		case fileExists(x.Path):
			have = append(have, x.Slot+" ("+x.Path+")")
		default:
			missing = append(missing, x.Slot+" ("+x.Path+")")
		}
	}
	if len(s.o.XCLBins) == 0 {
		return needed(name, Pass, "the package plans no matrix on the NPU", "")
	}
	if len(missing) > 0 {
		return needed(name, Fail, fmt.Sprintf("%d of %d missing: %s", len(missing), len(s.o.XCLBins), strings.Join(missing, ", ")),
			"build them (kernels/README.md: bash kernels/build.sh, with mlir-aie and Peano) and pack again with that catalog (xdnapack --catalog manifest.toml), so the package embeds them")
	}
	return needed(name, Pass, fmt.Sprintf("all %d present: %s", len(have), strings.Join(have, ", ")), "")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Size() > 0
}

func checkXRT(s *state) Check {
	const name = "XRT"
	if s.o.XRT == nil {
		return Check{}
	}
	d, err := s.o.XRT()
	if err != nil {
		return needed(name, Fail, err.Error(), "install XRT and its NPU plugin (github.com/amd/xdna-driver: xrt and xrt_plugin packages), source /opt/xilinx/xrt/setup.sh; or use a build without -tags xrt (the pure-Go driver path)")
	}
	return needed(name, Pass, d, "")
}

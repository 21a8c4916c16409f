package probe

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
)

// System returns this machine as the doctor reads it.
func System() *Host {
	h := &Host{Kernel: amdxdna.Sys{}}
	h.Stat = func(path string) (Node, error) {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			return Node{}, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		fi, err := os.Stat(path)
		if err != nil {
			return Node{}, err
		}
		return Node{Mode: fi.Mode(), UID: st.Uid, GID: st.Gid}, nil
	}
	h.User = func() (User, error) {
		gs, err := unix.Getgroups()
		if err != nil {
			return User{}, err
		}
		u := User{UID: uint32(os.Geteuid()), Groups: []uint32{uint32(os.Getegid())}}
		for _, g := range gs {
			if uint32(g) != u.Groups[0] {
				u.Groups = append(u.Groups, uint32(g))
			}
		}
		return u, nil
	}
	h.Memlock = func() (uint64, uint64, error) {
		var r unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
			return 0, 0, err
		}
		return r.Cur, r.Max, nil
	}
	h.IPCLock = func() bool {
		const capIPCLock = 14
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return false
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
				caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				return err == nil && caps&(1<<capIPCLock) != 0
			}
		}
		return false
	}
	h.KernelLog = func() ([]string, error) {
		const readAll = 3 // SYSLOG_ACTION_READ_ALL
		buf := make([]byte, 1<<20)
		n, err := unix.Klogctl(readAll, buf)
		if err != nil {
			return nil, &os.SyscallError{Syscall: "syslog (dmesg; kernel.dmesg_restrict)", Err: err}
		}
		return strings.Split(string(buf[:n]), "\n"), nil
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Release = unix.ByteSliceToString(u.Release[:])
	}
	return h
}

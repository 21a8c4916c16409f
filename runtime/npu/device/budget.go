package device

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/xdna-go/xdna/runtime/npu"
)

// AutoShare is the share of the memory that can be pinned here that
// --npu-resident auto takes for resident weights (the rest stays for the
// KV cache, the CPU's work and the other programs).
const AutoShare = 0.5

// Limits are what bounds the memory this process can pin; 0 is unknown or
// unlimited.
type Limits struct {
	MemAvailable int64 // /proc/meminfo MemAvailable
	SwapFree     int64 // /proc/meminfo SwapFree
	Cgroup       int64 // the cgroup's memory.max less memory.current
	Memlock      int64 // RLIMIT_MEMLOCK's soft limit (0: unlimited)
}

// ReadLimits reads the limits of this process and machine.
func ReadLimits() Limits {
	var l Limits
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			switch {
			case err != nil:
			case k == "MemAvailable":
				l.MemAvailable = n * 1024
			case k == "SwapFree":
				l.SwapFree = n * 1024
			}
		}
		f.Close()
	}
	mx, err1 := os.ReadFile("/sys/fs/cgroup/memory.max")
	cur, err2 := os.ReadFile("/sys/fs/cgroup/memory.current")
	if err1 == nil && err2 == nil {
		m, e1 := strconv.ParseInt(strings.TrimSpace(string(mx)), 10, 64) // "max": no limit
		c, e2 := strconv.ParseInt(strings.TrimSpace(string(cur)), 10, 64)
		if e1 == nil && e2 == nil && m > c {
			l.Cgroup = m - c
		}
	}
	l.Memlock = npu.Memlock()
	return l
}

// Allocatable is the memory this process can still allocate under l and
// where the figure comes from: the smaller of MemAvailable plus SwapFree
// and the cgroup's remaining limit; 0 when neither is known.
func (l Limits) Allocatable() (int64, string) {
	avail, src := int64(0), ""
	if l.MemAvailable > 0 {
		avail, src = l.MemAvailable+l.SwapFree, "the machine (MemAvailable + SwapFree)"
	}
	if l.Cgroup > 0 && (avail == 0 || l.Cgroup < avail) {
		avail, src = l.Cgroup, "the cgroup (memory.max - memory.current)"
	}
	return avail, src
}

// Pinnable is the memory that can be pinned under l and which limit binds
// ("" if none is known).
func (l Limits) Pinnable() (int64, string) {
	n, why := int64(0), ""
	for _, c := range []struct {
		v    int64
		what string
	}{
		{l.MemAvailable, "the machine's available memory (MemAvailable)"},
		{l.Cgroup, "the cgroup's memory limit (memory.max - memory.current)"},
		{l.Memlock, "the memlock limit (ulimit -l)"},
	} {
		if c.v > 0 && (n == 0 || c.v < n) {
			n, why = c.v, c.what
		}
	}
	return n, why
}

// RingBytes is what the backend pins whatever the budget: the two staging
// buffers, the activation and output buffers and the instruction buffers.
const RingBytes = 2*npu.DefaultRingSize + 2*npu.DefaultIOSize + 4*8192

// ParseResident turns --npu-resident's value into a pin budget in bytes:
// "0" (streaming only), a size ("512M", "2G", "1073741824"; K, M, G, T
// are powers of 1024), or "auto": AutoShare of what can be pinned here
// (Limits.Pinnable) less the ring. note says what auto chose and which
// limit bound it.
func ParseResident(spec string, l Limits) (budget int64, note string, err error) {
	spec = strings.TrimSpace(spec)
	if spec == "auto" {
		n, why := l.Pinnable()
		if n == 0 {
			return 0, "--npu-resident auto: no pin limit could be read; streaming every matrix through the ring", nil
		}
		b := max(0, int64(float64(n)*AutoShare)-RingBytes)
		return b, fmt.Sprintf("--npu-resident auto: %s binds at %s; resident budget %s (%.0f%% less the %s ring)",
			why, human(n), human(b), 100*AutoShare, human(RingBytes)), nil
	}
	mult := int64(1)
	num := strings.TrimSuffix(strings.ToUpper(spec), "B")
	if i := strings.IndexAny(num, "KMGT"); i >= 0 && i == len(num)-1 {
		mult = map[byte]int64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}[num[i]]
		num = num[:i]
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || v*float64(mult) > 1<<50 {
		return 0, "", fmt.Errorf("--npu-resident %q: want auto, 0, or a size such as 512M or 2G", spec)
	}
	return int64(v * float64(mult)), "", nil
}

// MemlockCheck says, when the memlock limit is below what the ring alone
// pins, how to raise it; "" when it is not.
func MemlockCheck(l Limits) string {
	if l.Memlock == 0 || l.Memlock >= RingBytes {
		return ""
	}
	return fmt.Sprintf("the memlock limit (ulimit -l) is %s, below the %s the NPU's staging ring pins; raise it (ulimit -l unlimited, or memlock in /etc/security/limits.conf)", human(l.Memlock), human(RingBytes))
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

package device

import (
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/npu/xrt"
)

// TestNPUPath: a build without -tags xrt names the pure-Go driver (the
// landed check asked xrt.Open(-1), which failed on the index and so named
// XRT in every build).
func TestNPUPath(t *testing.T) {
	got := NPUPath()
	if xrt.Built() != strings.HasPrefix(got, "xrt") {
		t.Errorf("NPUPath %q with xrt.Built %v", got, xrt.Built())
	}
}

func TestParseResident(t *testing.T) {
	for _, c := range []struct {
		spec string
		want int64
	}{{"0", 0}, {"512M", 512 << 20}, {"2G", 2 << 30}, {"1.5g", 3 << 29}, {"1073741824", 1 << 30}, {"64KiB", -1}, {"64KB", 64 << 10}, {"-1", -1}, {"lots", -1}, {"", -1}} {
		got, _, err := ParseResident(c.spec, Limits{})
		if c.want < 0 {
			if err == nil || !strings.Contains(err.Error(), "--npu-resident") {
				t.Errorf("%q: %d, %v; want an error naming the flag", c.spec, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %d, %v; want %d", c.spec, got, err, c.want)
		}
	}
	// auto: half the binding limit less the ring, and which one binds.
	for _, c := range []struct {
		l    Limits
		want int64
		says string
	}{
		{Limits{MemAvailable: 16 << 30, Cgroup: 8 << 30, Memlock: 0}, 4<<30 - RingBytes, "cgroup"},
		{Limits{MemAvailable: 16 << 30, Memlock: 8 << 20}, 0, "memlock"},
		{Limits{MemAvailable: 4 << 30}, 2<<30 - RingBytes, "MemAvailable"},
	} {
		got, note, err := ParseResident("auto", c.l)
		if err != nil || got != c.want || !strings.Contains(note, c.says) {
			t.Errorf("auto under %+v: %d %q %v; want %d saying %s", c.l, got, note, err, c.want, c.says)
		}
	}
	if got, note, _ := ParseResident("auto", Limits{}); got != 0 || !strings.Contains(note, "no pin limit") {
		t.Errorf("auto with no limits read: %d %q", got, note)
	}
}

func TestAllocatable(t *testing.T) {
	for _, c := range []struct {
		l    Limits
		want int64
		src  string
	}{
		{Limits{MemAvailable: 8 << 30, SwapFree: 1 << 30}, 9 << 30, "MemAvailable + SwapFree"},
		{Limits{MemAvailable: 8 << 30, Cgroup: 2 << 30}, 2 << 30, "cgroup"},
		{Limits{MemAvailable: 1 << 30, Cgroup: 2 << 30}, 1 << 30, "MemAvailable"},
		{Limits{Cgroup: 2 << 30}, 2 << 30, "cgroup"},
		{Limits{Memlock: 8 << 20}, 0, ""},
	} {
		got, src := c.l.Allocatable()
		if got != c.want || !strings.Contains(src, c.src) {
			t.Errorf("%+v: %d %q, want %d from %q", c.l, got, src, c.want, c.src)
		}
	}
}

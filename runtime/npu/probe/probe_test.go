package probe

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestNoDevice: an empty /dev/accel, a missing path and a file that is not
// a DRM device give clear errors; the first two match ErrNoDevice.
func TestNoDevice(t *testing.T) {
	dir := t.TempDir()
	if _, err := probeGlob(filepath.Join(dir, "accel*")); !errors.Is(err, ErrNoDevice) {
		t.Errorf("empty directory: %v, want ErrNoDevice", err)
	}
	if _, err := Device(filepath.Join(dir, "accel0")); !errors.Is(err, ErrNoDevice) {
		t.Errorf("missing path: %v, want ErrNoDevice", err)
	}
	fake := filepath.Join(dir, "accel1")
	if err := os.WriteFile(fake, make([]byte, 64), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Device(fake)
	if err == nil || errors.Is(err, ErrNoDevice) {
		t.Errorf("regular file: %v, want a not-a-DRM-device error", err)
	} else {
		t.Logf("regular file: %v", err)
	}
	_, err = probeGlob(filepath.Join(dir, "accel*"))
	if !errors.Is(err, ErrNoDevice) {
		t.Errorf("directory with a non-device: %v, want ErrNoDevice", err)
	}
	// /dev/null is a character device but not DRM.
	if _, err := Device("/dev/null"); err == nil {
		t.Error("/dev/null: no error")
	}
}

// TestProbeHere runs the real probe: on a machine without an NPU it must
// say so with ErrNoDevice; with one, it logs what it found.
func TestProbeHere(t *testing.T) {
	infos, err := Probe()
	if err != nil {
		if !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Probe: %v, want ErrNoDevice or devices", err)
		}
		t.Logf("Probe: %v", err)
		return
	}
	for _, in := range infos {
		t.Logf("%s (target %s)", in.String(), in.Target())
		if in.Columns() == 0 || in.Rows() == 0 {
			t.Errorf("%s: empty metadata", in.Path)
		}
	}
}

func TestTarget(t *testing.T) {
	for _, c := range []struct {
		in   Info
		want string
	}{
		{Info{PCIDevice: 0x1502}, "xdna1"},
		{Info{PCIDevice: 0x17f0, PCIRevision: 0x10}, "xdna2"},
		{Info{PCIDevice: 0x17f0, PCIRevision: 0x11}, "xdna2"},
		{Info{PCIDevice: 0x17f0, PCIRevision: 0x20}, "xdna2"},
		{Info{Metadata: AIEMetadata{Cols: 5}}, "xdna1"},
		{Info{Metadata: AIEMetadata{Cols: 8}}, "xdna2"},
		{Info{}, ""},
	} {
		if got := c.in.Target(); got != c.want {
			t.Errorf("%+v: target %q, want %q", c.in, got, c.want)
		}
	}
}

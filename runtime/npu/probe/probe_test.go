package probe

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"
)

// TestStructLayouts checks every struct's size, and the offsets of the
// fields that npu-stack.md section 1.3 lists (computed there with gcc from
// the kernel headers).
func TestStructLayouts(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		size uintptr
		offs map[string]uintptr
	}{
		{"amdxdna_qos_info", QoSInfo{}, 24, map[string]uintptr{"Priority": 20}},
		{"amdxdna_drm_create_hwctx", CreateHwctx{}, 56, map[string]uintptr{
			"QoSP": 16, "UmqBO": 24, "LogBufBO": 28, "MaxOpc": 32, "NumTiles": 36, "MemSize": 40,
			"UmqDoorbell": 44, "Handle": 48, "SyncobjHandle": 52}},
		{"amdxdna_drm_destroy_hwctx", DestroyHwctx{}, 8, nil},
		{"amdxdna_drm_config_hwctx", ConfigHwctx{}, 24, map[string]uintptr{"ParamVal": 8, "ParamValSize": 16, "Pad": 20}},
		{"amdxdna_drm_create_bo", CreateBO{}, 32, map[string]uintptr{"VAddr": 8, "Size": 16, "Type": 24, "Handle": 28}},
		{"amdxdna_drm_get_bo_info", GetBOInfo{}, 48, map[string]uintptr{"Handle": 16, "MapOffset": 24, "VAddr": 32, "XDNAAddr": 40}},
		{"amdxdna_drm_sync_bo", SyncBO{}, 24, map[string]uintptr{"Direction": 4, "Offset": 8, "Size": 16}},
		{"amdxdna_drm_exec_cmd", ExecCmd{}, 56, map[string]uintptr{
			"Hwctx": 16, "Type": 20, "CmdHandles": 24, "Args": 32, "CmdCount": 40, "ArgCount": 44, "Seq": 48}},
		{"amdxdna_drm_get_info", GetInfo{}, 16, map[string]uintptr{"BufferSize": 4, "Buffer": 8}},
		{"amdxdna_drm_wait_cmd", WaitCmd{}, 16, map[string]uintptr{"Timeout": 4, "Seq": 8}},
		{"amdxdna_drm_get_array", GetArray{}, 24, map[string]uintptr{"NumElement": 8, "Buffer": 16}},
		{"amdxdna_drm_query_aie_version", AIEVersion{}, 8, map[string]uintptr{"Minor": 4}},
		{"amdxdna_drm_query_aie_tile_metadata", TileMetadata{}, 16, map[string]uintptr{
			"RowStart": 2, "DMAChannelCount": 4, "LockCount": 6, "EventRegCount": 8, "Pad": 10}},
		{"amdxdna_drm_query_aie_metadata", AIEMetadata{}, 64, map[string]uintptr{
			"Cols": 4, "Rows": 6, "Version": 8, "Core": 16, "Mem": 32, "Shim": 48}},
		{"amdxdna_drm_query_firmware_version", FirmwareVersion{}, 16, map[string]uintptr{"Patch": 8, "Build": 12}},
		{"drm_version", drmVersion{}, 64, map[string]uintptr{"NameLen": 16, "Name": 24, "Desc": 56}},
	} {
		typ := reflect.TypeOf(c.v)
		if typ.Size() != c.size {
			t.Errorf("%s (%s): size %d, want %d", c.name, typ.Name(), typ.Size(), c.size)
		}
		for f, want := range c.offs {
			sf, ok := typ.FieldByName(f)
			if !ok {
				t.Errorf("%s: no field %s", c.name, f)
				continue
			}
			if sf.Offset != want {
				t.Errorf("%s.%s: offset %d, want %d", c.name, f, sf.Offset, want)
			}
		}
	}
	if s := unsafe.Sizeof(AIEMetadata{}); s != 64 {
		t.Errorf("unsafe.Sizeof(AIEMetadata) = %d", s)
	}
}

// TestIoctlNumbers checks the request numbers against npu-stack.md 1.2.
func TestIoctlNumbers(t *testing.T) {
	for _, c := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"CREATE_HWCTX", IoctlCreateHwctx, 0xc0386440},
		{"DESTROY_HWCTX", IoctlDestroyHwctx, 0xc0086441},
		{"CONFIG_HWCTX", IoctlConfigHwctx, 0xc0186442},
		{"CREATE_BO", IoctlCreateBO, 0xc0206443},
		{"GET_BO_INFO", IoctlGetBOInfo, 0xc0306444},
		{"SYNC_BO", IoctlSyncBO, 0xc0186445},
		{"EXEC_CMD", IoctlExecCmd, 0xc0386446},
		{"GET_INFO", IoctlGetInfo, 0xc0106447},
		{"SET_STATE", IoctlSetState, 0xc0106448},
		{"WAIT_CMD", IoctlWaitCmd, 0x40106449},
		{"GET_ARRAY", IoctlGetArray, 0xc018644a},
		{"GEM_CLOSE", IoctlGEMClose, 0x40086409},
		{"DRM_IOCTL_VERSION", ioctlVersion, 0xc0406400},
	} {
		if c.got != c.want {
			t.Errorf("DRM_IOCTL_AMDXDNA_%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

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

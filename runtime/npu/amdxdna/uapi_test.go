package amdxdna

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// header is the kernel's uAPI header this package re-declares.
const header = "../../../../shared/reference/amdxdna_accel.h"

// layouts lists every struct of the submit path: C name, the Go type, and
// every field as C name -> Go name.
var layouts = []struct {
	c      string
	v      any
	fields [][2]string
}{
	{"amdxdna_qos_info", QoSInfo{}, [][2]string{{"gops", "GOPS"}, {"fps", "FPS"}, {"dma_bandwidth", "DMABandwidth"},
		{"latency", "Latency"}, {"frame_exec_time", "FrameExecTime"}, {"priority", "Priority"}}},
	{"amdxdna_drm_create_hwctx", CreateHwctx{}, [][2]string{{"ext", "Ext"}, {"ext_flags", "ExtFlags"}, {"qos_p", "QoSP"},
		{"umq_bo", "UmqBO"}, {"log_buf_bo", "LogBufBO"}, {"max_opc", "MaxOpc"}, {"num_tiles", "NumTiles"},
		{"mem_size", "MemSize"}, {"umq_doorbell", "UmqDoorbell"}, {"handle", "Handle"}, {"syncobj_handle", "SyncobjHandle"}}},
	{"amdxdna_drm_destroy_hwctx", DestroyHwctx{}, [][2]string{{"handle", "Handle"}, {"pad", "Pad"}}},
	{"amdxdna_cu_config", CUConfig{}, [][2]string{{"cu_bo", "CUBO"}, {"cu_func", "CUFunc"}, {"pad", "Pad"}}},
	{"amdxdna_hwctx_param_config_cu", ConfigCU{}, [][2]string{{"num_cus", "NumCUs"}, {"pad", "Pad"}}},
	{"amdxdna_drm_config_hwctx", ConfigHwctx{}, [][2]string{{"handle", "Handle"}, {"param_type", "ParamType"},
		{"param_val", "ParamVal"}, {"param_val_size", "ParamValSize"}, {"pad", "Pad"}}},
	{"amdxdna_drm_create_bo", CreateBO{}, [][2]string{{"flags", "Flags"}, {"vaddr", "VAddr"}, {"size", "Size"},
		{"type", "Type"}, {"handle", "Handle"}}},
	{"amdxdna_drm_get_bo_info", GetBOInfo{}, [][2]string{{"ext", "Ext"}, {"ext_flags", "ExtFlags"}, {"handle", "Handle"},
		{"pad", "Pad"}, {"map_offset", "MapOffset"}, {"vaddr", "VAddr"}, {"xdna_addr", "XDNAAddr"}}},
	{"amdxdna_drm_sync_bo", SyncBO{}, [][2]string{{"handle", "Handle"}, {"direction", "Direction"}, {"offset", "Offset"}, {"size", "Size"}}},
	{"amdxdna_drm_exec_cmd", ExecCmd{}, [][2]string{{"ext", "Ext"}, {"ext_flags", "ExtFlags"}, {"hwctx", "Hwctx"},
		{"type", "Type"}, {"cmd_handles", "CmdHandles"}, {"args", "Args"}, {"cmd_count", "CmdCount"},
		{"arg_count", "ArgCount"}, {"seq", "Seq"}}},
	{"amdxdna_drm_wait_cmd", WaitCmd{}, [][2]string{{"hwctx", "Hwctx"}, {"timeout", "Timeout"}, {"seq", "Seq"}}},
	{"amdxdna_drm_get_info", GetInfo{}, [][2]string{{"param", "Param"}, {"buffer_size", "BufferSize"}, {"buffer", "Buffer"}}},
	{"amdxdna_drm_set_state", GetInfo{}, [][2]string{{"param", "Param"}, {"buffer_size", "BufferSize"}, {"buffer", "Buffer"}}},
	{"amdxdna_drm_get_array", GetArray{}, [][2]string{{"param", "Param"}, {"element_size", "ElementSize"},
		{"num_element", "NumElement"}, {"pad", "Pad"}, {"buffer", "Buffer"}}},
	{"amdxdna_drm_query_aie_version", AIEVersion{}, [][2]string{{"major", "Major"}, {"minor", "Minor"}}},
	{"amdxdna_drm_query_aie_tile_metadata", TileMetadata{}, [][2]string{{"row_count", "RowCount"}, {"row_start", "RowStart"},
		{"dma_channel_count", "DMAChannelCount"}, {"lock_count", "LockCount"}, {"event_reg_count", "EventRegCount"}, {"pad", "Pad"}}},
	{"amdxdna_drm_query_aie_metadata", AIEMetadata{}, [][2]string{{"col_size", "ColSize"}, {"cols", "Cols"}, {"rows", "Rows"},
		{"version", "Version"}, {"core", "Core"}, {"mem", "Mem"}, {"shim", "Shim"}}},
	{"amdxdna_drm_query_firmware_version", FirmwareVersion{}, [][2]string{{"major", "Major"}, {"minor", "Minor"},
		{"patch", "Patch"}, {"build", "Build"}}},
	{"drm_version", DRMVersion{}, [][2]string{{"version_major", "Major"}, {"version_minor", "Minor"},
		{"version_patchlevel", "Patchlevel"}, {"name_len", "NameLen"}, {"name", "Name"}, {"date_len", "DateLen"},
		{"date", "Date"}, {"desc_len", "DescLen"}, {"desc", "Desc"}}},
	{"drm_gem_close", GEMClose{}, [][2]string{{"handle", "Handle"}, {"pad", "Pad"}}},
	{"drm_syncobj_timeline_wait", SyncobjTimelineWait{}, [][2]string{{"handles", "Handles"}, {"points", "Points"},
		{"timeout_nsec", "TimeoutNsec"}, {"count_handles", "CountHandles"}, {"flags", "Flags"},
		{"first_signaled", "FirstSignaled"}, {"pad", "Pad"}, {"deadline_nsec", "DeadlineNsec"}}},
}

// ioctls lists every request number as C macro -> Go constant.
var ioctls = []struct {
	c   string
	go_ uintptr
}{
	{"DRM_IOCTL_AMDXDNA_CREATE_HWCTX", IoctlCreateHwctx},
	{"DRM_IOCTL_AMDXDNA_DESTROY_HWCTX", IoctlDestroyHwctx},
	{"DRM_IOCTL_AMDXDNA_CONFIG_HWCTX", IoctlConfigHwctx},
	{"DRM_IOCTL_AMDXDNA_CREATE_BO", IoctlCreateBO},
	{"DRM_IOCTL_AMDXDNA_GET_BO_INFO", IoctlGetBOInfo},
	{"DRM_IOCTL_AMDXDNA_SYNC_BO", IoctlSyncBO},
	{"DRM_IOCTL_AMDXDNA_EXEC_CMD", IoctlExecCmd},
	{"DRM_IOCTL_AMDXDNA_GET_INFO", IoctlGetInfo},
	{"DRM_IOCTL_AMDXDNA_SET_STATE", IoctlSetState},
	{"DRM_IOCTL_AMDXDNA_WAIT_CMD", IoctlWaitCmd},
	{"DRM_IOCTL_AMDXDNA_GET_ARRAY", IoctlGetArray},
	{"DRM_IOCTL_VERSION", IoctlVersion},
	{"DRM_IOCTL_GEM_CLOSE", IoctlGEMClose},
	{"DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT", IoctlSyncobjTimelineWait},
}

// consts lists enum values and macros as C name -> Go value.
var consts = []struct {
	c   string
	go_ int64
}{
	{"AMDXDNA_BO_SHMEM", BOShmem}, {"AMDXDNA_BO_DEV_HEAP", BODevHeap}, {"AMDXDNA_BO_DEV", BODev}, {"AMDXDNA_BO_CMD", BOCmd},
	{"DRM_AMDXDNA_HWCTX_CONFIG_CU", ConfigCUParam}, {"DRM_AMDXDNA_HWCTX_ASSIGN_DBG_BUF", AssignDbgBufParam},
	{"DRM_AMDXDNA_HWCTX_REMOVE_DBG_BUF", RemoveDbgBufParam},
	{"SYNC_DIRECT_TO_DEVICE", SyncToDevice}, {"SYNC_DIRECT_FROM_DEVICE", SyncFromDevice},
	{"AMDXDNA_CMD_SUBMIT_EXEC_BUF", CmdSubmitExecBuf},
	{"DRM_AMDXDNA_QUERY_AIE_STATUS", QueryAIEStatus}, {"DRM_AMDXDNA_QUERY_AIE_METADATA", QueryAIEMetadata},
	{"DRM_AMDXDNA_QUERY_AIE_VERSION", QueryAIEVersion}, {"DRM_AMDXDNA_QUERY_CLOCK_METADATA", QueryClockMetadata},
	{"DRM_AMDXDNA_QUERY_SENSORS", QuerySensors}, {"DRM_AMDXDNA_QUERY_HW_CONTEXTS", QueryHwContexts},
	{"DRM_AMDXDNA_QUERY_FIRMWARE_VERSION", QueryFirmwareVersion}, {"DRM_AMDXDNA_GET_POWER_MODE", GetPowerMode},
}

// TestHeaderLayouts compiles a C program against the kernel's header with
// gcc and compares every struct size, every field offset, every ioctl
// number and the enum values with this package's declarations.
func TestHeaderLayouts(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("gcc not found (%v): struct layouts checked against the header only where gcc exists", err)
	}
	hdr, err := filepath.Abs(header)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(hdr); err != nil {
		t.Fatalf("the reference header: %v", err)
	}
	// drm.h: the system's if installed, else the minimal shim in testdata.
	drmDir := ""
	for _, d := range []string{"/usr/include/drm", "/usr/include/libdrm"} {
		if _, err := os.Stat(filepath.Join(d, "drm.h")); err == nil {
			drmDir = d
			break
		}
	}
	if drmDir == "" {
		drmDir, _ = filepath.Abs("testdata/drmshim")
		t.Logf("no drm.h installed: using testdata/drmshim/drm.h for the DRM macros and structs (install libdrm-dev to check them against the system's)")
	} else {
		t.Logf("drm.h from %s", drmDir)
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <linux/stddef.h>\n")
	src.WriteString("#ifndef __counted_by\n#define __counted_by(m)\n#endif\n")
	fmt.Fprintf(&src, "#include \"%s\"\nint main(void) {\n", filepath.Base(hdr))
	for _, l := range layouts {
		fmt.Fprintf(&src, "\tprintf(\"size %s %%zu\\n\", sizeof(struct %s));\n", l.c, l.c)
		for _, f := range l.fields {
			fmt.Fprintf(&src, "\tprintf(\"off %s.%s %%zu\\n\", offsetof(struct %s, %s));\n", l.c, f[0], l.c, f[0])
		}
	}
	for _, i := range ioctls {
		fmt.Fprintf(&src, "\tprintf(\"ioctl %s %%lu\\n\", (unsigned long)(%s));\n", i.c, i.c)
	}
	for _, c := range consts {
		fmt.Fprintf(&src, "\tprintf(\"const %s %%lld\\n\", (long long)(%s));\n", c.c, c.c)
	}
	src.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	cfile, bin := filepath.Join(dir, "layout.c"), filepath.Join(dir, "layout")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gcc, "-std=gnu11", "-Wall", "-Werror", "-I", filepath.Dir(hdr), "-I", drmDir, "-o", bin, cfile).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s\n%s", err, out, src.String())
	}
	out, err = exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		v, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			u, err2 := strconv.ParseUint(f[2], 10, 64)
			if err2 != nil {
				t.Fatalf("%q: %v", sc.Text(), err)
			}
			v = int64(u)
		}
		got[f[0]+" "+f[1]] = uint64(v)
	}
	n := 0
	check := func(key string, want uint64) {
		n++
		g, ok := got[key]
		switch {
		case !ok:
			t.Errorf("%s: not printed by the C program", key)
		case g != want:
			t.Errorf("%s: gcc says %d (%#x), Go %d (%#x)", key, g, g, want, want)
		}
	}
	for _, l := range layouts {
		typ := reflect.TypeOf(l.v)
		check("size "+l.c, uint64(typ.Size()))
		named := 0
		for i := range typ.NumField() {
			if typ.Field(i).Name != "_" { // padding the C struct has implicitly
				named++
			}
		}
		if named != len(l.fields) {
			t.Errorf("%s: Go %s has %d fields, the table lists %d", l.c, typ.Name(), named, len(l.fields))
		}
		for _, f := range l.fields {
			sf, ok := typ.FieldByName(f[1])
			if !ok {
				t.Errorf("%s: Go %s has no field %s", l.c, typ.Name(), f[1])
				continue
			}
			check("off "+l.c+"."+f[0], uint64(sf.Offset))
		}
	}
	for _, i := range ioctls {
		check("ioctl "+i.c, uint64(i.go_))
	}
	for _, c := range consts {
		check("const "+c.c, uint64(c.go_))
	}
	if t.Failed() {
		return
	}
	t.Logf("%d sizes, offsets, ioctl numbers and constants equal to gcc's (%s)", n, gccVersion(gcc))
}

func gccVersion(gcc string) string {
	out, err := exec.Command(gcc, "-dumpfullversion").Output()
	if err != nil {
		return "gcc"
	}
	return "gcc " + strings.TrimSpace(string(out))
}

// TestIoctlNumbers checks the request numbers against the reference's
// table (npu-contract.md 4.2), which needs no compiler.
func TestIoctlNumbers(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
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
		{"SYNCOBJ_TIMELINE_WAIT", IoctlSyncobjTimelineWait, 0xc03064ca},
		{"VERSION", IoctlVersion, 0xc0406400},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

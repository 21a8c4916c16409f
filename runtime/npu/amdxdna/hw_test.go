//go:build amdxdnahw

package amdxdna_test

import (
	"os"
	"testing"

	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
)

// TestHardware runs on a Ryzen AI machine with the amdxdna driver (build
// tag amdxdnahw): it opens the first NPU (driver check, heap mapped
// 64 MiB-aligned), allocates and syncs an instruction and a data buffer,
// and, when XDNA_XCLBIN names an mlir-aie xclbin, creates its context and
// configures its CUs. It never ran here: this machine has no NPU.
//
//	go test -tags amdxdnahw ./runtime/npu/amdxdna -run Hardware -v
func TestHardware(t *testing.T) {
	d, err := amdxdna.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}()
	t.Logf("%+v, AIE metadata %+v", d.Info(), d.Metadata())
	for _, kind := range []npu.BOKind{npu.BOInstr, npu.BOData} {
		bo, err := d.Alloc(kind, 8192)
		if err != nil {
			t.Fatal(err)
		}
		m, err := d.Map(bo)
		if err != nil {
			t.Fatal(err)
		}
		m[0] = 1
		if err := d.Sync(bo, npu.ToDevice, 0, len(m)); err != nil {
			t.Fatal(err)
		}
		if err := d.Free(bo); err != nil {
			t.Fatal(err)
		}
	}
	if p := os.Getenv("XDNA_XCLBIN"); p != "" {
		x, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		k, err := d.LoadKernel(x, "MLIR_AIE")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: context %d", p, k)
	}
}

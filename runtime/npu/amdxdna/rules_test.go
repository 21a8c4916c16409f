package amdxdna_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
)

// hooked is the fake driver with a hook that may corrupt each ioctl's
// argument (or the packet it submits) before the fake sees it: a Device
// that broke that rule.
type hooked struct {
	*amdxdnatest.Kernel
	hook func(k *amdxdnatest.Kernel, fd int, req uintptr, arg unsafe.Pointer)
	mmap func(addr unsafe.Pointer, flags int) (unsafe.Pointer, int)
}

func (h *hooked) Ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if h.hook != nil {
		h.hook(h.Kernel, fd, req, arg)
	}
	return h.Kernel.Ioctl(fd, req, arg)
}

func (h *hooked) Mmap(addr unsafe.Pointer, n uintptr, prot, flags, fd int, off int64) (unsafe.Pointer, error) {
	if h.mmap != nil && fd >= 0 {
		addr, flags = h.mmap(addr, flags)
	}
	return h.Kernel.Mmap(addr, n, prot, flags, fd, off)
}

// packet returns the START_CU packet an EXEC_CMD submits.
func packet(k *amdxdnatest.Kernel, fd int, arg unsafe.Pointer) []byte {
	x := (*amdxdna.ExecCmd)(arg)
	return k.Mem(fd, uint32(x.CmdHandles))
}

func on[T any](want uintptr, f func(k *amdxdnatest.Kernel, fd int, a *T)) func(*amdxdnatest.Kernel, int, uintptr, unsafe.Pointer) {
	return func(k *amdxdnatest.Kernel, fd int, req uintptr, arg unsafe.Pointer) {
		if req == want {
			f(k, fd, (*T)(arg))
		}
	}
}

// TestRules breaks each rule of the driver and firmware once (through a
// Device whose ioctls are corrupted on the way) and checks that the fake
// catches it with an error naming the rule, and that the Backend computes
// the matrix on the CPU after a single warning.
func TestRules(t *testing.T) {
	le := binary.LittleEndian
	cases := []struct {
		name string
		hook func(*amdxdnatest.Kernel, int, uintptr, unsafe.Pointer)
		want string // in the Backend's warning, notes, or the fake's failure reasons
	}{
		{"create_bo flags MBZ", on(amdxdna.IoctlCreateBO, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.CreateBO) {
			if a.Type == amdxdna.BOShmem {
				a.Flags = 1
			}
		}), "flags 0x1, MBZ"},
		{"sync FROM_DEVICE", on(amdxdna.IoctlSyncBO, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.SyncBO) { a.Direction = amdxdna.SyncFromDevice }),
			"FROM_DEVICE"},
		{"exec cmd_count", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) { a.CmdCount = 2 }),
			"cmd_count 2"},
		{"exec ext_flags MBZ", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) { a.ExtFlags = 1 }),
			"ext_flags 0x1"},
		{"command in a data BO", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			a.CmdHandles = uint64(*(*uint32)(ptrOf(a.Args + 4)))
		}), "commands live in CMD BOs"},
		{"packet not NEW", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			p := packet(k, fd, unsafe.Pointer(a))
			le.PutUint32(p, le.Uint32(p)&^0xF)
		}), "the host writes NEW"},
		{"ERT_START_NPU", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			p := packet(k, fd, unsafe.Pointer(a))
			le.PutUint32(p, le.Uint32(p)&^(0x1F<<23)|amdxdna.OpStartNPU<<23)
		}), "silently runs nothing"},
		{"cu_mask names no CU", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			le.PutUint32(packet(k, fd, unsafe.Pointer(a))[4:], 2)
		}), "names CU 1, context 1 has 1"},
		{"register map opcode 2", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			le.PutUint64(packet(k, fd, unsafe.Pointer(a))[8:], 2)
		}), "opcode 2"},
		{"ninstr in bytes", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			p := packet(k, fd, unsafe.Pointer(a))
			le.PutUint32(p[24:], 4*le.Uint32(p[24:]))
		}), "the run passed 1280 instruction words, the header says 1280 bytes (320 words)"},
		{"ninstr short of the header's size", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			p := packet(k, fd, unsafe.Pointer(a))
			le.PutUint32(p[24:], le.Uint32(p[24:])-1)
		}), "the buffer holds"},
		{"instructions at a user VA", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			p := packet(k, fd, unsafe.Pointer(a))
			copy(p[16:24], p[28:36]) // bo0's VA as the instruction address
		}), "ABORT"},
		{"data at a heap address", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			p := packet(k, fd, unsafe.Pointer(a))
			le.PutUint64(p[28:], le.Uint64(p[16:])) // bo0 = the instruction BO's xdna_addr
		}), "heap device address"},
		{"data BO not in args", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) { a.ArgCount-- }),
			"not listed in EXEC_CMD args"},
		{"instruction BO not in args", on(amdxdna.IoctlExecCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ExecCmd) {
			a.Args += 4
			a.ArgCount--
		}), "instruction BO"},
		{"wait on a seq never issued", on(amdxdna.IoctlWaitCmd, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.WaitCmd) { a.Seq += 100 }),
			"which has issued"},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	m := randomMatrix(t, rng, planar.Q8_0, 200, 256, 64, 4)
	x := randomX(rng, m.G.K)
	want := make([]float32, m.G.N)
	backend(t, nil, m, nil).MatVec("w", m, x, want)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fk := amdxdnatest.New(amdxdnatest.XDNA1())
			h := &hooked{Kernel: fk}
			d, err := amdxdna.OpenWith(h, amdxdnatest.Path)
			if err != nil {
				t.Fatal(err)
			}
			var warn strings.Builder
			b := backend(t, d, m, &warn)
			h.hook = c.hook // the Backend allocated its buffers cleanly; break the rule from here on
			y := make([]float32, m.G.N)
			b.MatVec("w", m, x, y)
			b.MatVec("w", m, x, y) // a second call after the fault: no second warning
			all := warn.String() + strings.Join(fk.Failures(), "\n")
			if !strings.Contains(all, c.want) {
				t.Errorf("want %q in the error; warning %q, fake failures %q", c.want, warn.String(), fk.Failures())
			}
			if n := strings.Count(warn.String(), "every later matmul on the CPU"); n != 1 {
				t.Errorf("%d fallback warnings: %q", n, warn.String())
			}
			if !slices.Equal(y, want) {
				t.Errorf("the fallback's output differs from the CPU's")
			}
			t.Logf("%s", strings.TrimSpace(strings.ReplaceAll(all, "\n", " | ")))
			h.hook = nil
			b.Close()
			if err := d.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if live := fk.Live(); live != "" {
				t.Errorf("after Close the fake holds %s", live)
			}
		})
	}
}

// TestLoadRules breaks the rules of contexts and compute units while the
// Backend loads its kernel: the slot goes to the CPU with a note naming
// the rule.
func TestLoadRules(t *testing.T) {
	for _, c := range []struct {
		name string
		hook func(*amdxdnatest.Kernel, int, uintptr, unsafe.Pointer)
		want string
	}{
		{"qos_p NULL", on(amdxdna.IoctlCreateHwctx, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.CreateHwctx) { a.QoSP = 0 }), "qos_p is NULL"},
		{"num_tiles", on(amdxdna.IoctlCreateHwctx, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.CreateHwctx) { a.NumTiles = 4 * 5 }), "num_tiles 20"},
		{"create_hwctx ext MBZ", on(amdxdna.IoctlCreateHwctx, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.CreateHwctx) { a.Ext = 8 }), "ext 0x8"},
		{"umq_bo on KMQ", on(amdxdna.IoctlCreateHwctx, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.CreateHwctx) { a.UmqBO = 1 }), "umq_bo 1"},
		{"PDI in a SHMEM BO", on(amdxdna.IoctlCreateBO, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.CreateBO) {
			if a.Type == amdxdna.BODev {
				a.Type = amdxdna.BOShmem
			}
		}), "outside the heap"},
		{"cu_bo and cu_func misplaced", on(amdxdna.IoctlConfigHwctx, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ConfigHwctx) {
			p := unsafe.Slice((*byte)(ptrOf(a.ParamVal)), a.ParamValSize)
			copy(p[12:], p[8:12])
		}), "cu_func"},
		{"config_cu size", on(amdxdna.IoctlConfigHwctx, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ConfigHwctx) { a.ParamValSize += 8 }),
			"param_val_size 24 for 1 CUs"},
		{"config_cu pad MBZ", on(amdxdna.IoctlConfigHwctx, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ConfigHwctx) { a.Pad = 1 }), "CONFIG_HWCTX: pad"},
		{"config_cu param_type", on(amdxdna.IoctlConfigHwctx, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.ConfigHwctx) { a.ParamType = 1 }), "param_type 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fk := amdxdnatest.New(amdxdnatest.XDNA1())
			h := &hooked{Kernel: fk, hook: c.hook}
			d, err := amdxdna.OpenWith(h, amdxdnatest.Path)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			m := randomMatrix(t, rng, planar.Q4_0, 64, 128, 32, 4)
			var warn strings.Builder
			b := backend(t, d, m, &warn)
			if !strings.Contains(warn.String(), c.want) || !strings.Contains(warn.String(), "run on the CPU") {
				t.Errorf("want %q and a CPU note; got %q", c.want, warn.String())
			}
			t.Logf("%s", strings.TrimSpace(warn.String()))
			b.Close()
			h.hook = nil
			if err := d.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if live := fk.Live(); live != "" {
				t.Errorf("after Close the fake holds %s", live)
			}
		})
	}
}

// TestOpenRules: the driver name, the heap's size, count, mapping and
// alignment.
func TestOpenRules(t *testing.T) {
	cfg := amdxdnatest.XDNA2()
	cfg.Driver = "i915"
	if _, err := amdxdna.OpenWith(amdxdnatest.New(cfg), amdxdnatest.Path); !errors.Is(err, amdxdna.ErrNotXDNA) {
		t.Errorf("i915: %v, want ErrNotXDNA", err)
	}
	if _, err := amdxdna.OpenWith(amdxdnatest.New(amdxdnatest.XDNA2()), "/dev/accel/accel9"); !errors.Is(err, amdxdna.ErrNoDevice) {
		t.Errorf("missing device: %v, want ErrNoDevice", err)
	}
	for _, c := range []struct {
		name string
		h    hooked
		want string
	}{
		{"heap of 32 MiB", hooked{hook: on(amdxdna.IoctlCreateBO, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.CreateBO) { a.Size /= 2 })},
			"device heap of 33554432 bytes"},
		{"heap not 64 MiB-aligned", hooked{mmap: func(addr unsafe.Pointer, flags int) (unsafe.Pointer, int) {
			return unsafe.Add(addr, 4096), flags
		}}, "MAP_FIXED at"},
	} {
		fk := amdxdnatest.New(amdxdnatest.XDNA2())
		c.h.Kernel = fk
		_, err := amdxdna.OpenWith(&c.h, amdxdnatest.Path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
		if live := fk.Live(); live != "" {
			t.Errorf("%s: after the failed open the fake holds %s", c.name, live)
		}
	}
}

// raw drives the fake with bare ioctls, for the rules the Device cannot be
// made to break from outside.
type raw struct {
	t  *testing.T
	k  *amdxdnatest.Kernel
	fd int
}

func newRaw(t *testing.T, cfg amdxdnatest.Config) *raw {
	k := amdxdnatest.New(cfg)
	fd, err := k.Open(amdxdnatest.Path)
	if err != nil {
		t.Fatal(err)
	}
	r := &raw{t, k, fd}
	t.Cleanup(func() {
		k.Close(fd)
		if live := k.Live(); live != "" && !strings.Contains(live, "anonymous") {
			t.Errorf("after close the fake holds %s", live)
		}
	})
	return r
}

func (r *raw) ioctl(req uintptr, arg unsafe.Pointer) error { return r.k.Ioctl(r.fd, req, arg) }

func (r *raw) bo(typ uint32, size int) (uint32, amdxdna.GetBOInfo) {
	c := amdxdna.CreateBO{Size: uint64(size), Type: typ}
	if err := r.ioctl(amdxdna.IoctlCreateBO, unsafe.Pointer(&c)); err != nil {
		r.t.Fatal(err)
	}
	in := amdxdna.GetBOInfo{Handle: c.Handle}
	if err := r.ioctl(amdxdna.IoctlGetBOInfo, unsafe.Pointer(&in)); err != nil {
		r.t.Fatal(err)
	}
	return c.Handle, in
}

func (r *raw) hwctx() error {
	var qos amdxdna.QoSInfo
	c := amdxdna.CreateHwctx{QoSP: uint64(uintptr(unsafe.Pointer(&qos))), MaxOpc: 2048, NumTiles: 16}
	return r.ioctl(amdxdna.IoctlCreateHwctx, unsafe.Pointer(&c))
}

// mapHeap maps the heap at a 64 MiB-aligned address plus skew.
func (r *raw) mapHeap(off uint64, skew uintptr) {
	res, err := r.k.Mmap(nil, 2*amdxdna.HeapAlign, amdxdna.ProtNone, amdxdna.MapPrivate|amdxdna.MapAnonymous|amdxdna.MapNR, -1, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	at := unsafe.Add(res, (uintptr(res)+amdxdna.HeapAlign-1)&^(amdxdna.HeapAlign-1)-uintptr(res)+skew)
	p, err := r.k.Mmap(at, amdxdna.HeapSize, amdxdna.ProtRead|amdxdna.ProtWrite, amdxdna.MapShared|amdxdna.MapFixed, r.fd, int64(off))
	if err != nil || p != at {
		r.t.Fatal(p, at, err)
	}
	r.t.Cleanup(func() { r.k.Munmap(p, amdxdna.HeapSize) })
}

func wantErr(t *testing.T, what string, err error, errno syscall.Errno, msg string) {
	t.Helper()
	if !errors.Is(err, errno) || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %v, want %v with %q", what, err, errno, msg)
	} else {
		t.Logf("%s: %v", what, err)
	}
}

// TestRawRules breaks the rules a correct Device never reaches: ordering
// (heap first, mapped, aligned), one heap, DEV BOs only from a mapped heap,
// no mmap of DEV BOs, the context limit, no re-configuration of CUs, the
// request numbers, handle lifetimes, commands in flight, mappings kept
// until the run completes, the chain buffer's size.
func TestRawRules(t *testing.T) {
	r := newRaw(t, amdxdnatest.XDNA1())
	wantErr(t, "no heap", r.hwctx(), syscall.ENOENT, "dev heap object not exist")
	var c amdxdna.CreateBO
	c = amdxdna.CreateBO{Size: 4096, Type: amdxdna.BODev}
	wantErr(t, "DEV BO without heap", r.ioctl(amdxdna.IoctlCreateBO, unsafe.Pointer(&c)), syscall.ENOENT, "dev heap object not exist")
	_, heap := r.bo(amdxdna.BODevHeap, amdxdna.HeapSize)
	c = amdxdna.CreateBO{Size: amdxdna.HeapSize, Type: amdxdna.BODevHeap}
	wantErr(t, "second heap", r.ioctl(amdxdna.IoctlCreateBO, unsafe.Pointer(&c)), syscall.EBUSY, "one per process")
	wantErr(t, "heap not mapped", r.hwctx(), syscall.EINVAL, "Invalid dev heap userptr")
	c = amdxdna.CreateBO{Size: 4096, Type: amdxdna.BODev}
	wantErr(t, "DEV BO, heap not mapped", r.ioctl(amdxdna.IoctlCreateBO, unsafe.Pointer(&c)), syscall.EINVAL, "Invalid dev heap userptr")
	r.mapHeap(heap.MapOffset, 1<<20)
	wantErr(t, "heap 1 MiB off alignment", r.hwctx(), syscall.EINVAL, "0x4000003")

	r = newRaw(t, amdxdnatest.XDNA1())
	_, heap = r.bo(amdxdna.BODevHeap, amdxdna.HeapSize)
	r.mapHeap(heap.MapOffset, 0)
	dev, di := r.bo(amdxdna.BODev, 4096)
	if di.XDNAAddr%amdxdna.DevAlign != 0 || di.XDNAAddr < 0x4000000 {
		t.Errorf("DEV BO at %#x", di.XDNAAddr)
	}
	_, err := r.k.Mmap(nil, 4096, amdxdna.ProtRead|amdxdna.ProtWrite, amdxdna.MapShared, r.fd, int64(di.MapOffset))
	wantErr(t, "mmap of a DEV BO", err, syscall.EINVAL, "no mmap of its own")
	wantErr(t, "missing DRM_COMMAND_BASE", r.ioctl(amdxdna.IoctlCreateBO-0x40, unsafe.Pointer(&c)), syscall.EACCES, "DRM_COMMAND_BASE")
	wantErr(t, "WAIT_CMD as IOWR", r.ioctl(amdxdna.IoctlWaitCmd|2<<30, unsafe.Pointer(&c)), syscall.ENOTTY, "wrong size or direction")
	for i := range 6 {
		if err := r.hwctx(); err != nil {
			t.Fatalf("context %d: %v", i+1, err)
		}
	}
	wantErr(t, "7th context on XDNA1", r.hwctx(), syscall.EINVAL, "6 contexts already")

	// Configure context 1 with the DEV BO as its PDI, then again.
	mem := r.k.Mem(r.fd, dev)
	copy(mem, "a PDI")
	cfg := make([]byte, 16)
	binary.LittleEndian.PutUint16(cfg, 1)
	binary.LittleEndian.PutUint32(cfg[8:], dev)
	cc := amdxdna.ConfigHwctx{Handle: 1, ParamVal: uint64(uintptr(unsafe.Pointer(&cfg[0]))), ParamValSize: 16}
	if err := r.ioctl(amdxdna.IoctlConfigHwctx, unsafe.Pointer(&cc)); err != nil {
		t.Fatal(err)
	}
	shm, _ := r.bo(amdxdna.BOShmem, 4096)
	binary.LittleEndian.PutUint32(cfg[8:], shm)
	cc.Handle = 2
	wantErr(t, "PDI in a SHMEM BO", r.ioctl(amdxdna.IoctlConfigHwctx, unsafe.Pointer(&cc)), syscall.EINVAL, "a PDI lives in a DEV BO")
	binary.LittleEndian.PutUint32(cfg[8:], dev)
	cc.Handle = 1
	wantErr(t, "re-config CU", r.ioctl(amdxdna.IoctlConfigHwctx, unsafe.Pointer(&cc)), syscall.EINVAL, "Not support re-config CU")
	gc := amdxdna.GEMClose{Handle: dev}
	wantErr(t, "close a PDI in use", r.ioctl(amdxdna.IoctlGEMClose, unsafe.Pointer(&gc)), syscall.EBUSY, "PDI BO")

	// Commands: a data BO, CMD BOs with a START_CU each (the stream is
	// never executed when the rule breaks first).
	data, dinfo := r.bo(amdxdna.BOShmem, 4096)
	dp, err := r.k.Mmap(nil, 4096, amdxdna.ProtRead|amdxdna.ProtWrite, amdxdna.MapShared, r.fd, int64(dinfo.MapOffset))
	if err != nil {
		t.Fatal(err)
	}
	dataMem := unsafe.Slice((*byte)(dp), 4096)
	pkt := func() uint32 {
		h, in := r.bo(amdxdna.BOCmd, amdxdna.CmdBOSize)
		p, err := r.k.Mmap(nil, amdxdna.CmdBOSize, amdxdna.ProtRead|amdxdna.ProtWrite, amdxdna.MapShared, r.fd, int64(in.MapOffset))
		if err != nil {
			t.Fatal(err)
		}
		sc := amdxdna.StartCU{CUMask: 1, Opcode: 3, Instr: di.XDNAAddr, Words: 4, Data: []uint64{uint64(uintptr(unsafe.Pointer(&dataMem[0])))}}
		sc.Encode(unsafe.Slice((*byte)(p), amdxdna.CmdBOSize))
		r.t.Cleanup(func() { r.k.Munmap(p, amdxdna.CmdBOSize) })
		return h
	}
	args := []uint32{dev, data}
	exec := func(cmd uint32) (uint64, error) {
		x := amdxdna.ExecCmd{Hwctx: 1, CmdHandles: uint64(cmd), Args: uint64(uintptr(unsafe.Pointer(&args[0]))), CmdCount: 1, ArgCount: uint32(len(args))}
		err := r.ioctl(amdxdna.IoctlExecCmd, unsafe.Pointer(&x))
		return x.Seq, err
	}
	for i := range 4 {
		if _, err := exec(pkt()); err != nil {
			t.Fatalf("command %d: %v", i+1, err)
		}
	}
	_, err = exec(pkt())
	wantErr(t, "5th command in flight", err, syscall.EBUSY, "HWCTX_MAX_CMDS")

	// A SHMEM BO unmapped before its command runs (the runs above have a
	// 4-word stream that is no TXN: they fail, but the mapping is checked
	// first).
	if err := r.k.Munmap(unsafe.Pointer(&dataMem[0]), 4096); err != nil {
		t.Fatal(err)
	}
	w := amdxdna.WaitCmd{Hwctx: 1, Timeout: 1, Seq: 1}
	if err := r.ioctl(amdxdna.IoctlWaitCmd, unsafe.Pointer(&w)); err != nil {
		t.Fatal(err)
	}
	if f := r.k.Failures(); len(f) == 0 || !strings.Contains(f[0], "unmapped before its command ran") {
		t.Errorf("unmapped SHMEM BO: failures %q", f)
	} else {
		t.Logf("unmapped SHMEM BO: %s", f[0])
	}
	// Handle lifetimes: a closed BO is gone.
	gc = amdxdna.GEMClose{Handle: data}
	if err := r.ioctl(amdxdna.IoctlGEMClose, unsafe.Pointer(&gc)); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "GEM_CLOSE twice", r.ioctl(amdxdna.IoctlGEMClose, unsafe.Pointer(&gc)), syscall.ENOENT, "does not exist")
	_, err = exec(pkt())
	wantErr(t, "closed BO in args", err, syscall.ENOENT, "does not exist")

	// A chain that overflows the driver's 4 KiB chain buffer: 43 commands.
	r = newRaw(t, amdxdnatest.XDNA2())
	_, heap = r.bo(amdxdna.BODevHeap, amdxdna.HeapSize)
	r.mapHeap(heap.MapOffset, 0)
	if err := r.hwctx(); err != nil {
		t.Fatal(err)
	}
	dev, di = r.bo(amdxdna.BODev, 4096)
	copy(r.k.Mem(r.fd, dev), "a PDI")
	binary.LittleEndian.PutUint32(cfg[8:], dev)
	if err := r.ioctl(amdxdna.IoctlConfigHwctx, unsafe.Pointer(&cc)); err != nil {
		t.Fatal(err)
	}
	data, _ = r.bo(amdxdna.BOShmem, 4096)
	dataMem = r.k.Mem(r.fd, data)
	args = []uint32{dev, data}
	cc.Handle = 1
	var ch amdxdna.Chain
	for range 43 {
		h := pkt()
		ch.Handles = append(ch.Handles, h)
		p := r.k.Mem(r.fd, h)
		sc := amdxdna.StartCU{CUMask: 1, Opcode: 3, Instr: di.XDNAAddr, Words: 4, Data: make([]uint64, 3)}
		sc.Encode(p)
	}
	head := pkt()
	ch.Encode(r.k.Mem(r.fd, head))
	_, err = exec(head)
	wantErr(t, "chain of 43", err, syscall.EINVAL, "of the 4096-byte chain buffer")
	ch.Handles = ch.Handles[:42]
	ch.Encode(r.k.Mem(r.fd, head))
	if _, err := exec(head); err != nil {
		t.Errorf("chain of 42 START_CU with 3 buffers (fits, npu-contract.md 4.6): %v", err)
	}
}

// TestCloseRules: a GEM_CLOSE with its pad set fails Close with the rule
// named, and closing the file still releases everything.
func TestCloseRules(t *testing.T) {
	fk := amdxdnatest.New(amdxdnatest.XDNA2())
	h := &hooked{Kernel: fk}
	d, err := amdxdna.OpenWith(h, amdxdnatest.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Alloc(npu.BOData, 100); err != nil {
		t.Fatal(err)
	}
	h.hook = on(amdxdna.IoctlGEMClose, func(k *amdxdnatest.Kernel, fd int, a *amdxdna.GEMClose) { a.Pad = 1 })
	err = d.Close()
	if err == nil || !strings.Contains(err.Error(), "GEM_CLOSE: pad") {
		t.Errorf("close: %v, want the GEM_CLOSE pad rule", err)
	} else {
		t.Logf("close: %v", err)
	}
	if live := fk.Live(); live != "" {
		t.Errorf("after the file's close the fake holds %s", live)
	}
}

package npu_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/emu"
	"github.com/xdna-go/xdna/target"
)

// residentModel is four matrices of one slot, called in order as a decode
// step calls them.
type residentModel struct {
	names  []string
	ms     []*cpu.Matrix
	staged []int64 // bytes of each matrix's staged chunks at the test's ring size
}

const resRing = 1 << 20

func newResidentModel(t *testing.T) *residentModel {
	rng := rand.New(rand.NewPCG(31, 37))
	rm := &residentModel{names: []string{"q", "k", "up", "down"}}
	for _, n := range []int{640, 256, 2600, 700} {
		g := planar.Geometry{Type: planar.Q4_0, N: n, K: 2048, Columns: 8, KTile: 256}
		m := packed(t, rng, g)
		rm.ms = append(rm.ms, m)
		chunks, err := npu.PlanChunks(dsn(t, g, target.XDNA2), g, resRing)
		if err != nil {
			t.Fatal(err)
		}
		var s int64
		for _, c := range chunks {
			s += int64(c.Bytes)
		}
		rm.staged = append(rm.staged, s)
	}
	return rm
}

// backend makes a Backend on dev with the model's four matrices on one
// slot, the test's ring and a pin budget.
func (rm *residentModel) backend(t *testing.T, dev npu.Device, budget int64, warn *bytes.Buffer) *npu.Backend {
	t.Helper()
	var entries []layout.TensorEntry
	for i, m := range rm.ms {
		entries = append(entries, entry(rm.names[i], m, "npu", "s"))
	}
	be, err := npu.NewBackend(dev, entries, []npu.Slot{slotFor(t, "s", rm.ms[0].G, 8)}, nil,
		npu.Options{RingSize: resRing, Resident: budget, Warn: warn})
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// decode runs steps decode steps through be and returns every output.
func (rm *residentModel) decode(be *npu.Backend, rng *rand.Rand, steps int) []float32 {
	var all []float32
	for range steps {
		for i, m := range rm.ms {
			x := randomX(rng, m.G.K)
			y := make([]float32, m.G.N)
			be.MatVec(rm.names[i], m, x, y)
			all = append(all, y...)
		}
	}
	return all
}

// TestResidentWeights decodes the same steps with a pin budget of 0, of
// about half the matrices and of all of them: the outputs are identical
// (and match the CPU's), the resident matrices cost no host copy after
// their one fill, and pinned memory at its peak stays within the budget
// plus the ring and the small buffers.
func TestResidentWeights(t *testing.T) {
	rm := newResidentModel(t)
	var total int64
	for _, s := range rm.staged {
		total += s
	}
	// First-fit in call order: q and k fit, up does not, down does.
	half := rm.staged[0] + rm.staged[1] + rm.staged[3]
	cases := []struct {
		name   string
		budget int64
		mats   int64
	}{{"budget 0", 0, 0}, {"half", half, 3}, {"all", total, 4}}
	var ref []float32
	for _, c := range cases {
		dev := emu.New(emu.XDNA2())
		var warn bytes.Buffer
		be := rm.backend(t, dev, c.budget, &warn)
		// Two steps learn the call order (the prefetch follows it), then
		// three are counted.
		const warm, steps = 2, 5
		rng := rand.New(rand.NewPCG(5, 6))
		first := rm.decode(be, rng, warm)
		after1 := be.Stats()
		rest := rm.decode(be, rng, steps-warm)
		st := be.Stats()
		per := st.Sub(after1)
		y := append(first, rest...)
		if ref == nil {
			// Budget 0 streams everything: the outputs every budget must give
			// bit for bit (the same chunks, the same kernel); they equal the
			// CPU's within the K-split's rounding.
			ref = y
			rng := rand.New(rand.NewPCG(5, 6))
			var want []float32
			for range steps {
				for _, m := range rm.ms {
					x := randomX(rng, m.G.K)
					w := make([]float32, m.G.N)
					cpu.MatVec(m, x, w, nil)
					want = append(want, w...)
				}
			}
			if cos, _ := cosine(y, want); cos < 0.999999 {
				t.Fatalf("streamed outputs: cosine %v against the CPU", cos)
			}
		}
		for i := range y {
			if y[i] != ref[i] {
				t.Fatalf("%s: output %d = %v, streamed %v", c.name, i, y[i], ref[i])
			}
		}
		copied := per.WeightBytes / (steps - warm)
		resRead := per.ResidentRead / (steps - warm)
		small := int64(4*8192) + 2*int64(npu.DefaultIOSize) // I/O and 4 instruction buffers
		t.Logf("%s: budget %d B: %d of %d matrices resident (%d B pinned); per token: host copied %d B, device read %d B from resident buffers, %d B streamed in all; %d submissions; pinned peak %d B (budget + ring %d B)",
			c.name, c.budget, st.ResidentMats, len(rm.ms), st.ResidentBytes, copied, resRead, per.StreamedBytes/(steps-warm), per.Dispatches/(steps-warm), st.PinnedPeak, c.budget+2*resRing)
		if st.ResidentMats != c.mats || st.ResidentBytes > c.budget {
			t.Errorf("%s: %d matrices, %d bytes resident; want %d within %d", c.name, st.ResidentMats, st.ResidentBytes, c.mats, c.budget)
		}
		// up is larger than the ring: streamed, it is copied whole every
		// token (its first chunk by the prefetch); the others are copied
		// only when not resident.
		wantCopied := map[string]int64{"half": rm.staged[2], "all": 0}[c.name]
		if c.budget == 0 {
			if copied < total {
				t.Errorf("%s: %d bytes copied a token, the matrices stage %d", c.name, copied, total)
			}
		} else if copied != wantCopied {
			t.Errorf("%s: %d bytes copied a token with %d resident of %d; want %d (up's chunks)", c.name, copied, st.ResidentBytes, total, wantCopied)
		}
		if resRead != st.ResidentBytes {
			t.Errorf("%s: the device read %d resident bytes a token, %d are resident", c.name, resRead, st.ResidentBytes)
		}
		if st.PinnedPeak > c.budget+2*resRing+small {
			t.Errorf("%s: pinned peak %d above budget %d + ring %d + %d", c.name, st.PinnedPeak, c.budget, 2*resRing, small)
		}
		be.Close()
		if a := dev.Counters().Allocated; a != 0 {
			t.Errorf("%s: %d bytes still allocated after Close", c.name, a)
		}
		dev.Close()
	}
}

// TestResidentRefused: a device that refuses a resident buffer (the pin
// limit) leaves that matrix and the rest streaming, said once, with the
// same outputs.
func TestResidentRefused(t *testing.T) {
	rm := newResidentModel(t)
	cfg := emu.XDNA2()
	cfg.MaxAllocated = 2*resRing + 2*npu.DefaultIOSize + 4*8192 + rm.staged[0] + rm.staged[1]/2
	dev := emu.New(cfg)
	defer dev.Close()
	var warn bytes.Buffer
	be := rm.backend(t, dev, 1<<30, &warn)
	defer be.Close()
	rm.decode(be, rand.New(rand.NewPCG(5, 6)), 2)
	st := be.Stats()
	if st.ResidentMats != 1 || st.Faults != 0 || st.NPUCalls != 8 || strings.Count(warn.String(), "resident weights") != 1 || !strings.Contains(warn.String(), "k:") {
		t.Errorf("stats %+v, warnings %q", st, warn.String())
	}
}

// TestResidentFault: a device fault with resident matrices computes the
// call and the rest on the CPU, and Close leaves nothing pinned.
func TestResidentFault(t *testing.T) {
	rm := newResidentModel(t)
	dev := emu.New(emu.XDNA2())
	defer dev.Close()
	dev.InjectFault(5, emu.FaultError)
	var warn bytes.Buffer
	be := rm.backend(t, dev, 1<<30, &warn)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 3 {
		for i, m := range rm.ms {
			x := randomX(rng, m.G.K)
			y, want := make([]float32, m.G.N), make([]float32, m.G.N)
			be.MatVec(rm.names[i], m, x, y)
			cpu.MatVec(m, x, want, nil)
			if cos, _ := cosine(y, want); cos < 0.999999 {
				t.Fatalf("%s: cosine %v against the CPU", rm.names[i], cos)
			}
		}
	}
	st := be.Stats()
	if st.Faults != 1 || st.ResidentMats == 0 {
		t.Errorf("stats %+v", st)
	}
	be.Close()
	if a := dev.Counters().Allocated; a != 0 {
		t.Errorf("%d bytes still allocated after a fault and Close", a)
	}
}

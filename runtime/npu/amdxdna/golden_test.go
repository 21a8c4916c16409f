package amdxdna_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/pack"
	"github.com/xdna-go/xdna/runtime/engine"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
	"github.com/xdna-go/xdna/runtime/npu/emu"
)

const fixtures = "../../../../shared/fixtures"

type golden struct {
	PromptTokens []int32 `json:"prompt_tokens"`
	Steps        []struct {
		Token int32 `json:"token"`
	} `json:"steps"`
}

// decode runs greedy decoding of the golden's prompt for as many steps as
// the golden has, with mm computing the matrices (nil: the CPU), and
// returns the tokens and the logits of every step.
func decode(t *testing.T, f *layout.File, g *golden, mm engine.MatMul) ([]int32, [][]float32) {
	t.Helper()
	m, err := engine.New(f.Manifest.Model, engine.FileWeights{F: f}, engine.Options{Threads: 2, Context: 256, Cache: engine.CacheF16, MatMul: mm})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st := m.NewState(0)
	out, err := st.Prefill(g.PromptTokens)
	if err != nil {
		t.Fatal(err)
	}
	var toks []int32
	var logits [][]float32
	for range g.Steps {
		logits = append(logits, slices.Clone(out))
		tok := int32(0)
		for i, v := range out {
			if v > out[tok] {
				tok = int32(i)
			}
		}
		toks = append(toks, tok)
		if out, err = st.Decode(tok); err != nil {
			t.Fatal(err)
		}
	}
	return toks, logits
}

// TestGoldens decodes every golden prompt greedily with the package's
// NPU-planned matrices on the Device over the fake driver (the whole
// --device npu path: contexts, CONFIG_CU, heap, DEV/SHMEM/CMD BOs,
// ERT_START_CU, TXN streams executed by the emulator), once more with
// ERT_CMD_CHAIN submissions (Chaining), and on the CPU: the tokens must be
// identical, the logits within the emulator's cosine.
func TestGoldens(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "golden", "*.json"))
	if len(files) == 0 {
		t.Fatal("no goldens under " + fixtures)
	}
	dir := t.TempDir()
	for _, gf := range files {
		base := strings.TrimSuffix(filepath.Base(gf), ".json")
		model, _, _ := strings.Cut(base, ".")
		for _, v := range []struct {
			target string
			chains bool
		}{{"xdna1", false}, {"xdna2", false}, {"xdna2", true}} {
			target := v.target
			name := base + "/" + target
			if v.chains {
				name += "-chains"
			}
			t.Run(name, func(t *testing.T) {
				var g golden
				b, err := os.ReadFile(gf)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &g); err != nil {
					t.Fatal(err)
				}
				x := filepath.Join(dir, model+"."+target+".xdna")
				if _, err := os.Stat(x); err != nil {
					if _, err := pack.Run(context.Background(), &pack.Options{Input: filepath.Join(fixtures, "models", model+".gguf"),
						Output: x, Target: target, Catalog: kernelsel.Default(), CPUMaxN: 0}); err != nil {
						t.Fatal(err)
					}
				}
				f, err := layout.Open(x)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				want, wantLogits := decode(t, f, &g, nil)

				cfg := amdxdnatest.XDNA1()
				if target == "xdna2" {
					cfg = amdxdnatest.XDNA2()
				}
				d, k := open(t, cfg)
				mf := f.Manifest
				slots, err := emu.StandIns(mf.Tensors, npu.FileSlots(f), mf.Package.Columns)
				if err != nil {
					t.Fatal(err)
				}
				var warn strings.Builder
				var dev npu.Device = d
				if v.chains {
					dev = amdxdna.NewChaining(d, 0)
				}
				opt := npu.Options{Warn: &warn, Timeout: 2e9}
				if v.chains {
					opt.RingSize = 160 << 10 // small staging buffers: a call takes several dispatches, which chain
				}
				be, err := npu.NewBackend(dev, mf.Tensors, slots, nil, opt)
				if err != nil {
					t.Fatal(err)
				}
				got, gotLogits := decode(t, f, &g, be)
				st := be.Stats()
				be.Close()
				onNPU := 0
				for _, e := range mf.Tensors {
					if e.Device == "npu" {
						onNPU++
					}
				}
				fs := k.Stats()
				if onNPU > 0 && (st.NPUCalls == 0 || fs.Commands == 0) {
					t.Fatalf("%d NPU-planned matrices but %d NPU calls, %d commands; notes %q", onNPU, st.NPUCalls, fs.Commands, be.Notes())
				}
				if st.Faults != 0 || fs.Failed != 0 {
					t.Fatalf("faults: backend %d, fake %d %q; %s", st.Faults, fs.Failed, k.Failures(), warn.String())
				}
				if !slices.Equal(got, want) {
					t.Errorf("tokens on the fake NPU %v, on the CPU %v", got, want)
				}
				worst := 1.0
				for i := range gotLogits {
					worst = math.Min(worst, cosine(gotLogits[i], wantLogits[i]))
				}
				if worst < 0.9999 {
					t.Errorf("worst logits cosine %.7f < 0.9999", worst)
				}
				gold := 0
				for i, s := range g.Steps {
					if i < len(got) && got[i] == s.Token {
						gold++
					}
				}
				if v.chains && fs.Commands > fs.Submissions && fs.Chains == 0 {
					t.Errorf("chaining: %d commands in %d submissions but no chain", fs.Commands, fs.Submissions)
				}
				t.Logf("%d NPU matrices, %d NPU calls, %d submissions (%d chains), %d commands executed; %d tokens identical to the CPU; %d/%d equal to llama.cpp's golden; worst cosine %.7f",
					onNPU, st.NPUCalls, fs.Submissions, fs.Chains, fs.Commands, len(got), gold, len(g.Steps), worst)
			})
		}
	}
}

package amdxdna_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/runtime/engine"
	"github.com/xdna-go/xdna/runtime/npu"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna"
	"github.com/xdna-go/xdna/runtime/npu/amdxdna/amdxdnatest"
	"github.com/xdna-go/xdna/runtime/npu/emu"
)

// predictSubmissions is the cost model's time per token when D
// dispatches go out in S submissions on the direct driver: the first
// dispatch of each submission pays the sequential EXEC_CMD + wait round
// trip, every other one the pipelined per-op cost (npu.SubmitPaths: 56
// and 41.2 us, XNPU's XDNA2 figures, npu-contract.md section 7):
// Total = CPU + Switch + max(S*56us + (D-S)*41.2us + Stream, Stage).
func predictSubmissions(p npu.Prediction, submissions int) time.Duration {
	paths := npu.SubmitPaths(p.Target)
	seq, piped := paths[1].FirstUS, paths[1].NextUS
	us := float64(submissions)*seq + float64(p.Dispatches-submissions)*piped
	d := time.Duration(us * 1e3)
	return p.CPU + p.Switch + max(d+p.Stream, p.Stage)
}

// TestDispatchCount05B counts, on the fake driver, the dispatches (START_CU
// commands) and submissions (EXEC_CMD) of a prompt and of decode tokens of
// a package of the Qwen2.5-0.5B shape, with one submission per dispatch
// and with Chaining, and prints the cost model's prediction for each. It
// executes the whole model on the emulator, so it runs only when
// XDNA_05B names the package:
//
//	go run ./testdata/gen -o qw05.gguf -vocab 151936 -tied
//	xdnapack qw05.gguf -o qw05.xdna2.xdna --target xdna2
//	XDNA_05B=$PWD/qw05.xdna2.xdna go test ./runtime/npu/amdxdna -run DispatchCount05B -v
func TestDispatchCount05B(t *testing.T) {
	path := os.Getenv("XDNA_05B")
	if path == "" {
		t.Skip("XDNA_05B is not set (a .xdna of the 0.5B shape; see the doc comment)")
	}
	f, err := layout.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mf := f.Manifest
	tg, err := kernelsel.Default().Target(mf.Package.Target)
	if err != nil {
		t.Fatal(err)
	}
	pred := npu.Predict(mf.Tensors, tg, 40)
	const prompt, decode = 32, 3
	var report []string
	for _, chains := range []bool{false, true} {
		cfg := amdxdnatest.XDNA1()
		if mf.Package.Target == "xdna2" {
			cfg = amdxdnatest.XDNA2()
		}
		d, k := open(t, cfg)
		var dev npu.Device = d
		if chains {
			dev = amdxdna.NewChaining(d, 0)
		}
		slots, err := emu.StandIns(mf.Tensors, npu.FileSlots(f), mf.Package.Columns)
		if err != nil {
			t.Fatal(err)
		}
		var warn strings.Builder
		b, err := npu.NewBackend(dev, mf.Tensors, slots, nil, npu.Options{Warn: &warn, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		m, err := engine.New(mf.Model, engine.FileWeights{F: f}, engine.Options{Threads: 2, Context: 128, Cache: engine.CacheF16, MatMul: b})
		if err != nil {
			t.Fatal(err)
		}
		st := m.NewState(0)
		toks := make([]int32, prompt)
		for i := range toks {
			toks[i] = int32(100 + 37*i)
		}
		s0 := k.Stats()
		out, err := st.Prefill(toks)
		if err != nil {
			t.Fatal(err)
		}
		s1 := k.Stats()
		for range decode {
			tok := int32(0)
			for i, v := range out {
				if v > out[tok] {
					tok = int32(i)
				}
			}
			if out, err = st.Decode(tok); err != nil {
				t.Fatal(err)
			}
		}
		s2 := k.Stats()
		if bs := b.Stats(); bs.Faults != 0 || bs.CPUCalls != 0 {
			t.Fatalf("faults %d, CPU calls %d: %s", bs.Faults, bs.CPUCalls, warn.String())
		}
		m.Close()
		b.Close()
		mode := "one submission per dispatch"
		if chains {
			mode = "ERT_CMD_CHAIN (Chaining)"
		}
		dTok := float64(s2.Commands-s1.Commands) / decode
		sTok := float64(s2.Submissions-s1.Submissions) / decode
		line := fmt.Sprintf("%s, %s: prompt of %d tokens %d dispatches in %d submissions; decode %.1f dispatches/token in %.1f submissions/token",
			mf.Package.Target, mode, prompt, s1.Commands-s0.Commands, s1.Submissions-s0.Submissions, dTok, sTok)
		line += fmt.Sprintf("; predicted (cost model, direct driver, %d submissions) %.2f ms/token", int(sTok+0.5),
			float64(predictSubmissions(pred, int(sTok+0.5)))/1e6)
		if !chains {
			line += fmt.Sprintf(" (XRT path, catalog's %.0f us/dispatch: %.2f ms/token)", tg.DispatchUS, pred.MsPerToken())
			if int(dTok+0.5) != pred.Dispatches {
				t.Errorf("measured %.1f dispatches per decode token, the cost model counts %d", dTok, pred.Dispatches)
			}
		}
		report = append(report, line)
	}
	for _, l := range report {
		t.Log(l)
	}
}

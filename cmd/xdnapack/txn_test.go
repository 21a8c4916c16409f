package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/runtime/npu/txn"
)

// TestTxnDecode disassembles mlir-aie's npu_instgen golden (npu-contract.md
// 3.1) as text and JSON, and refuses a malformed stream naming the op.
func TestTxnDecode(t *testing.T) {
	dir := t.TempDir()
	bw := txn.BlockWrite(txn.Addr(1, 1, 100), 100, 101, 102, 103, 104, 105, 106, 107)
	bw.Col, bw.Row = 1, 1
	ops := []txn.Op{
		txn.Write32(txn.Addr(3, 4, 0xabc00def), 0x42),
		bw,
		txn.MaskWrite(txn.Addr(2, 3, 0x567A), 0x1001, 0xf00ff00f),
		{Code: txn.OpSync, Col: 3, Row: 4, Dir: 1, Channel: 5, ColNum: 1, RowNum: 2},
		{Code: txn.OpLoadPDI, PDIID: 2, PDISize: 1024, PDIAddr: 0xabc12345678},
		txn.Patch(txn.ShimBDAddr(0, 1)+4, 1, 0x40),
		{Code: txn.OpPreempt, Level: 3},
		{Code: txn.OpNoop},
		{Code: txn.OpMaskPoll, Addr: txn.Addr(0, 0, 0x1D220), Value: 0, Mask: 0xF},
	}
	b, err := txn.Encode(txn.NewHeader(txn.NPU1), ops)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "insts.bin")
	os.WriteFile(f, b, 0o644)
	stdout, _, err := run(t, "txn", "decode", f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"device npu1", "write32 col 3 row 4 reg 0x0000def", "value 0x42", "blockwrite col 1 row 1",
		"maskwrite col 2 row 3", "mask 0xf00ff00f", "sync col 3 row 4 direction 1 (mm2s) channel 5", "load_pdi id 2 size 1024 address 0xabc12345678",
		"ddr_patch col 0 row 0 reg 0x001d024", "arg_idx 1 arg_plus 0x40 [shim bd 1 word 1]", "preempt level 3", "noop", "maskpoll"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _, err = run(t, "txn", "decode", f, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Device string           `json:"device"`
		Header map[string]any   `json:"header"`
		Ops    []map[string]any `json:"ops"`
	}
	if err := json.Unmarshal([]byte(stdout), &js); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	if js.Device != "npu1" || js.Header["num_ops"] != float64(len(ops)) || len(js.Ops) != len(ops) {
		t.Fatalf("json %s", stdout)
	}
	wantOps := []string{"write32", "blockwrite", "maskwrite", "sync", "load_pdi", "ddr_patch", "preempt", "noop", "maskpoll"}
	for i, w := range wantOps {
		if js.Ops[i]["op"] != w {
			t.Errorf("op %d is %v, want %s", i, js.Ops[i]["op"], w)
		}
	}
	if js.Ops[0]["addr"] != "0x06400def" || js.Ops[0]["value"] != "0x00000042" || js.Ops[0]["col"] != float64(3) || js.Ops[0]["row"] != float64(4) {
		t.Errorf("write32 %v", js.Ops[0])
	}
	if js.Ops[5]["arg_idx"] != float64(1) || js.Ops[5]["arg_plus"] != float64(0x40) {
		t.Errorf("ddr_patch %v", js.Ops[5])
	}
	if ws, _ := js.Ops[1]["words"].([]any); len(ws) != 8 || ws[0] != "0x00000064" {
		t.Errorf("blockwrite words %v", js.Ops[1]["words"])
	}
	if js.Ops[2]["mask"] != "0xf00ff00f" {
		t.Errorf("maskwrite %v", js.Ops[2])
	}
	// A stream whose second op has an unknown opcode.
	b[16+24] = 0x77
	os.WriteFile(f, b, 0o644)
	if _, _, err := run(t, "txn", "decode", f); err == nil || !strings.Contains(err.Error(), "op 1 at byte 40") || !strings.Contains(err.Error(), "insts.bin") {
		t.Errorf("bad stream: %v, want the file, op 1 and byte 40", err)
	}
	if _, _, err := run(t, "txn", "decode", filepath.Join(dir, "missing.bin")); err == nil {
		t.Error("missing file: no error")
	}
}

// TestTxnPlan writes the first dispatch of a packed tensor for both
// targets: it decodes, names the package's generation, holds a BD, a patch
// and an output sync per used column; a CPU tensor is refused by name.
func TestTxnPlan(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(fixtures, "tiny-llama-q8_0.gguf")
	for _, c := range []struct {
		target string
		gen    txn.Gen
		cols   int
	}{{"xdna1", txn.NPU1, 4}, {"xdna2", txn.NPU2, 8}} {
		x := filepath.Join(dir, c.target+".xdna")
		if _, stderr, err := run(t, model, "-o", x, "--target", c.target, "--cpu-max-n", "0", "-q"); err != nil {
			t.Fatalf("pack: %v\n%s", err, stderr)
		}
		out := filepath.Join(dir, c.target+".bin")
		_, stderr, err := run(t, "txn", "plan", x, "--tensor", "blk.0.ffn_gate_up.weight", "--tokens", "3", "-o", out)
		if err != nil {
			t.Fatalf("%s: plan: %v", c.target, err)
		}
		if !strings.Contains(stderr, "3 token(s)") || !strings.Contains(stderr, "header object (design") {
			t.Errorf("%s: stderr %q", c.target, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		s, err := txn.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", c.target, err)
		}
		if s.Header.DevGen != c.gen || int(s.Header.NumCols) != c.cols {
			t.Errorf("%s: header %+v", c.target, s.Header)
		}
		var bds, patches, syncs int
		for _, op := range s.Ops {
			switch op.Code {
			case txn.OpBlockWrite:
				bds++
			case txn.OpDDRPatch:
				patches++
			case txn.OpSync:
				syncs++
			}
		}
		if bds != 2*c.cols+2 || patches != bds || syncs != c.cols {
			t.Errorf("%s: %d BDs, %d patches, %d syncs; want %d, %d, %d", c.target, bds, patches, syncs, 2*c.cols+2, 2*c.cols+2, c.cols)
		}
		_, _, err = run(t, "txn", "plan", x, "--tensor", "token_embd.weight", "-o", out)
		if err == nil || !strings.Contains(err.Error(), "runs on the CPU") {
			t.Errorf("%s: a CPU tensor: %v", c.target, err)
		}
		if _, _, err := run(t, "txn", "plan", x, "--tensor", "nope", "-o", out); err == nil || !strings.Contains(err.Error(), `no tensor "nope"`) {
			t.Errorf("%s: unknown tensor: %v", c.target, err)
		}
	}
}

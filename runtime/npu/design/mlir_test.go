package design

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/target"
)

// The mlir-aie test files whose spelling MLIR follows, read through the
// code index at these commits (Xilinx/mlir-aie, Apache-2.0 WITH
// LLVM-exception). Nothing of them is copied here: spellings lists, for
// each op name, attribute name, keyword and device name the printer
// writes, which of these files use it. Each was checked by reading the file.
var mlirAIEFiles = map[string]string{
	// A: a physical npu2 design (mlir-air's output) that aiecc compiles:
	// tiles, locks with init, buffers with sym_name, flows, aie.mem and
	// aie.memtile_dma with aie.dma_start blocks, positional aie.dma_bd with
	// [<size = , stride = >] dimensions, aie.next_bd, cores with link_with.
	"A": "test/npu2-xrt/matrix_multiplication_using_dma/aie.mlir@c1deed15a508e76e2a50f270b5f4e5f3b49ea1fa",
	// B: npu1 device, buffers with address, the shim allocation taking its tile.
	"B": "test/Targets/NPU/static_vs_dynamic/memcpy_nd_npu1.mlir@aaec96505c8510c4b0fd45a2e3704666c0f3fe35",
	// C: mlir-aie's own dynamic objectFifo lowering: turns kept in a core
	// buffer (memref.load/store), scf.index_switch choosing the buffer,
	// arith.addi/cmpi sge/subi/select advancing the turn, aie.use_lock.
	"C": "test/objectFifo-stateful-transform/dynamic_lowering/same_depth_objectfifos_test.mlir@42c31aa634b22d19ab917e97c75d1efc9f99c336",
	// D: func.func private declarations of kernel functions.
	"D": "test/npu-xrt/matrix_multiplication_using_cascade/aie_plainx1.mlir@0e99f78639f99ad5d8a865efe4431a852cdd8a15",
	// E: stack_size on aie.core.
	"E": "test/assign-buffer-addresses/bank_aware_mem_bank_pin_with_reservation_error.mlir@3f975309f77ce25095702143ebf857f30507d23e",
}

// spellings: what the printer may write, and the files above that write it.
var spellings = map[string]string{
	// devices
	"device npu1": "B", "device npu2": "A E",
	// ops
	"aie.device": "A B C", "aie.tile": "A B C", "aie.buffer": "A B C", "aie.lock": "A C",
	"aie.flow": "A C", "aie.shim_dma_allocation": "B", "aie.mem": "A", "aie.memtile_dma": "A",
	"aie.dma_start": "A", "aie.dma_bd": "A", "aie.use_lock": "A C", "aie.next_bd": "A",
	"aie.end": "A C E", "aie.core": "A C E", "func.func": "D", "func.call": "A C D",
	"scf.for": "A C", "scf.index_switch": "C", "scf.yield": "C", "arith.constant": "A B C",
	"arith.addi": "B C", "arith.subi": "C", "arith.cmpi": "C", "arith.select": "C",
	"arith.index_cast": "C", "memref.load": "C", "memref.store": "C",
	// attribute names
	"attr address": "B", "attr sym_name": "A B C", "attr init": "A C", "attr link_with": "A D",
	"attr stack_size": "E",
	// keywords
	"private": "D", "case": "C", "default": "C", "sge": "C", "DMA": "A C",
	"AcquireGreaterEqual": "A C", "Release": "A C", "MM2S": "A B", "S2MM": "A B",
	// forms
	"shim_dma_allocation @sym(%tile, DIR, N)": "B", "dma_bd(%buf : T, offset, len)": "A",
	"dma_bd dimensions [<size = N, stride = N>]": "A", "dma_start(DIR, N, ^bb, ^bb)": "A",
}

var (
	reOp       = regexp.MustCompile(`^(?:%\w+ = )?([a-z_]+\.[a-z_.]+)`)
	reAttrDict = regexp.MustCompile(`\{([a-z_]+ = [^{}]*)\}`)
	reKeyword  = regexp.MustCompile(`\b(private|sge|AcquireGreaterEqual|Release|MM2S|S2MM|DMA)\b`)
	reAttrKey  = regexp.MustCompile(`(?:^|, )([a-z_]+) = `)
	reDevice   = regexp.MustCompile(`aie\.device\((\w+)\)`)
	reValue    = regexp.MustCompile(`%\w+`)
	reDef      = regexp.MustCompile(`^(?:(%\w+) = |scf\.for (%\w+) = )`)
	reTile     = regexp.MustCompile(`^(%tile_(\d+)_(\d+)) = aie\.tile\((\d+), (\d+)\)$`)
	reBuffer   = regexp.MustCompile(`^%(\w+) = aie\.buffer\(%tile_(\d+)_(\d+)\) \{address = (\d+) : i32, sym_name = "(\w+)"\} : memref<(\d+)x(i8|i32|f32)>$`)
	reLock     = regexp.MustCompile(`^%(\w+) = aie\.lock\(%tile_(\d+)_(\d+), (\d+)\) \{init = (\d+) : i32, sym_name = "(\w+)"\}$`)
	reLabel    = regexp.MustCompile(`^\^bb(\d+):$`)
	reBBRef    = regexp.MustCompile(`\^bb(\d+)`)
	reStart    = regexp.MustCompile(`^%\w+ = aie\.dma_start\((MM2S|S2MM), (\d+), \^bb(\d+), \^bb(\d+)\)$`)
	reBD       = regexp.MustCompile(`^aie\.dma_bd\(%(\w+) : memref<(\d+)x(i8|i32|f32)>, (\d+), (\d+)(, \[(<size = \d+, stride = \d+>(, )?)+\])?\)$`)
	reShim     = regexp.MustCompile(`^aie\.shim_dma_allocation @\w+\(%tile_\d+_0, (MM2S|S2MM), \d+\)$`)
	reCoreEnd  = regexp.MustCompile(`^\} \{link_with = "[^"]+", stack_size = (\d+) : i32\}$`)
)

// mlirUses returns the spellings of spellings' kinds that text uses.
func mlirUses(text string) map[string]bool {
	use := map[string]bool{}
	for _, raw := range strings.Split(text, "\n") {
		l := stripComment(raw)
		if l == "" {
			continue
		}
		if m := reOp.FindStringSubmatch(l); m != nil {
			use[m[1]] = true
		}
		for _, m := range reDevice.FindAllStringSubmatch(l, -1) {
			use["device "+m[1]] = true
		}
		for _, m := range reAttrDict.FindAllStringSubmatch(l, -1) {
			for _, k := range reAttrKey.FindAllStringSubmatch(m[1], -1) {
				use["attr "+k[1]] = true
			}
		}
		for _, kw := range reKeyword.FindAllString(l, -1) {
			use[kw] = true
		}
		if strings.HasPrefix(l, "case ") {
			use["case"] = true
		}
		if strings.HasPrefix(l, "default ") {
			use["default"] = true
		}
		switch {
		case strings.HasPrefix(l, "aie.shim_dma_allocation"):
			// false: some line uses another form than the cited files'.
			const k = "shim_dma_allocation @sym(%tile, DIR, N)"
			if _, seen := use[k]; !seen {
				use[k] = true
			}
			if !reShim.MatchString(l) {
				use[k] = false
			}
		case strings.HasPrefix(l, "aie.dma_bd"):
			use["dma_bd(%buf : T, offset, len)"] = true
			if strings.Contains(l, "<size = ") {
				use["dma_bd dimensions [<size = N, stride = N>]"] = true
			}
		case strings.Contains(l, "aie.dma_start("):
			use["dma_start(DIR, N, ^bb, ^bb)"] = true
		}
	}
	return use
}

func stripComment(l string) string {
	if i := strings.Index(l, "//"); i >= 0 {
		l = l[:i]
	}
	return strings.TrimSpace(l)
}

// checkSpelling fails for any spelling text uses that no cited file uses.
func checkSpelling(text string) error {
	var bad []string
	for s, ok := range mlirUses(text) {
		if !ok {
			bad = append(bad, s+" (in another form than the cited files')")
			continue
		}
		if spellings[s] == "" {
			bad = append(bad, s)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return fmt.Errorf("spellings no cited mlir-aie file uses: %s", strings.Join(bad, "; "))
	}
	return nil
}

// checkWellFormed checks what can be checked without mlir-aie: balanced
// brackets; every SSA value defined once and before its uses; every called
// function declared; every block reference inside its region and every
// label once; each DMA channel's chain closed (each BD block ends in a
// next_bd to a block of the chain or to the region's end, which holds
// aie.end); lock ids unique per tile and within the tile's locks, initial
// values within 0..63; every buffer inside its tile's memory, past a
// core's stack, not overlapping another.
func checkWellFormed(text string, t *target.Target) error {
	depth := map[byte]int{}
	pairs := map[byte]byte{')': '(', ']': '[', '}': '{'}
	defined := map[string]bool{}
	funcs := map[string]bool{}
	type tileKey struct{ c, r int }
	lockIDs := map[tileKey]map[int]bool{}
	type span struct {
		lo, hi int
		name   string
	}
	bufs := map[tileKey][]span{}
	stack := map[tileKey]int{}
	var coreTile *tileKey
	// DMA region state.
	inRegion := false
	var labels map[int][]string // label -> its lines
	var order []int
	var starts [][3]int // first BD block, next block
	cur := -1
	for n, raw := range strings.Split(text, "\n") {
		l := stripComment(raw)
		if l == "" {
			continue
		}
		where := fmt.Sprintf("line %d %q", n+1, l)
		for i := 0; i < len(l); i++ {
			ch := l[i]
			if ch == '"' { // skip string literals
				j := strings.IndexByte(l[i+1:], '"')
				if j < 0 {
					return fmt.Errorf("%s: unterminated string", where)
				}
				i += j + 1
				continue
			}
			switch ch {
			case '(', '[', '{':
				depth[ch]++
			case ')', ']', '}':
				depth[pairs[ch]]--
				if depth[pairs[ch]] < 0 {
					return fmt.Errorf("%s: unbalanced %c", where, ch)
				}
			}
		}
		// SSA values: definitions first, then uses.
		def := reDef.FindStringSubmatch(l)
		name := ""
		if def != nil {
			name = def[1] + def[2]
			if defined[name] {
				return fmt.Errorf("%s: %s defined twice", where, name)
			}
		}
		for _, v := range reValue.FindAllString(l, -1) {
			if v != name && !defined[v] {
				return fmt.Errorf("%s: %s used before it is defined", where, v)
			}
		}
		if name != "" {
			defined[name] = true
		}
		if strings.HasPrefix(l, "func.func private @") {
			funcs[l[len("func.func private @"):strings.IndexByte(l, '(')]] = true
		}
		if strings.HasPrefix(l, "func.call @") {
			if f := l[len("func.call @"):strings.IndexByte(l, '(')]; !funcs[f] {
				return fmt.Errorf("%s: calls @%s, which is not declared", where, f)
			}
		}
		if m := reTile.FindStringSubmatch(l); m != nil && (m[2] != m[4] || m[3] != m[5]) {
			return fmt.Errorf("%s: tile value named for another tile", where)
		}
		if m := reLock.FindStringSubmatch(l); m != nil {
			k := tileKey{atoi(m[2]), atoi(m[3])}
			id, init := atoi(m[4]), atoi(m[5])
			lim := t.Tile(target.Kind(k.r)).Locks
			if lockIDs[k] == nil {
				lockIDs[k] = map[int]bool{}
			}
			if lockIDs[k][id] || id >= lim || init > t.Tile(target.Kind(k.r)).LockMax || m[1] != m[6] {
				return fmt.Errorf("%s: lock id %d (used: %v, a tile has %d) or init %d out of bounds", where, id, lockIDs[k][id], lim, init)
			}
			lockIDs[k][id] = true
		} else if strings.Contains(l, "aie.lock(") {
			return fmt.Errorf("%s: a lock without id, init and sym_name", where)
		}
		if m := reBuffer.FindStringSubmatch(l); m != nil {
			k := tileKey{atoi(m[2]), atoi(m[3])}
			size := atoi(m[6]) * ElemBytes(m[7])
			bufs[k] = append(bufs[k], span{atoi(m[4]), atoi(m[4]) + size, m[1]})
		} else if strings.Contains(l, "aie.buffer(") {
			return fmt.Errorf("%s: a buffer without address and sym_name", where)
		}
		if strings.HasPrefix(l, "%core_") {
			var c, r int
			fmt.Sscanf(l, "%%core_%d_%d", &c, &r)
			coreTile = &tileKey{c, r}
		}
		if m := reCoreEnd.FindStringSubmatch(l); m != nil && coreTile != nil {
			stack[*coreTile] = atoi(m[1])
			coreTile = nil
		}
		// DMA regions.
		if strings.Contains(l, "= aie.mem(") || strings.Contains(l, "= aie.memtile_dma(") {
			inRegion, labels, order, starts, cur = true, map[int][]string{}, nil, nil, 0
			labels[0] = nil
			continue
		}
		if !inRegion {
			continue
		}
		if l == "}" {
			if err := checkChains(labels, order, starts); err != nil {
				return fmt.Errorf("DMA region ending at line %d: %w", n+1, err)
			}
			inRegion = false
			continue
		}
		if m := reLabel.FindStringSubmatch(l); m != nil {
			cur = atoi(m[1])
			if _, ok := labels[cur]; ok {
				return fmt.Errorf("%s: label defined twice", where)
			}
			labels[cur] = nil
			order = append(order, cur)
			continue
		}
		labels[cur] = append(labels[cur], l)
		if m := reStart.FindStringSubmatch(l); m != nil {
			starts = append(starts, [3]int{atoi(m[3]), atoi(m[4]), n + 1})
		} else if strings.Contains(l, "aie.dma_start") {
			return fmt.Errorf("%s: malformed dma_start", where)
		}
		if strings.HasPrefix(l, "aie.dma_bd") && !reBD.MatchString(l) {
			return fmt.Errorf("%s: malformed dma_bd", where)
		}
	}
	for ch, d := range depth {
		if d != 0 {
			return fmt.Errorf("%c opened %d more times than closed", ch, d)
		}
	}
	for k, ss := range bufs {
		sort.Slice(ss, func(i, j int) bool { return ss[i].lo < ss[j].lo })
		end := stack[k]
		if target.Kind(k.r) == target.Core && end == 0 {
			return fmt.Errorf("tile (%d,%d) has buffers and no core with a stack_size", k.c, k.r)
		}
		for _, s := range ss {
			if s.lo < end {
				return fmt.Errorf("tile (%d,%d) buffer %s at %d overlaps what ends at %d", k.c, k.r, s.name, s.lo, end)
			}
			end = s.hi
		}
		if mem := t.Tile(target.Kind(k.r)).Memory; end > mem {
			return fmt.Errorf("tile (%d,%d): buffers end at %d, its memory is %d bytes", k.c, k.r, end, mem)
		}
	}
	return nil
}

// checkChains checks one DMA region's blocks.
func checkChains(labels map[int][]string, order []int, starts [][3]int) error {
	for _, ls := range labels {
		for _, l := range ls {
			for _, m := range reBBRef.FindAllStringSubmatch(l, -1) {
				if _, ok := labels[atoi(m[1])]; !ok {
					return fmt.Errorf("%q refers to ^bb%s, not a block of the region", l, m[1])
				}
			}
		}
	}
	if len(order) == 0 || len(labels[order[len(order)-1]]) != 1 || labels[order[len(order)-1]][0] != "aie.end" {
		return fmt.Errorf("the last block is not aie.end alone")
	}
	end := order[len(order)-1]
	for _, s := range starts {
		seen := map[int]bool{}
		b := s[0]
		for {
			if b == end {
				break // a chain that stops
			}
			if seen[b] {
				break // back to a BD of the chain: a loop
			}
			seen[b] = true
			ls := labels[b]
			if len(ls) == 0 || !strings.HasPrefix(ls[len(ls)-1], "aie.next_bd ^bb") {
				return fmt.Errorf("block ^bb%d of the chain started at line %d does not end in aie.next_bd", b, s[2])
			}
			nbd := 0
			for _, l := range ls {
				if strings.HasPrefix(l, "aie.dma_bd") {
					nbd++
				}
			}
			if nbd != 1 {
				return fmt.Errorf("block ^bb%d holds %d dma_bd", b, nbd)
			}
			b = atoi(strings.TrimPrefix(ls[len(ls)-1], "aie.next_bd ^bb"))
		}
		if len(seen) == 0 {
			return fmt.Errorf("the chain started at line %d has no BD", s[2])
		}
	}
	return nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// mlirDesigns is every catalog slot's design and both bring-up designs.
func mlirDesigns(t *testing.T) []*Design {
	ds := catalogDesigns(t)
	for _, tg := range target.All {
		d, err := NewBringUp(tg)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return ds
}

func mlirOf(t *testing.T, d *Design) string {
	t.Helper()
	var b bytes.Buffer
	if err := d.MLIR(&b, MLIROptions{Object: "gemv.o"}); err != nil {
		t.Fatalf("%s: %v", d.Name(), err)
	}
	return b.String()
}

// TestMLIRCatalog writes the MLIR of every catalog slot and both bring-up
// designs and checks it: every op name, attribute name, keyword, form and
// device name it uses occurs in the cited mlir-aie test files; it is well
// formed (checkWellFormed); and it says what the design says: one buffer
// line per buffer at its address, one lock per lock, one flow per route
// destination, one dma_bd per BD, one dma_start per channel, one core per
// core with its stack, one shim allocation per host channel.
func TestMLIRCatalog(t *testing.T) {
	files := map[string]bool{}
	for s, fs := range spellings {
		for _, f := range strings.Fields(fs) {
			if mlirAIEFiles[f] == "" {
				t.Fatalf("spelling %q cites file %s, which is not listed", s, f)
			}
			files[f] = true
		}
	}
	if len(files) < 3 {
		t.Fatalf("the spellings cite %d mlir-aie files, want at least 3", len(files))
	}
	used := map[string]bool{}
	for _, d := range mlirDesigns(t) {
		text := mlirOf(t, d)
		if err := checkSpelling(text); err != nil {
			t.Errorf("%s: %v", d.Name(), err)
		}
		if err := checkWellFormed(text, d.Target); err != nil {
			t.Errorf("%s: %v", d.Name(), err)
		}
		for s := range mlirUses(text) {
			used[s] = true
		}
		if !strings.Contains(text, "aie.device("+d.Target.Device+") {") {
			t.Errorf("%s: not on device %s", d.Name(), d.Target.Device)
		}
		var nbuf, nlock, nflow, nbd, nchan, ncore int
		for _, tl := range d.Tiles {
			for _, b := range tl.Buffers {
				nbuf++
				want := fmt.Sprintf("%%%s = aie.buffer(%%tile_%d_%d) {address = %d : i32, sym_name = %q} : %s", b.Name, tl.Col, tl.Row, b.Addr, b.Name, memref(b))
				if !strings.Contains(text, want+"\n") {
					t.Errorf("%s: no line %q", d.Name(), want)
				}
			}
			for _, l := range tl.Locks {
				nlock++
				want := fmt.Sprintf("%%%s = aie.lock(%%tile_%d_%d, %d) {init = %d : i32, sym_name = %q}", l.Name, tl.Col, tl.Row, l.ID, l.Init, l.Name)
				if !strings.Contains(text, want+"\n") {
					t.Errorf("%s: no line %q", d.Name(), want)
				}
			}
			nchan += len(tl.Channels)
			for _, ch := range tl.Channels {
				nbd += len(ch.BDs)
			}
			if tl.Program != nil {
				ncore++
			}
		}
		for _, f := range d.Flows {
			nflow += len(f.Dsts)
		}
		for what, c := range map[string][2]int{
			"= aie.buffer(":            {strings.Count(text, "= aie.buffer("), nbuf},
			"= aie.lock(":              {strings.Count(text, "= aie.lock("), nlock},
			"aie.flow(":                {strings.Count(text, "aie.flow("), nflow},
			"aie.dma_bd(":              {strings.Count(text, "aie.dma_bd("), nbd},
			"aie.dma_start(":           {strings.Count(text, "aie.dma_start("), nchan},
			"= aie.core(":              {strings.Count(text, "= aie.core("), ncore},
			"aie.shim_dma_allocation ": {strings.Count(text, "aie.shim_dma_allocation "), 2*d.Columns + 1},
			"stack_size = ":            {strings.Count(text, fmt.Sprintf("stack_size = %d : i32", stackBytes[d.Type])), ncore},
		} {
			if c[0] != c[1] {
				t.Errorf("%s: %d %q, the design has %d", d.Name(), c[0], what, c[1])
			}
		}
		// The broadcast: one source, one flow per core.
		shimActs := fmt.Sprintf("aie.flow(%%tile_%d_0, DMA : %d, ", d.Shim.ActCol, d.Shim.ActCh)
		if n := strings.Count(text, shimActs); n != d.Columns*d.Cores() {
			t.Errorf("%s: the activation broadcast has %d flows, want one per core (%d)", d.Name(), n, d.Columns*d.Cores())
		}
	}
	var list []string
	for s := range used {
		list = append(list, fmt.Sprintf("%s [%s]", s, spellings[s]))
	}
	sort.Strings(list)
	t.Logf("spellings used, each with the cited files that use it:\n  %s", strings.Join(list, "\n  "))
	var keys []string
	for f := range files {
		keys = append(keys, f)
	}
	sort.Strings(keys)
	for _, f := range keys {
		t.Logf("%s: Xilinx/mlir-aie %s", f, mlirAIEFiles[f])
	}
}

// TestMLIRChecksFail: the checks of TestMLIRCatalog catch each kind of
// mistake they exist for, in a real design's text changed by one edit.
func TestMLIRChecksFail(t *testing.T) {
	d, err := NewBringUp(target.XDNA1)
	if err != nil {
		t.Fatal(err)
	}
	text := mlirOf(t, d)
	if err := checkWellFormed(text, d.Target); err != nil {
		t.Fatal(err)
	}
	if err := checkSpelling(text); err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) string {
		if !strings.Contains(text, old) {
			t.Fatalf("the bring-up MLIR has no %q", old)
		}
		return strings.Replace(text, old, new, 1)
	}
	for _, c := range []struct {
		name, text, want string
		spelling         bool
	}{
		{"an op no cited file uses", replace("aie.dma_start(MM2S, 0", "aie.dma_begin(MM2S, 0"), "aie.dma_begin", true},
		{"the 2024 device name", replace("aie.device(npu1)", "aie.device(npu1_4col)"), "device npu1_4col", true},
		{"an attribute no cited file uses", replace(`{address = 0 : i32, `, `{address = 0 : i32, mem_bank = 0 : i32, `), "attr mem_bank", true},
		{"the shim allocation's pre-#2727 form", replace("aie.shim_dma_allocation @shim_w0(%tile_0_0, MM2S, 0)", "aie.shim_dma_allocation @shim_w0(MM2S, 0, 0)"), "another form", true},
		{"an unbalanced brace", replace("scf.yield\n", "scf.yield {\n"), "opened", false},
		{"a value used before its definition", replace("%v9 = arith.constant 0 : index", "%v9 = arith.constant 0 : index\n      %v1000 = arith.addi %v1001, %v1001 : i32"), "%v1001 used before", false},
		{"a value defined twice", replace("%v10 = arith.constant 0 : i32", "%v8 = arith.constant 0 : i32"), "defined twice", false},
		{"an undeclared function", replace("func.func private @xdna_gemv_init()\n", ""), "not declared", false},
		{"a BD chain that is not closed", replace("      aie.next_bd ^bb1\n", ""), "does not end in aie.next_bd", false},
		{"a jump out of the region", replace("aie.next_bd ^bb1\n", "aie.next_bd ^bb77\n"), "not a block of the region", false},
		{"a lock id twice on a tile", replace("aie.lock(%tile_0_2, 1)", "aie.lock(%tile_0_2, 0)"), "lock id 0", false},
		{"a core lock id past 15", replace("aie.lock(%tile_0_2, 5)", "aie.lock(%tile_0_2, 16)"), "lock id 16", false},
		{"a buffer over the stack", replace("{address = 4096 : i32", "{address = 4000 : i32"), "overlaps", false},
		{"a buffer past the core's memory", replace(`%acc0_2 = aie.buffer(%tile_0_2) {address = 13504 : i32`, `%acc0_2 = aie.buffer(%tile_0_2) {address = 64000 : i32`), "its memory is 65536", false},
	} {
		var err error
		if c.spelling {
			err = checkSpelling(c.text)
		} else {
			err = checkWellFormed(c.text, d.Target)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestMLIRDesign: what the printer refuses, and how a design's parts show.
func TestMLIRDesign(t *testing.T) {
	d, err := NewBringUp(target.XDNA2)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.MLIR(&bytes.Buffer{}, MLIROptions{}); err == nil || !strings.Contains(err.Error(), "kernel object") {
		t.Errorf("no kernel object: %v", err)
	}
	d.Tile(0, 2).Locks[0].Name = d.Tile(0, 2).Buffers[0].Name
	if err := d.MLIR(&bytes.Buffer{}, MLIROptions{Object: "gemv.o"}); err == nil || !strings.Contains(err.Error(), "both named") {
		t.Errorf("a lock named as a buffer: %v", err)
	}
	d, _ = NewBringUp(target.XDNA2)
	d.Tile(0, 2).State = nil
	if err := d.MLIR(&bytes.Buffer{}, MLIROptions{Object: "gemv.o"}); err == nil || !strings.Contains(err.Error(), "state buffer") {
		t.Errorf("a core without its state buffer: %v", err)
	}
	// A strided BD prints its dimensions outermost first, in elements: an
	// i8 buffer's words become runs of 4.
	d, _ = NewBringUp(target.XDNA2)
	bd := d.Tile(0, 1).Channels[0].BDs[0] // memtile MM2S 0: a weight piece to the core
	bd.Dims = []Dim{{Size: 8, Stride: 1}, {Size: bd.Len / 32, Stride: 8}}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	text := mlirOf(t, d)
	want := fmt.Sprintf("aie.dma_bd(%%mw0_0_0 : memref<%dxi8>, 0, %d, [<size = %d, stride = 32>, <size = 8, stride = 4>, <size = 4, stride = 1>])", bd.Buf.Size, bd.Len, bd.Len/32)
	if !strings.Contains(text, want) {
		t.Errorf("no %q", want)
	}
	if err := checkWellFormed(text, d.Target); err != nil {
		t.Error(err)
	}
	// Narrowed designs need a tag; bad widths are refused.
	for _, o := range []Options{{Columns: 1}, {Columns: 9, Tag: "x"}, {Cores: 5, Tag: "x"}, {Cores: -1, Tag: "x"}} {
		if _, err := NewWith(target.XDNA2, d.Type, 128, o); err == nil {
			t.Errorf("NewWith %+v: no error", o)
		}
	}
}

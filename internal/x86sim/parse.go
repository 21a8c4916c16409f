package x86sim

import (
	"fmt"
	"strconv"
	"strings"
)

// opKind is the kind of an operand.
type opKind uint8

const (
	opGPR  opKind = iota + 1 // general-purpose register
	opVec                    // xmm, ymm or zmm register
	opMask                   // k register
	opMem                    // memory
	opImm                    // immediate
	opRel                    // branch target address
)

// operand is one parsed operand.
type operand struct {
	kind opKind
	reg  int  // GPR 0-15 (rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8-r15), vector 0-31, k 0-7
	size int  // bytes: GPR 1, 2, 4, 8; vector 16, 32, 64; memory 1-64 (0 for lea's)
	high bool // ah, ch, dh, bh

	base, index int // GPR numbers, -1 for none
	scale       int
	disp        int64
	rip         bool   // RIP-relative: the address is abs
	abs         uint64 // RIP-relative target, or the branch target
	bcst        bool   // EVEX embedded broadcast: size is the element's

	imm int64
}

// inst is one disassembled instruction.
type inst struct {
	addr, next uint64
	text       string // as objdump printed it
	op         string // mnemonic
	args       []operand
	k          int  // opmask of the destination, 0 for none
	z          bool // zeroing-masking
	err        error
	exec       handler
}

// handler executes one instruction.
type handler func(m *machine, in *inst) error

var gprNames = func() map[string]operand {
	r := map[string]operand{}
	q := []string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi"}
	d := []string{"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"}
	w := []string{"ax", "cx", "dx", "bx", "sp", "bp", "si", "di"}
	b := []string{"al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil"}
	for i := 0; i < 8; i++ {
		r[q[i]] = operand{kind: opGPR, reg: i, size: 8}
		r[d[i]] = operand{kind: opGPR, reg: i, size: 4}
		r[w[i]] = operand{kind: opGPR, reg: i, size: 2}
		r[b[i]] = operand{kind: opGPR, reg: i, size: 1}
	}
	for i, h := range []string{"ah", "ch", "dh", "bh"} {
		r[h] = operand{kind: opGPR, reg: i, size: 1, high: true}
	}
	for i := 8; i < 16; i++ {
		n := fmt.Sprintf("r%d", i)
		r[n] = operand{kind: opGPR, reg: i, size: 8}
		r[n+"d"] = operand{kind: opGPR, reg: i, size: 4}
		r[n+"w"] = operand{kind: opGPR, reg: i, size: 2}
		r[n+"b"] = operand{kind: opGPR, reg: i, size: 1}
	}
	for i := 0; i < 32; i++ {
		r[fmt.Sprintf("xmm%d", i)] = operand{kind: opVec, reg: i, size: 16}
		r[fmt.Sprintf("ymm%d", i)] = operand{kind: opVec, reg: i, size: 32}
		r[fmt.Sprintf("zmm%d", i)] = operand{kind: opVec, reg: i, size: 64}
	}
	for i := 0; i < 8; i++ {
		r[fmt.Sprintf("k%d", i)] = operand{kind: opMask, reg: i, size: 8}
	}
	return r
}()

var memSizes = map[string]int{
	"BYTE": 1, "WORD": 2, "DWORD": 4, "QWORD": 8,
	"XMMWORD": 16, "YMMWORD": 32, "ZMMWORD": 64,
}

// parseFunc parses objdump's disassembly of one function. A line it cannot
// parse becomes an instruction that fails when executed, so padding after
// the last RET does no harm.
func parseFunc(name, out string) (*Func, error) {
	f := &Func{name: name, index: map[uint64]int{}}
	for _, line := range strings.Split(out, "\n") {
		tab := strings.IndexByte(line, '\t')
		if tab < 0 {
			continue
		}
		addrText := strings.TrimSpace(line[:tab])
		if !strings.HasSuffix(addrText, ":") {
			continue
		}
		addr, err := strconv.ParseUint(strings.TrimSuffix(addrText, ":"), 16, 64)
		if err != nil {
			continue
		}
		text := strings.TrimSpace(line[tab+1:])
		if i := strings.IndexByte(text, '\t'); i >= 0 { // raw bytes shown: keep the instruction
			text = strings.TrimSpace(text[i+1:])
		}
		in := parseInst(addr, text)
		f.index[addr] = len(f.insts)
		f.insts = append(f.insts, in)
	}
	if len(f.insts) == 0 {
		return nil, fmt.Errorf("x86sim: %s: objdump printed no instructions", name)
	}
	for i := range f.insts {
		in := &f.insts[i]
		if i+1 < len(f.insts) {
			in.next = f.insts[i+1].addr
		} else {
			in.next = ^uint64(0)
			if in.err == nil && len(in.args) > 0 {
				in.err = fmt.Errorf("%w: the last instruction's length is unknown", ErrUnsupported)
			}
		}
		// objdump's comment gives each RIP-relative target: it must be
		// the address after the instruction plus the displacement.
		for _, o := range in.args {
			if o.kind == opMem && o.rip && in.err == nil && o.abs != uint64(int64(in.next)+o.disp) {
				in.err = fmt.Errorf("RIP-relative target %#x in objdump's comment, %#x computed", o.abs, uint64(int64(in.next)+o.disp))
			}
		}
	}
	return f, nil
}

// parseInst parses one instruction's text and finds its handler.
func parseInst(addr uint64, text string) inst {
	in := inst{addr: addr, text: text}
	body, comment, _ := strings.Cut(text, "#")
	body = strings.TrimSpace(body)
	mn, rest, _ := strings.Cut(body, " ")
	if mn == "{vex}" || mn == "{evex}" { // an explicit encoding (AVX-VNNI's VEX VPDPBUSD): same semantics
		mn, rest, _ = strings.Cut(strings.TrimSpace(rest), " ")
	}
	in.op = mn
	rest = strings.TrimSpace(rest)
	if h := handlers[mn]; h != nil {
		in.exec = h
	} else {
		in.err = fmt.Errorf("%w: mnemonic %q", ErrUnsupported, mn)
		return in
	}
	if rest == "" {
		return in
	}
	for i, s := range strings.Split(rest, ",") {
		o, err := parseOperand(strings.TrimSpace(s), comment, &in, i)
		if err != nil {
			in.err = err
			return in
		}
		in.args = append(in.args, o)
	}
	return in
}

// parseOperand parses operand i of in.
func parseOperand(s, comment string, in *inst, i int) (operand, error) {
	// Masks: {k1}, {z} on the destination (operand 0).
	for strings.HasSuffix(s, "}") {
		j := strings.LastIndexByte(s, '{')
		if j < 0 {
			return operand{}, fmt.Errorf("%w: operand %q", ErrUnsupported, s)
		}
		dec := s[j+1 : len(s)-1]
		s = s[:j]
		switch {
		case i == 0 && dec == "z":
			in.z = true
		case i == 0 && len(dec) == 2 && dec[0] == 'k' && dec[1] >= '1' && dec[1] <= '7':
			in.k = int(dec[1] - '0')
		default:
			return operand{}, fmt.Errorf("%w: operand decoration {%s}", ErrUnsupported, dec)
		}
	}
	if o, ok := gprNames[s]; ok {
		return o, nil
	}
	if isBranch(in.op) {
		// "5e3973 <sym+0x253>", or "0x5e3973" in a stripped binary
		t, _, _ := strings.Cut(s, " <")
		a, err := strconv.ParseUint(strings.TrimPrefix(t, "0x"), 16, 64)
		if err != nil {
			return operand{}, fmt.Errorf("%w: branch target %q", ErrUnsupported, s)
		}
		return operand{kind: opRel, abs: a}, nil
	}
	if s == "1" { // the shift-by-one encodings (D1 /4 ...): "shr r8,1"
		return operand{kind: opImm, imm: 1}, nil
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "-0x") {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			u, err2 := strconv.ParseUint(s, 0, 64)
			if err2 != nil {
				return operand{}, fmt.Errorf("%w: immediate %q", ErrUnsupported, s)
			}
			v = int64(u)
		}
		return operand{kind: opImm, imm: v}, nil
	}
	// Memory: [SIZE PTR|SIZE BCST] [base+index*scale+disp]
	o := operand{kind: opMem, base: -1, index: -1}
	lb := strings.IndexByte(s, '[')
	if lb < 0 || !strings.HasSuffix(s, "]") {
		return operand{}, fmt.Errorf("%w: operand %q", ErrUnsupported, s)
	}
	if pre := strings.Fields(s[:lb]); len(pre) > 0 {
		if len(pre) != 2 || memSizes[pre[0]] == 0 || (pre[1] != "PTR" && pre[1] != "BCST") {
			return operand{}, fmt.Errorf("%w: memory operand %q", ErrUnsupported, s)
		}
		o.size = memSizes[pre[0]]
		o.bcst = pre[1] == "BCST"
	}
	expr := s[lb+1 : len(s)-1]
	// Split into signed terms.
	for len(expr) > 0 {
		sign := int64(1)
		if expr[0] == '+' || expr[0] == '-' {
			if expr[0] == '-' {
				sign = -1
			}
			expr = expr[1:]
		}
		j := strings.IndexAny(expr, "+-")
		term := expr
		if j >= 0 {
			term, expr = expr[:j], expr[j:]
		} else {
			expr = ""
		}
		switch {
		case term == "rip":
			o.rip = true
		case strings.HasPrefix(term, "0x"):
			v, err := strconv.ParseUint(term, 0, 64)
			if err != nil {
				return operand{}, fmt.Errorf("%w: memory operand %q", ErrUnsupported, s)
			}
			o.disp += sign * int64(v)
		case strings.Contains(term, "*"):
			r, sc, _ := strings.Cut(term, "*")
			g, ok := gprNames[r]
			if !ok || g.kind != opGPR || g.size != 8 || sign < 0 || o.index >= 0 {
				return operand{}, fmt.Errorf("%w: memory operand %q", ErrUnsupported, s)
			}
			n, err := strconv.Atoi(sc)
			if err != nil || (n != 1 && n != 2 && n != 4 && n != 8) {
				return operand{}, fmt.Errorf("%w: memory operand %q", ErrUnsupported, s)
			}
			o.index, o.scale = g.reg, n
		default:
			g, ok := gprNames[term]
			if !ok || g.kind != opGPR || g.size != 8 || sign < 0 || o.base >= 0 {
				return operand{}, fmt.Errorf("%w: memory operand %q", ErrUnsupported, s)
			}
			o.base = g.reg
		}
	}
	if o.rip {
		// objdump prints the target in the comment: "# 672640 <c0F>".
		t := strings.Fields(comment)
		if len(t) == 0 || o.base >= 0 || o.index >= 0 {
			return operand{}, fmt.Errorf("%w: RIP-relative operand %q without its target", ErrUnsupported, s)
		}
		a, err := strconv.ParseUint(strings.TrimPrefix(t[0], "0x"), 16, 64)
		if err != nil {
			return operand{}, fmt.Errorf("%w: RIP-relative operand %q: target %q", ErrUnsupported, s, t[0])
		}
		o.abs = a
	}
	return o, nil
}

func isBranch(op string) bool {
	return op == "jmp" || (len(op) >= 2 && op[0] == 'j')
}

package design

import "fmt"

// Program is a core's program: integer registers and a body of
// statements. It is structured (loops and conditionals over expressions
// of the registers and of words the core loads from its buffers), so
// that the emulator interprets it and the MLIR printer writes it as
// scf.for / scf.if / aie.use_lock / func.call without any other lowering.
type Program struct {
	Regs []string // register names; statements refer to them by index
	Body []Stmt
}

// Stmt is a statement of a core program.
type Stmt interface{ stmt() }

// Loop runs Body Count times with register Var (-1: none) counting from 0.
// A nil Count loops for ever (the core's outer loop over dispatches).
type Loop struct {
	Var   int
	Count Expr
	Body  []Stmt
}

// If runs Then when Cond is non-zero.
type If struct {
	Cond Expr
	Then []Stmt
}

// Acquire takes the next buffer of an object stream: it waits on the
// object's Full lock (input) or Free lock (output) and decrements it.
type Acquire struct{ Obj *Object }

// Release hands the buffer taken longest ago back: it increments the
// other lock of the object and moves the core's turn to the next buffer.
type Release struct{ Obj *Object }

// Set assigns an expression to a register.
type Set struct {
	Reg int
	X   Expr
}

// Call calls a kernel function; Args match Fn.Params.
type Call struct {
	Fn   *Func
	Args []Arg
}

// Expect is a check the emulator makes and the hardware cannot: it fails
// the dispatch, naming the core and Msg, unless X equals Want. It is not
// part of the compiled program (the MLIR printer writes it as a comment).
type Expect struct {
	X    Expr
	Want int
	Msg  string
}

func (*Loop) stmt()    {}
func (*If) stmt()      {}
func (*Acquire) stmt() {}
func (*Release) stmt() {}
func (*Set) stmt()     {}
func (*Call) stmt()    {}
func (*Expect) stmt()  {}

// Expr is an integer expression (32 bits, as the core computes).
type Expr interface{ expr() }

// Const is a constant.
type Const int

// Reg reads a register.
type Reg int

// Load reads 32-bit word Word of the buffer the core holds now (its
// current turn) of Obj.
type Load struct {
	Obj  *Object
	Word int
}

// Bin is a binary operation.
type Bin struct {
	Op   BinOp
	A, B Expr
}

// BinOp is an operator of Bin.
type BinOp uint8

// The operators: arithmetic wraps at 32 bits, comparisons give 0 or 1
// (unsigned: the values are counts).
const (
	Add BinOp = iota
	Sub
	Lt // A < B
	Eq // A == B
)

var binNames = [...]string{Add: "+", Sub: "-", Lt: "<", Eq: "=="}

func (o BinOp) String() string {
	if int(o) < len(binNames) {
		return binNames[o]
	}
	return fmt.Sprintf("BinOp(%d)", uint8(o))
}

func (Const) expr() {}
func (Reg) expr()   {}
func (*Load) expr() {}
func (*Bin) expr()  {}

// Arg is an argument of a Call: the current buffer of an object stream, a
// fixed buffer, or an integer.
type Arg struct {
	Obj *Object // the buffer of Obj the core holds now
	Buf *Buffer // a buffer of the core's own (no lock)
	X   Expr    // an i32
}

// ObjArg, BufArg and IntArg make Args.
func ObjArg(o *Object) Arg       { return Arg{Obj: o} }
func BufArg(b *Buffer) Arg       { return Arg{Buf: b} }
func IntArg(x Expr) Arg          { return Arg{X: x} }
func lt(a, b Expr) Expr          { return &Bin{Op: Lt, A: a, B: b} }
func eq(a, b Expr) Expr          { return &Bin{Op: Eq, A: a, B: b} }
func sub(a, b Expr) Expr         { return &Bin{Op: Sub, A: a, B: b} }
func load(o *Object, w int) Expr { return &Load{Obj: o, Word: w} }

// Walk calls f on every statement of body, depth first.
func Walk(body []Stmt, f func(Stmt)) {
	for _, s := range body {
		f(s)
		switch s := s.(type) {
		case *Loop:
			Walk(s.Body, f)
		case *If:
			Walk(s.Then, f)
		}
	}
}

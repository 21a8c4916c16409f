package txn

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Disasm writes s as text: the header, then one op per line with its
// decoded fields. A shim BD written by a blockwrite is shown field by field,
// and a task-queue write as its BD, repeat count and token.
func Disasm(w io.Writer, s *Stream) error {
	h := s.Header
	ver := "0.1"
	if h.Version == V10 {
		ver = "1.0"
	}
	if _, err := fmt.Fprintf(w, "header: version %s device %v rows %d cols %d memtile_rows %d ops %d size %d\n",
		ver, h.DevGen, h.NumRows, h.NumCols, h.NumMemTileRows, h.NumOps, h.Size); err != nil {
		return err
	}
	for i := range s.Ops {
		op := &s.Ops[i]
		if _, err := fmt.Fprintf(w, "%4d @%-6d %s\n", i, s.Offs[i], op.text()); err != nil {
			return err
		}
	}
	return nil
}

func (op *Op) text() string {
	col, row, off := SplitAddr(op.Addr)
	tile := fmt.Sprintf("col %d row %d reg %#07x (addr %#08x)", col, row, off, op.Addr)
	switch op.Code {
	case OpWrite:
		s := fmt.Sprintf("write32 %s value %#x", tile, op.Value)
		if c, d, ch, ok := QueueAt(op.Addr); ok {
			if p, err := DecodePush(op.Value); err == nil {
				s += fmt.Sprintf(" [col %d %s ch %d queue: bd %d repeat %d token %v]", c, dirName(d), ch, p.BD, p.Repeat, p.Token)
			}
		}
		return s
	case OpBlockWrite:
		s := fmt.Sprintf("blockwrite %s words %d", tile, len(op.Words))
		if op.Col != 0 || op.Row != 0 {
			s += fmt.Sprintf(" (word 1: col %d row %d)", op.Col, op.Row)
		}
		if bd, ok := op.ShimBD(); ok {
			_, id, _, _ := ShimBDAt(op.Addr)
			return s + fmt.Sprintf(" [shim bd %d: %s]", id, bd.String())
		}
		return s + " [" + hexWords(op.Words, " ") + "]"
	case OpMaskWrite, OpMaskPoll, OpMaskPollBusy:
		return fmt.Sprintf("%s %s value %#x mask %#x", op.Code, tile, op.Value, op.Mask)
	case OpNoop:
		return "noop"
	case OpPreempt:
		return fmt.Sprintf("preempt level %d", op.Level)
	case OpLoadPDI:
		return fmt.Sprintf("load_pdi id %d size %d address %#x", op.PDIID, op.PDISize, op.PDIAddr)
	case OpSync:
		return fmt.Sprintf("sync col %d row %d direction %d (%s) channel %d col_num %d row_num %d",
			op.Col, op.Row, op.Dir, dirName(op.Dir), op.Channel, op.ColNum, op.RowNum)
	case OpDDRPatch:
		s := fmt.Sprintf("ddr_patch %s arg_idx %d arg_plus %#x", tile, op.ArgIdx, op.ArgPlus)
		if _, id, word, ok := ShimBDAt(op.Addr); ok {
			s += fmt.Sprintf(" [shim bd %d word %d]", id, word)
		}
		return s
	}
	return op.Code.String()
}

func dirName(d uint8) string {
	if d == MM2S {
		return "mm2s"
	}
	return "s2mm"
}

func hexWords(w []uint32, sep string) string {
	s := make([]string, len(w))
	for i, v := range w {
		s[i] = fmt.Sprintf("%#08x", v)
	}
	return strings.Join(s, sep)
}

// ShimBD decodes a blockwrite of a whole shim BD (8 words at a BD's base).
func (op *Op) ShimBD() (ShimBD, bool) {
	if op.Code != OpBlockWrite || len(op.Words) != ShimBDWords {
		return ShimBD{}, false
	}
	if _, _, word, ok := ShimBDAt(op.Addr); !ok || word != 0 {
		return ShimBD{}, false
	}
	bd, err := DecodeShimBD([ShimBDWords]uint32(op.Words))
	return bd, err == nil
}

// jsonOp is an op as `xdnapack txn decode --json` prints it.
type jsonOp struct {
	Op      string            `json:"op"`
	Offset  int               `json:"offset"`
	Col     int               `json:"col"`
	Row     int               `json:"row"`
	Addr    string            `json:"addr,omitempty"`
	Value   string            `json:"value,omitempty"`
	Mask    string            `json:"mask,omitempty"`
	Words   []string          `json:"words,omitempty"`
	ArgIdx  *uint64           `json:"arg_idx,omitempty"`
	ArgPlus *uint64           `json:"arg_plus,omitempty"`
	Level   *uint8            `json:"level,omitempty"`
	PDI     map[string]uint64 `json:"pdi,omitempty"`
	Sync    map[string]uint8  `json:"sync,omitempty"`
	BD      map[string]string `json:"shim_bd,omitempty"`
	Push    map[string]any    `json:"queue_push,omitempty"`
}

type jsonStream struct {
	Device string         `json:"device"`
	Header map[string]any `json:"header"`
	Ops    []jsonOp       `json:"ops"`
}

// JSON writes s as `{"device": "npu1"|"npu2", "header": {...}, "ops": [...]}`.
func JSON(w io.Writer, s *Stream) error {
	h := s.Header
	ver := "0.1"
	if h.Version == V10 {
		ver = "1.0"
	}
	out := jsonStream{
		Device: h.DevGen.String(),
		Header: map[string]any{"version": ver, "dev_gen": h.DevGen, "num_rows": h.NumRows, "num_cols": h.NumCols,
			"num_memtile_rows": h.NumMemTileRows, "num_ops": h.NumOps, "size": h.Size},
		Ops: make([]jsonOp, 0, len(s.Ops)),
	}
	hx := func(v uint32) string { return fmt.Sprintf("%#08x", v) }
	for i := range s.Ops {
		op := &s.Ops[i]
		col, row, _ := SplitAddr(op.Addr)
		j := jsonOp{Op: op.Code.String(), Offset: s.Offs[i], Col: col, Row: row}
		switch op.Code {
		case OpWrite, OpMaskWrite, OpMaskPoll, OpMaskPollBusy, OpBlockWrite, OpDDRPatch:
			j.Addr = hx(op.Addr)
		}
		switch op.Code {
		case OpWrite:
			j.Value = hx(op.Value)
			if c, d, ch, ok := QueueAt(op.Addr); ok {
				if p, err := DecodePush(op.Value); err == nil {
					j.Push = map[string]any{"col": c, "direction": dirName(d), "channel": ch, "bd": p.BD, "repeat": p.Repeat, "token": p.Token}
				}
			}
		case OpMaskWrite, OpMaskPoll, OpMaskPollBusy:
			j.Value, j.Mask = hx(op.Value), hx(op.Mask)
		case OpBlockWrite:
			for _, v := range op.Words {
				j.Words = append(j.Words, hx(v))
			}
			if bd, ok := op.ShimBD(); ok {
				j.BD = map[string]string{}
				for _, kv := range bd.Fields() {
					j.BD[kv[0]] = kv[1]
				}
			}
		case OpDDRPatch:
			a, p := op.ArgIdx, op.ArgPlus
			j.ArgIdx, j.ArgPlus = &a, &p
		case OpPreempt:
			l := op.Level
			j.Level = &l
		case OpLoadPDI:
			j.PDI = map[string]uint64{"id": uint64(op.PDIID), "size": uint64(op.PDISize), "address": op.PDIAddr}
		case OpSync:
			j.Col, j.Row = int(op.Col), int(op.Row)
			j.Sync = map[string]uint8{"direction": op.Dir, "channel": op.Channel, "col_num": op.ColNum, "row_num": op.RowNum}
		}
		out.Ops = append(out.Ops, j)
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(out)
}

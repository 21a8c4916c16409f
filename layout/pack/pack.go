// Package pack turns a GGUF file into an .xdna file: validate (layout), plan
// (kernelsel), repack (planar), write (layout). It holds no format knowledge
// of its own; it is the pipeline between those packages.
package pack

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/xdna-go/xdna/internal/blake3"

	"github.com/xdna-go/xdna/arch"
	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/planar"
	"github.com/xdna-go/xdna/runtime/tokenizer"
	"github.com/xdna-go/xdna/xclbin"
)

// Version names the packer in every manifest it writes.
const Version = "xdnapack 0.1.0"

// Options configures one pack.
type Options struct {
	Input   string             // GGUF path
	Output  string             // .xdna path
	Target  string             // xdna1 or xdna2
	Catalog *kernelsel.Catalog // slot catalog
	CPUMaxN int                // matrices with N <= CPUMaxN run on the CPU
	NoFuse  bool               // keep Q,K,V and gate,up as separate matrices
	// Progress, if set, is called after each tensor with bytes done and total.
	Progress func(done, total int64, name string)
}

// Entry is one planned tensor: the manifest entry and where its bytes come from.
type Entry struct {
	layout.TensorEntry
	parts []*layout.Tensor // source tensors, in row order
	geom  planar.Geometry
}

// Plan is the result of planning: entries in canonical order.
type Plan struct {
	Params  layout.Params
	Entries []*Entry
	Slots   []*kernelsel.Slot // slots the plan uses, by name
	Notes   []string          // what the plan could not do (missing xclbins, ...)
}

// MakePlan decides, for every tensor of g, its packed format, K-tile, device
// and slot, and the fusion groups. It reads no tensor data.
func MakePlan(g *layout.GGUF, opt *Options) (*Plan, error) {
	params, err := layout.ParamsFromGGUF(g)
	if err != nil {
		return nil, err
	}
	tgt, err := opt.Catalog.Target(opt.Target)
	if err != nil {
		return nil, err
	}
	p := &Plan{Params: params}
	fused := map[string]bool{}
	// The fusions of the model's family (arch.Family.Fusions): matrices
	// that read the same input, packed as one. An unknown family fuses
	// nothing here; CheckModel refuses it by name.
	var fusions []arch.Fusion
	if fam, err := arch.Lookup(params.Arch); err == nil && !opt.NoFuse {
		fusions = fam.Fusions()
	}
	if len(fusions) > 0 {
		for li := 0; li < 1<<16; li++ {
			prefix := fmt.Sprintf("blk.%d.", li)
			any := false
			for _, fu := range fusions {
				var parts []*layout.Tensor
				for _, pn := range fu.Parts {
					if t, ok := g.Tensor(prefix + pn); ok {
						parts = append(parts, t)
						any = true
					}
				}
				if len(parts) != len(fu.Parts) || !fusable(parts) {
					continue
				}
				n := 0
				e := &Entry{parts: parts}
				for _, t := range parts {
					n += t.Dims[1]
					e.Parts = append(e.Parts, layout.Part{Name: t.Name, Shape: []int{t.Dims[0], t.Dims[1]}})
					fused[t.Name] = true
				}
				e.Name = prefix + fu.Name
				e.Shape = []int{parts[0].Dims[0], n}
				e.Type = parts[0].Type.String()
				p.Entries = append(p.Entries, e)
			}
			if !any {
				if _, ok := g.Tensor(prefix + "attn_norm.weight"); !ok {
					break
				}
			}
		}
	}
	for i := range g.Tensors {
		t := &g.Tensors[i]
		if fused[t.Name] {
			continue
		}
		e := &Entry{parts: []*layout.Tensor{t}}
		e.Name = t.Name
		e.Shape = append([]int(nil), t.Dims...)
		e.Type = t.Type.String()
		p.Entries = append(p.Entries, e)
	}
	_, tied := g.Tensor("output.weight")
	tied = !tied
	for _, e := range p.Entries {
		typ := e.parts[0].Type
		if len(e.Shape) == 1 {
			e.Format = layout.FormatRaw
			e.Device = "cpu"
			e.Reason = "1-D tensor, stored as is"
			e.Size = int64(typ.RowBytes(e.Shape[0]))
			continue
		}
		if len(e.Shape) != 2 {
			return nil, fmt.Errorf("%s: tensor %q: %d-D tensors are not supported", g.Path, e.Name, len(e.Shape))
		}
		f, err := planar.FormatOf(typ)
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w (supported: %s)", g.Path, e.Name, err, supportedList())
		}
		e.Format = f.Name
		n, k := e.Shape[1], e.Shape[0]
		if e.Name == "token_embd.weight" && !tied {
			e.KTile = k
			e.Device = "cpu"
			e.Reason = "embedding lookup, not a matmul"
		} else {
			ch := opt.Catalog.Select(opt.Target, typ, n, k, opt.CPUMaxN)
			e.KTile = ch.KTile
			e.Reason = ch.Reason
			e.Device = "cpu"
			if ch.Slot != nil {
				e.Device = "npu"
				e.Slot = ch.Slot.Name
			}
		}
		e.geom = planar.Geometry{Type: typ, N: n, K: k, Columns: tgt.Columns, KTile: e.KTile}
		if err := e.geom.Check(); err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w", g.Path, e.Name, err)
		}
		e.Size = int64(e.geom.Size())
	}
	sort.Slice(p.Entries, func(i, j int) bool { return layout.TensorLess(p.Entries[i].Name, p.Entries[j].Name) })
	if err := p.oneSlotPerFormat(opt.Catalog, tgt.Columns); err != nil {
		return nil, err
	}
	return p, nil
}

// oneSlotPerFormat moves every NPU matrix of a format onto one slot when one
// of the slots chosen for that format fits them all: each slot is a
// hardware context, and alternating between two per layer costs a context
// switch each time (about 1.3 ms on XDNA1), far more than the per-matrix
// gain of a larger K-tile. It then lists the slots the plan uses.
func (p *Plan) oneSlotPerFormat(cat *kernelsel.Catalog, columns int) error {
	byType := map[string][]*Entry{}
	for _, e := range p.Entries {
		if e.Device == "npu" {
			byType[e.Type] = append(byType[e.Type], e)
		}
	}
	for _, es := range byType {
		count := map[string]int{}
		for _, e := range es {
			count[e.Slot]++
		}
		if len(count) < 2 {
			continue
		}
		var best *kernelsel.Slot
		for name := range count {
			s := cat.Slot(name)
			fits := true
			for _, e := range es {
				n, k := e.Shape[1], e.Shape[0]
				fits = fits && k%s.KTile == 0 && s.MinN <= n && n <= s.MaxN
			}
			if fits && (best == nil || count[name] > count[best.Name] || count[name] == count[best.Name] && name < best.Name) {
				best = s
			}
		}
		if best == nil {
			continue
		}
		for _, e := range es {
			if e.Slot == best.Name {
				continue
			}
			e.Reason = fmt.Sprintf("%s: one slot for all %d %s matrices (no context switch); %s alone would pick %s", best.Name, len(es), e.Type, e.Name, e.Slot)
			e.Slot = best.Name
			e.KTile = best.KTile
			e.geom.KTile = best.KTile
			if err := e.geom.Check(); err != nil {
				return fmt.Errorf("tensor %q: %w", e.Name, err)
			}
			e.Size = int64(e.geom.Size())
		}
	}
	used := map[string]bool{}
	p.Slots = p.Slots[:0]
	for _, e := range p.Entries {
		if e.Device == "npu" && !used[e.Slot] {
			used[e.Slot] = true
			p.Slots = append(p.Slots, cat.Slot(e.Slot))
		}
	}
	sort.Slice(p.Slots, func(i, j int) bool { return p.Slots[i].Name < p.Slots[j].Name })
	return nil
}

func fusable(ts []*layout.Tensor) bool {
	for _, t := range ts {
		if len(t.Dims) != 2 || t.Type != ts[0].Type || t.Dims[0] != ts[0].Dims[0] {
			return false
		}
		if _, err := planar.FormatOf(t.Type); err != nil {
			return false
		}
	}
	return true
}

func supportedList() string {
	var s []string
	for _, t := range planar.Supported() {
		s = append(s, t.String())
	}
	return strings.Join(s, ", ")
}

// Run packs opt.Input into opt.Output and returns the plan it followed.
// On any error no output file is left behind.
func Run(ctx context.Context, opt *Options) (*Plan, error) {
	g, err := layout.OpenGGUF(opt.Input)
	if err != nil {
		return nil, err
	}
	plan, err := MakePlan(g, opt)
	if err != nil {
		return nil, err
	}
	tgt, _ := opt.Catalog.Target(opt.Target)
	if err := CheckModel(g, plan, tgt.Columns); err != nil {
		return nil, err
	}
	src, err := os.Open(opt.Input)
	if err != nil {
		return nil, err
	}
	defer src.Close()

	w, err := layout.Create(opt.Output)
	if err != nil {
		return nil, err
	}
	defer w.Abort()

	m := &layout.Manifest{
		Format:  "xdna",
		Version: layout.ManifestVersion,
		Creator: Version,
		Source:  layout.Source{Name: filepath.Base(opt.Input)},
		Package: layout.Package{Target: opt.Target, Columns: tgt.Columns, CatalogVersion: opt.Catalog.Version, CPUMaxN: opt.CPUMaxN},
		Model:   plan.Params,
	}
	digest := blake3.New()

	// The vocabulary's blob goes after the tensors. It is built beside the
	// tensor stage where a core is spare for it, and after that stage
	// otherwise (vocabAfter), while the disk takes the last of the tensors.
	type vocabBlob struct {
		b   []byte
		err error
	}
	buildVocab := func() vocabBlob {
		v, err := tokenizer.VocabFromGGUF(g)
		var b []byte
		if err == nil {
			b, err = v.MarshalBinary()
		}
		return vocabBlob{b, err}
	}
	// vocab carries the blob built beside the tensor stage; nil when there
	// is no vocabulary, or when it is built after that stage.
	var vocab chan vocabBlob
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	_, hasVocab := g.Strings("tokenizer.ggml.tokens")
	if hasVocab && !vocabAfter() {
		vocab = make(chan vocabBlob, 1)
		go func() {
			vb := buildVocab()
			if vb.err != nil {
				stop() // a vocabulary that cannot be built stops the tensor stage
			}
			vocab <- vb
		}()
	}
	err = writeTensors(tctx, opt, g, src, plan, w, m, digest)
	var vb vocabBlob
	switch {
	case vocab != nil:
		vb = <-vocab
	case hasVocab && err == nil:
		w.SyncSoon()
		vb = buildVocab()
	}
	if vb.err != nil {
		return nil, fmt.Errorf("%s: tokenizer: %w", opt.Input, vb.err)
	}
	if err != nil {
		return nil, err
	}
	if vb.b != nil {
		if m.Tokenizer, err = w.AddBlob(vb.b); err != nil {
			return nil, err
		}
	}
	m.Source.ContentDigest = layout.ContentScheme + ":" + hex.EncodeToString(digest.Sum(nil))

	for _, s := range plan.Slots {
		if s.XCLBIN == "" {
			plan.Notes = append(plan.Notes, fmt.Sprintf("slot %s: no xclbin file in the catalog; not embedded", s.Name))
			continue
		}
		path := opt.Catalog.XCLBINPath(s)
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			plan.Notes = append(plan.Notes, fmt.Sprintf("slot %s: %s not present; not embedded (the runtime falls back to the CPU for it)", s.Name, path))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("slot %s: %w", s.Name, err)
		}
		xf, err := xclbin.NewReader(bytesReaderAt(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("slot %s: %s: %w", s.Name, path, err)
		}
		if err := checkKernel(xf, s.Kernel); err != nil {
			return nil, fmt.Errorf("slot %s: %s: %w", s.Name, path, err)
		}
		ref, err := w.AddBlob(data)
		if err != nil {
			return nil, err
		}
		m.Slots = append(m.Slots, layout.SlotEntry{Name: s.Name, Kernel: s.Kernel, UUID: hex.EncodeToString(xf.UUID[:]), BlobRef: ref})
	}
	if err := w.Commit(m); err != nil {
		return nil, err
	}
	return plan, nil
}

func checkKernel(f *xclbin.File, kernel string) error {
	names, err := f.KernelNames()
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == kernel || strings.HasPrefix(n, kernel+":") {
			if !f.HasAIEPartition() {
				return fmt.Errorf("no AIE_PARTITION section")
			}
			return nil
		}
	}
	return fmt.Errorf("kernel %q not in IP_LAYOUT (have %v)", kernel, names)
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// hashMetadata feeds the metadata to h in key order, so file order does not
// matter: for each key, the line fmt prints for "%q=%T:%v\n" of the key and
// its value. The arrays of strings, floats and integers are formatted here
// as fmt formats them, through a buffer of 64 KiB (TestHashMetadataAsFmt):
// fmt's reflection over a vocabulary of 128 Ki tokens took 100-150 ms and 5
// MB of fresh memory on the development VM, while the pipeline waited for
// its first buffers back from the hasher.
func hashMetadata(h hash.Hash, g *layout.GGUF) {
	kvs := append([]layout.KV(nil), g.KV...)
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
	m := &metaLines{h: h, b: make([]byte, 0, 64<<10)}
	for _, kv := range kvs {
		switch v := kv.Value.(type) {
		case []string:
			metaList(m, kv.Key, v, func(b []byte, s string) []byte { return append(b, s...) })
		case []float32:
			metaList(m, kv.Key, v, func(b []byte, f float32) []byte { return strconv.AppendFloat(b, float64(f), 'g', -1, 32) })
		case []int64:
			metaList(m, kv.Key, v, func(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) })
		default:
			m.b = fmt.Appendf(m.b, "%q=%T:%v\n", kv.Key, kv.Value, kv.Value)
			m.more()
		}
	}
	h.Write(m.b)
}

// metaLines is hashMetadata's buffer for h.
type metaLines struct {
	h hash.Hash
	b []byte
}

// more writes the buffer to h once it is nearly full.
func (m *metaLines) more() {
	if len(m.b) >= 60<<10 {
		m.h.Write(m.b)
		m.b = m.b[:0]
	}
}

// metaList adds the line of the array v under key, "%q=%T:%v\n" as fmt
// prints it, each element formatted by app.
func metaList[T any](m *metaLines, key string, v []T, app func([]byte, T) []byte) {
	m.b = fmt.Appendf(m.b, "%q=%T:[", key, v)
	for i, x := range v {
		if i > 0 {
			m.b = append(m.b, ' ')
		}
		m.b = app(m.b, x)
		m.more()
	}
	m.b = append(m.b, "]\n"...)
	m.more()
}

// vocabAfter says whether Run builds the vocabulary's blob after the tensor
// stage rather than beside it. On two cores the pipeline keeps both busy
// (the hasher one, the reader and packers the other), and building a
// vocabulary of 128 Ki tokens beside it (70-85 ms of a core on the
// development VM) held back its start; after it, the build overlaps the
// disk's write-back of the last tensors (SyncSoon), which takes longer.
// With more cores, one is spare for it during the tensor stage. A
// variable so that the tests can take both ways (the same bytes).
var vocabAfter = func() bool { return runtime.GOMAXPROCS(0) <= 2 }

// hashTensorHead is what the digest holds of a tensor of n bytes before
// its data.
func hashTensorHead(h hash.Hash, t *layout.Tensor, n int64) {
	fmt.Fprintf(h, "%q %s %v %d\n", t.Name, t.Type, t.Dims, n)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
}

// hashPiece hashes piece j of an entry so that the pieces of an entry
// hashed in order hash each of its parts as its head and then its data
// (hashTensor in the tests, the serial reference): each part's head with
// the piece that holds its first byte (the last piece, for an
// empty part at the end), then the piece's bytes of the part.
func hashPiece(h hash.Hash, j *packJob) {
	at := int64(0) // where the part starts
	for _, t := range j.e.parts {
		end := at + t.Size
		if at >= j.lo && (at < j.hi || j.last && at == j.hi) {
			hashTensorHead(h, t, t.Size)
		}
		if lo, hi := max(at, j.lo), min(end, j.hi); lo < hi {
			h.Write(j.src[lo-j.lo : hi-j.lo])
		}
		at = end
	}
}

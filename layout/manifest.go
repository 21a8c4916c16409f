package layout

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/xdna-go/xdna/planar"
)

// ManifestVersion is the version of the manifest schema written here.
const ManifestVersion = 1

// Manifest is the TOML table of contents of an .xdna file.
type Manifest struct {
	Format    string        `toml:"format" json:"format"`   // always "xdna"
	Version   int           `toml:"version" json:"version"` // ManifestVersion
	Creator   string        `toml:"creator" json:"creator"` // program and version that wrote the file
	Source    Source        `toml:"source" json:"source"`
	Package   Package       `toml:"package" json:"package"`
	Model     Params        `toml:"model" json:"model"`
	Tokenizer BlobRef       `toml:"tokenizer" json:"tokenizer"`
	Tensors   []TensorEntry `toml:"tensors" json:"tensors"`
	Slots     []SlotEntry   `toml:"slots" json:"slots"`
}

// Source identifies the GGUF the file was packed from.
type Source struct {
	Name string `toml:"name" json:"name"` // file name, without directories
	// ContentDigest is the digest of the model's content, the scheme's name,
	// a colon and the digest in lowercase hex ("blake3-v1:<64 hex digits>",
	// ContentScheme): a BLAKE3-256 over the bytes ContentSHA256 covered, the
	// metadata in key order, then each tensor's name, type, shape, size and
	// bytes in the order of the pack's plan (fused parts in row order).
	// BLAKE3 on one core hashes twice what SHA-256 with SHA-NI does, and the
	// digest sets the pace of a pack (layout/pack). Files written before it
	// have ContentSHA256.
	ContentDigest string `toml:"content_digest,omitempty" json:"content_digest,omitempty"`
	// ContentSHA256 is the digest of files written before ContentDigest: a
	// SHA-256 over the same bytes. It is read, and shown, but not written any
	// more, and not comparable with ContentDigest.
	ContentSHA256 string `toml:"content_sha256,omitempty" json:"content_sha256,omitempty"`
}

// ContentScheme names the content digest written here (Source.ContentDigest).
const ContentScheme = "blake3-v1"

// validate checks the digests' syntax: at most one of them, ContentDigest
// as a scheme this program knows and 64 hex digits, ContentSHA256 as 64.
// Both end up in terminals and registry annotations.
func (s Source) validate() error {
	if s.ContentDigest != "" && s.ContentSHA256 != "" {
		return fmt.Errorf("manifest: source has both content_digest and content_sha256")
	}
	if s.ContentDigest != "" {
		scheme, sum, _ := strings.Cut(s.ContentDigest, ":")
		if scheme != ContentScheme || !isHex64(sum) {
			return fmt.Errorf("manifest: source.content_digest %q, want %s:<64 lowercase hex digits>", s.ContentDigest, ContentScheme)
		}
	}
	if s.ContentSHA256 != "" && !isHex64(s.ContentSHA256) {
		return fmt.Errorf("manifest: source.content_sha256 %q, want 64 lowercase hex digits", s.ContentSHA256)
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Package records the pack-time decisions that hold for the whole file.
type Package struct {
	Target         string `toml:"target" json:"target"`   // xdna1 or xdna2
	Columns        int    `toml:"columns" json:"columns"` // column groups of every planar blob
	CatalogVersion string `toml:"catalog_version" json:"catalog_version"`
	CPUMaxN        int    `toml:"cpu_max_n" json:"cpu_max_n"`
}

// BlobRef locates one blob in the file.
type BlobRef struct {
	Offset int64  `toml:"offset" json:"offset"`
	Size   int64  `toml:"size" json:"size"`
	CRC32C uint32 `toml:"crc32c" json:"crc32c"`
}

// TensorEntry describes one packed tensor (or one fused group of tensors).
type TensorEntry struct {
	Name   string `toml:"name" json:"name"`
	Shape  []int  `toml:"shape" json:"shape"`   // ggml ne order: [K, N] for a matrix
	Type   string `toml:"type" json:"type"`     // source ggml type, e.g. "Q4_0"
	Format string `toml:"format" json:"format"` // packed format, e.g. "q4_0.p1", or "raw"
	KTile  int    `toml:"k_tile,omitempty" json:"k_tile,omitempty"`
	BlobRef
	Device string `toml:"device" json:"device"`                 // "npu" or "cpu": where the plan runs it
	Slot   string `toml:"slot,omitempty" json:"slot,omitempty"` // kernel slot name when Device is npu
	Reason string `toml:"reason" json:"reason"`                 // why this slot or the CPU
	Parts  []Part `toml:"parts,omitempty" json:"parts,omitempty"`
}

// Part is one source tensor of a fused matrix: its rows follow the previous part's.
type Part struct {
	Name  string `toml:"name" json:"name"`
	Shape []int  `toml:"shape" json:"shape"`
}

// SlotEntry is a kernel slot whose xclbin is embedded in the file.
type SlotEntry struct {
	Name   string `toml:"name" json:"name"`
	Kernel string `toml:"kernel" json:"kernel"`
	UUID   string `toml:"uuid" json:"uuid"`
	BlobRef
}

// FormatRaw is the packed format of tensors stored byte for byte (1-D tensors).
const FormatRaw = "raw"

// ParseManifest decodes data strictly: unknown keys are errors, then Validate.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&m)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("manifest line %d: %s", pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("manifest: unknown key %s", strings.Join(keys, ", "))
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks the manifest's own consistency (not the blobs).
func (m *Manifest) Validate() error {
	if m.Format != "xdna" {
		return fmt.Errorf("manifest: format %q, want \"xdna\"", m.Format)
	}
	if m.Version != ManifestVersion {
		return fmt.Errorf("manifest: version %d, this program reads %d", m.Version, ManifestVersion)
	}
	if err := m.Source.validate(); err != nil {
		return err
	}
	if m.Package.Columns <= 0 || m.Package.Columns > 64 {
		return fmt.Errorf("manifest: package.columns %d", m.Package.Columns)
	}
	seen := map[string]bool{}
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if t.Name == "" || seen[t.Name] {
			return fmt.Errorf("manifest: tensor %d: empty or duplicate name %q", i, t.Name)
		}
		seen[t.Name] = true
		if _, err := t.Geometry(m.Package.Columns); err != nil {
			return fmt.Errorf("manifest: tensor %q: %w", t.Name, err)
		}
		if t.Device != "cpu" && t.Device != "npu" {
			return fmt.Errorf("manifest: tensor %q: device %q", t.Name, t.Device)
		}
		if t.Device == "npu" && t.Slot == "" {
			return fmt.Errorf("manifest: tensor %q: device npu without a slot", t.Name)
		}
		rows := 0
		for _, p := range t.Parts {
			if len(p.Shape) != 2 || p.Shape[0] != t.Shape[0] || p.Shape[1] <= 0 {
				return fmt.Errorf("manifest: tensor %q: part %q shape %v", t.Name, p.Name, p.Shape)
			}
			rows += p.Shape[1]
		}
		if len(t.Parts) > 0 && rows != t.Shape[1] {
			return fmt.Errorf("manifest: tensor %q: parts hold %d rows, shape %v", t.Name, rows, t.Shape)
		}
	}
	return nil
}

// Geometry returns the planar geometry of a packed matrix entry, and checks
// that the entry's size matches it. Raw entries return a zero Geometry.
func (t *TensorEntry) Geometry(columns int) (planar.Geometry, error) {
	typ, err := planar.ParseType(t.Type)
	if err != nil {
		return planar.Geometry{}, err
	}
	if len(t.Shape) == 0 || len(t.Shape) > 4 {
		return planar.Geometry{}, fmt.Errorf("shape %v", t.Shape)
	}
	elems := int64(1)
	for _, d := range t.Shape {
		if d <= 0 || d > MaxDimension {
			return planar.Geometry{}, fmt.Errorf("shape %v", t.Shape)
		}
		elems *= int64(d)
		if elems > 1<<50 {
			return planar.Geometry{}, fmt.Errorf("shape %v overflows", t.Shape)
		}
	}
	if t.Offset < 0 || t.Size < 0 {
		return planar.Geometry{}, fmt.Errorf("offset %d size %d", t.Offset, t.Size)
	}
	if t.Format == FormatRaw {
		bs := int64(typ.BlockSize())
		if int64(t.Shape[0])%bs != 0 || elems/bs*int64(typ.BlockBytes()) != t.Size {
			return planar.Geometry{}, fmt.Errorf("raw %s shape %v does not fill %d bytes", typ, t.Shape, t.Size)
		}
		return planar.Geometry{}, nil
	}
	f, err := planar.FormatByName(t.Format)
	if err != nil {
		return planar.Geometry{}, err
	}
	if f.Source != typ {
		return planar.Geometry{}, fmt.Errorf("format %s does not pack %s", t.Format, typ)
	}
	if len(t.Shape) != 2 {
		return planar.Geometry{}, fmt.Errorf("packed format %s needs a 2-D shape, have %v", t.Format, t.Shape)
	}
	g := planar.Geometry{Type: typ, N: t.Shape[1], K: t.Shape[0], Columns: columns, KTile: t.KTile}
	if err := g.Check(); err != nil {
		return g, err
	}
	if int64(g.Size()) != t.Size {
		return g, fmt.Errorf("size %d, geometry needs %d", t.Size, g.Size())
	}
	return g, nil
}

// Marshal encodes m as TOML with tensors in name order.
func (m *Manifest) Marshal() ([]byte, error) {
	sort.Slice(m.Tensors, func(i, j int) bool { return TensorLess(m.Tensors[i].Name, m.Tensors[j].Name) })
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Tensor returns the entry named name.
func (m *Manifest) Tensor(name string) *TensorEntry {
	for i := range m.Tensors {
		if m.Tensors[i].Name == name {
			return &m.Tensors[i]
		}
	}
	return nil
}

// TensorLess orders tensor names canonically: non-layer tensors first by
// name, then layers in numeric order ("blk.2" before "blk.10"), then by name.
func TensorLess(a, b string) bool {
	la, ra := layerOf(a)
	lb, rb := layerOf(b)
	if la != lb {
		return la < lb
	}
	if la >= 0 {
		return ra < rb
	}
	return a < b
}

func layerOf(name string) (int, string) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1, name
	}
	n := 0
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' && i < 9 {
		n = n*10 + int(rest[i]-'0')
		i++
	}
	if i == 0 {
		return -1, name
	}
	return n, rest[i:]
}

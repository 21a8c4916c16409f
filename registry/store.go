package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/xdna-go/xdna/cache"
	"github.com/xdna-go/xdna/internal/atomicfile"
	"github.com/xdna-go/xdna/layout"
)

// Store is the local content-addressed model store.
type Store struct {
	Dir string // <cache root>/oci
}

// OpenStore returns the store under the cache root (cache.Root), creating
// its folders.
func OpenStore() (*Store, error) {
	root, err := cache.Root()
	if err != nil {
		return nil, err
	}
	s := &Store{Dir: filepath.Join(root, "oci")}
	for _, d := range []string{"blobs/sha256", "refs", "xdna", "tmp"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Model is a pulled model.
type Model struct {
	Ref         string        // as pulled: REGISTRY/REPO:TAG or REGISTRY/REPO@DIGEST
	Digest      digest.Digest // of the manifest
	Layer       ocispec.Descriptor
	Annotations map[string]string // of the manifest
	Path        string            // the unpacked .xdna
}

func (s *Store) blobPath(d digest.Digest) string {
	return filepath.Join(s.Dir, "blobs", "sha256", d.Encoded())
}

func (s *Store) xdnaPath(layer digest.Digest) string {
	return filepath.Join(s.Dir, "xdna", layer.Encoded()+".xdna")
}

func (s *Store) refPath(r Ref) string {
	name := r.Reference
	if isDigest(r) {
		name = "@" + r.Reference
	}
	return filepath.Join(s.Dir, "refs", r.Registry, filepath.FromSlash(r.Repository), name)
}

// PullOptions are the settings of a pull.
type PullOptions struct {
	Options
	// CheckTarget, when set, is called with the package's target (from the
	// manifest's annotations) before the layer is downloaded; an error
	// refuses the pull.
	CheckTarget func(target string) error
	// Log receives one line per step (resumed downloads and the like).
	Log io.Writer
}

// Pull fetches ref into the store (or finds it there already, up to date
// with the registry) and returns the model, unpacked.
func (s *Store) Pull(ctx context.Context, ref string, o PullOptions) (*Model, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	repo, err := repository(r, o.Options)
	if err != nil {
		return nil, err
	}
	desc, err := repo.Resolve(ctx, r.Reference)
	if err != nil {
		what := "tag " + r.Reference
		if isDigest(r) {
			what = "manifest " + r.Reference
		}
		return nil, explain(r, what, err)
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("%s: %w: media type %q, want an OCI image manifest", ref, ErrArtifactType, desc.MediaType)
	}
	if desc.Size <= 0 || desc.Size > maxManifest {
		return nil, fmt.Errorf("%s: manifest of %d bytes: want at most %d", ref, desc.Size, maxManifest)
	}
	if desc.Digest.Algorithm() != digest.SHA256 {
		return nil, fmt.Errorf("%s: manifest digest %s: want sha256", ref, desc.Digest)
	}
	rc, err := repo.Fetch(ctx, desc)
	if err != nil {
		return nil, explain(r, "manifest", err)
	}
	raw, err := content.ReadAll(rc, desc) // checks size and digest
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: manifest: %w: %v", ref, ErrDigest, err)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return nil, fmt.Errorf("%s: manifest: %w", ref, err)
	}
	layer, err := checkManifest(&man)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	if o.CheckTarget != nil {
		if err := o.CheckTarget(man.Annotations[AnnotationTarget]); err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
	}
	if err := s.fetchBlob(ctx, r, layer, o); err != nil {
		return nil, err
	}
	if err := s.unpack(layer); err != nil {
		return nil, err
	}
	if err := writeAtomic(s, s.blobPath(desc.Digest), raw); err != nil {
		return nil, err
	}
	if err := writeAtomic(s, s.refPath(r), []byte(desc.Digest.String()+"\n")); err != nil {
		return nil, err
	}
	return &Model{Ref: r.String(), Digest: desc.Digest, Layer: layer, Annotations: man.Annotations, Path: s.xdnaPath(layer.Digest)}, nil
}

// fetchBlob downloads the layer into blobs/, through tmp/. A partial file
// left in tmp/ by an interrupted pull is resumed when the registry serves
// byte ranges, else the download restarts. The whole blob is checked
// against its digest and size before it is moved into blobs/.
func (s *Store) fetchBlob(ctx context.Context, r Ref, desc ocispec.Descriptor, o PullOptions) error {
	final := s.blobPath(desc.Digest)
	if ok, err := hasBlob(final, desc); err != nil || ok {
		return err
	}
	part := filepath.Join(s.Dir, "tmp", desc.Digest.Encoded()+".part")
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	have, err := io.Copy(h, f) // the part already there
	if err != nil {
		return err
	}
	if have > desc.Size {
		h.Reset()
		have = 0
	}
	repo, err := repository(r, o.Options)
	if err != nil {
		return err
	}
	rc, err := repo.Fetch(ctx, desc)
	if err != nil {
		return explain(r, "layer "+desc.Digest.String(), err)
	}
	defer rc.Close()
	if have > 0 {
		if sk, ok := rc.(io.Seeker); ok {
			if _, err := sk.Seek(have, io.SeekStart); err == nil {
				logf(o.Log, "resuming %s at %d of %d bytes", short(desc.Digest), have, desc.Size)
			} else {
				have = 0
			}
		} else {
			have = 0
		}
		if have == 0 {
			logf(o.Log, "restarting %s: the registry serves no byte ranges", short(desc.Digest))
			h.Reset()
		}
	}
	if err := f.Truncate(have); err != nil {
		return err
	}
	if _, err := f.Seek(have, io.SeekStart); err != nil {
		return err
	}
	var w io.Writer = io.MultiWriter(f, h)
	if o.Progress != nil {
		p := newProgress(o.Progress, desc.Size, have)
		defer p.done()
		w = io.MultiWriter(w, p)
	}
	n, err := io.Copy(w, io.LimitReader(rc, desc.Size-have+1))
	if err != nil {
		return fmt.Errorf("%s: layer %s: %w (%d of %d bytes kept for the next pull)", r, short(desc.Digest), err, have+n, desc.Size)
	}
	got := digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil)))
	if have+n != desc.Size || got != desc.Digest {
		f.Close()
		os.Remove(part)
		return fmt.Errorf("%s: layer: %w: got %d bytes of digest %s, the manifest says %d bytes of %s (download discarded)", r, ErrDigest, have+n, got, desc.Size, desc.Digest)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	f.Close()
	return os.Rename(part, final)
}

// hasBlob reports whether path holds the blob desc, checking its digest.
// A blob that does not match is removed.
func hasBlob(path string, desc ocispec.Descriptor) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	defer f.Close()
	vr := content.NewVerifyReader(f, desc)
	if _, err := io.Copy(io.Discard, vr); err == nil {
		if err := vr.Verify(); err == nil {
			return true, nil
		}
	}
	f.Close()
	return false, os.Remove(path)
}

// unpack expands the layer blob (checked against its digest first) into
// xdna/, through tmp/, and verifies the package before the rename.
func (s *Store) unpack(layer ocispec.Descriptor) error {
	dst := s.xdnaPath(layer.Digest)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	in, err := os.Open(s.blobPath(layer.Digest))
	if err != nil {
		return err
	}
	defer in.Close()
	vr := content.NewVerifyReader(in, layer)
	dec, err := zstd.NewReader(vr, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	tmp, err := os.CreateTemp(filepath.Join(s.Dir, "tmp"), layer.Digest.Encoded()+".*.xdna")
	if err != nil {
		return err
	}
	fail := func(err error) error { tmp.Close(); os.Remove(tmp.Name()); return err }
	// Whole 2 MiB chunks, so that the package is cached in folios a mapping
	// can map on huge pages (layout.ChunkWriter).
	w, flush := layout.ChunkWriter(tmp)
	if _, err := io.Copy(w, dec); err != nil {
		return fail(fmt.Errorf("unpack layer %s: %w", short(layer.Digest), err))
	}
	if err := flush(); err != nil {
		return fail(fmt.Errorf("unpack layer %s: %w", short(layer.Digest), err))
	}
	if err := vr.Verify(); err != nil {
		return fail(fmt.Errorf("unpack layer %s: %w: %v", short(layer.Digest), ErrDigest, err))
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	xf, err := layout.Open(tmp.Name())
	if err != nil {
		return fail(fmt.Errorf("layer %s: %w", short(layer.Digest), err))
	}
	errs := xf.Verify()
	xf.Close()
	if len(errs) > 0 {
		return fail(fmt.Errorf("layer %s: %w", short(layer.Digest), errs[0]))
	}
	return os.Rename(tmp.Name(), dst)
}

// writeAtomic writes data to path through a temporary file in tmp/, with
// the permissions of the layers the store writes there (0600).
func writeAtomic(s *Store, path string, data []byte) error {
	return atomicfile.WriteVia(filepath.Join(s.Dir, "tmp"), path, data, 0o600)
}

// Resolve returns the model ref names in the store, without contacting
// the registry; ErrNotInStore if it was never pulled.
func (s *Store) Resolve(ref string) (*Model, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return s.load(r)
}

func (s *Store) load(r Ref) (*Model, error) {
	b, err := os.ReadFile(s.refPath(r))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", r, ErrNotInStore)
	} else if err != nil {
		return nil, err
	}
	d, err := digest.Parse(strings.TrimSpace(string(b)))
	if err != nil || d.Algorithm() != digest.SHA256 {
		return nil, fmt.Errorf("%s: store ref %s: bad digest %q", r, s.refPath(r), b)
	}
	raw, err := os.ReadFile(s.blobPath(d))
	if err != nil {
		return nil, fmt.Errorf("%s: manifest %s: %w", r, short(d), err)
	}
	if digest.FromBytes(raw) != d {
		return nil, fmt.Errorf("%s: manifest %s in the store: %w", r, short(d), ErrDigest)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return nil, fmt.Errorf("%s: manifest: %w", r, err)
	}
	layer, err := checkManifest(&man)
	if err != nil {
		return nil, err
	}
	m := &Model{Ref: r.String(), Digest: d, Layer: layer, Annotations: man.Annotations, Path: s.xdnaPath(layer.Digest)}
	if _, err := os.Stat(m.Path); err != nil {
		return nil, fmt.Errorf("%s: unpacked package: %w", r, err)
	}
	return m, nil
}

// List returns every model in the store, sorted by reference.
func (s *Store) List() ([]*Model, []error) {
	var out []*Model
	var errs []error
	refs := filepath.Join(s.Dir, "refs")
	filepath.WalkDir(refs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(refs, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) < 3 {
			return nil
		}
		sep := ":"
		name := parts[len(parts)-1]
		if strings.HasPrefix(name, "@") {
			sep, name = "@", name[1:]
		}
		ref := parts[0] + "/" + strings.Join(parts[1:len(parts)-1], "/") + sep + name
		r, err := ParseRef(ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("store ref %s: %w", path, err))
			return nil
		}
		m, err := s.load(r)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		out = append(out, m)
		return nil
	})
	return out, errs
}

// Remove drops ref from the store, then every blob and unpacked package no
// other ref uses.
func (s *Store) Remove(ref string) error {
	r, err := ParseRef(ref)
	if err != nil {
		return err
	}
	p := s.refPath(r)
	if err := os.Remove(p); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", r, ErrNotInStore)
	} else if err != nil {
		return err
	}
	// Remove emptied repository folders up to refs/.
	for d := filepath.Dir(p); d != filepath.Join(s.Dir, "refs"); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return s.collect()
}

// collect removes the blobs and unpacked packages no ref uses.
func (s *Store) collect() error {
	models, errs := s.List()
	if len(errs) > 0 {
		return fmt.Errorf("store not collected: %w", errs[0])
	}
	keep := map[string]bool{}
	for _, m := range models {
		keep[m.Digest.Encoded()] = true
		keep[m.Layer.Digest.Encoded()] = true
	}
	var first error
	for _, dir := range []string{"blobs/sha256", "xdna"} {
		ents, err := os.ReadDir(filepath.Join(s.Dir, dir))
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !keep[strings.TrimSuffix(e.Name(), ".xdna")] {
				if err := os.Remove(filepath.Join(s.Dir, dir, e.Name())); err != nil && first == nil {
					first = err
				}
			}
		}
	}
	return first
}

func short(d digest.Digest) string {
	e := d.Encoded()
	if len(e) > 12 {
		e = e[:12]
	}
	return string(d.Algorithm()) + ":" + e
}

func logf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", a...)
	}
}

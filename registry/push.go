package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/xdna-go/xdna/layout"
)

// Push uploads the package at path (an .xdna, or its zstd distribution
// form) to ref, which must name a tag, and returns the manifest's
// descriptor. The package is verified first; the layer is the zstd form
// (compressed at the default level if path is not compressed yet).
func Push(ctx context.Context, path, ref string, o Options) (ocispec.Descriptor, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if isDigest(r) {
		return ocispec.Descriptor{}, fmt.Errorf("push %s: name a tag, not a digest (the digest is the registry's to give)", ref)
	}
	xf, err := layout.Open(path)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	errs := xf.Verify()
	ann := Annotations(xf.Manifest)
	xf.Close()
	if len(errs) > 0 {
		return ocispec.Descriptor{}, errs[0]
	}
	zpath := path
	var head [4]byte
	f, err := os.Open(path)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	io.ReadFull(f, head[:])
	f.Close()
	if !layout.IsZstd(head[:]) {
		dir, err := os.MkdirTemp("", "xdna-push")
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		defer os.RemoveAll(dir)
		zpath = filepath.Join(dir, filepath.Base(path)+".zst")
		if err := layout.Compress(ctx, path, zpath, zstd.SpeedDefault); err != nil {
			return ocispec.Descriptor{}, err
		}
	}
	layer, err := describe(zpath)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layer.Annotations = map[string]string{ocispec.AnnotationTitle: filepath.Base(path)}
	repo, err := repository(r, o)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	exists, err := repo.Exists(ctx, layer)
	if err != nil {
		return ocispec.Descriptor{}, explain(r, "layer", err)
	}
	if !exists {
		f, err := os.Open(zpath)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		defer f.Close()
		var rd io.Reader = f
		if o.Progress != nil {
			p := newProgress(o.Progress, layer.Size, 0)
			defer p.done()
			rd = io.TeeReader(f, p)
		}
		if err := repo.Push(ctx, layer, rd); err != nil {
			return ocispec.Descriptor{}, explain(r, "layer upload", err)
		}
	}
	man, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers: []ocispec.Descriptor{layer}, ManifestAnnotations: ann,
	})
	if err != nil {
		return ocispec.Descriptor{}, explain(r, "manifest upload", err)
	}
	if err := repo.Tag(ctx, man, r.Reference); err != nil {
		return ocispec.Descriptor{}, explain(r, "tag "+r.Reference, err)
	}
	return man, nil
}

// describe returns the layer descriptor of the file at path.
func describe(path string) (ocispec.Descriptor, error) {
	f, err := os.Open(path)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return ocispec.Descriptor{
		MediaType: LayerMediaType,
		Digest:    digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil))),
		Size:      n,
	}, nil
}

// Package registry pushes .xdna packages to OCI registries and pulls them
// into a content-addressed store under the user's cache, through
// oras.land/oras-go/v2.
//
// A model is an OCI artifact (image manifest v1.1) of ArtifactType whose one
// layer is the zstd distribution form of the package (LayerMediaType), with
// the package's facts as annotations. The store, under cache.Root()/oci (shared with the GGUF pack cache):
//
//	blobs/sha256/<hex>              manifests and layers, named by their digest
//	refs/<registry>/<repo>/<tag>    the manifest digest a tag was pulled at
//	refs/<registry>/<repo>/@sha256:<hex>   the same, for a pull by digest
//	xdna/<layer hex>.xdna           a layer unpacked to the mmap-able form
//	tmp/                            partial downloads and unpacks
//
// Every blob is written under tmp/, checked against its digest and size,
// then renamed into blobs/; the ref is written last. An interrupted pull
// leaves at most a partial file in tmp/, which the next pull resumes (with
// an HTTP range request) or restarts; nothing outside tmp/ is ever partial.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/xdna-go/xdna/layout"
)

// Media types and annotation keys of an xdna model artifact.
const (
	ArtifactType   = "application/vnd.xdna.model.v1"
	LayerMediaType = "application/vnd.xdna.package.v1+zstd"

	AnnotationArch         = "org.xdna.model.architecture"
	AnnotationName         = "org.xdna.model.name"
	AnnotationParameters   = "org.xdna.model.parameters"
	AnnotationQuantisation = "org.xdna.model.quantisation"
	AnnotationTarget       = "org.xdna.package.target"
	AnnotationSource       = "org.xdna.source.name"
	// AnnotationSourceDigest is the source's content digest
	// (layout.Source.ContentDigest: "blake3-v1:" and 64 hex digits).
	AnnotationSourceDigest = "org.xdna.source.content-digest"
	// AnnotationSourceSHA256 is the content digest of a package written
	// before ContentDigest (layout.Source.ContentSHA256: 64 hex digits, not
	// comparable with AnnotationSourceDigest).
	AnnotationSourceSHA256 = "org.xdna.source.content-sha256"
)

// Errors a pull or push can end with; match them with errors.Is.
var (
	ErrUnreachable  = errors.New("registry unreachable")
	ErrNotFound     = errors.New("not found")
	ErrArtifactType = errors.New("not an xdna model")
	ErrDigest       = errors.New("digest mismatch")
	ErrNotInStore   = errors.New("not in the local store")
)

// Limits on what a registry may send.
const (
	maxManifest = 4 << 20
	maxLayer    = 64 << 30
)

// Ref is a parsed model reference: REGISTRY/REPO:TAG or REGISTRY/REPO@DIGEST.
type Ref = registry.Reference

// ParseRef parses s, which must name a registry, a repository and a tag or
// digest.
func ParseRef(s string) (Ref, error) {
	r, err := registry.ParseReference(s)
	if err != nil {
		return Ref{}, fmt.Errorf("reference %q: %w (want REGISTRY/REPO:TAG or REGISTRY/REPO@sha256:...)", s, err)
	}
	if r.Reference == "" {
		return Ref{}, fmt.Errorf("reference %q: no tag or digest (want REGISTRY/REPO:TAG or REGISTRY/REPO@sha256:...)", s)
	}
	if strings.HasPrefix(r.Registry, ".") || strings.ContainsAny(r.Registry, `/\`) {
		return Ref{}, fmt.Errorf("reference %q: bad registry name %q", s, r.Registry)
	}
	return r, nil
}

// LooksLikeRef reports whether s has the shape of a model reference rather
// than of a file path: a registry host (with a dot or a port, or
// "localhost"), a repository, and a tag or digest.
func LooksLikeRef(s string) bool {
	host, _, ok := strings.Cut(s, "/")
	if !ok || !(strings.ContainsAny(host, ".:") || host == "localhost") || strings.HasPrefix(s, ".") {
		return false
	}
	_, err := ParseRef(s)
	return err == nil
}

// isDigest reports whether r names a digest rather than a tag.
func isDigest(r Ref) bool {
	_, err := r.Digest()
	return err == nil
}

// IsLoopback reports whether host (with or without a port) is localhost or
// a loopback address: registries there are reached over plain HTTP without
// a flag, as docker does.
func IsLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Options are the connection settings of a push or pull.
type Options struct {
	PlainHTTP bool // plain HTTP to any registry (loopback ones always)
	// Progress, when set, is called with the bytes of the layer moved so
	// far and its size, every 100 ms or so and at the end.
	Progress func(done, total int64)
}

// repository connects to r's repository with the docker config's
// credentials (as docker and oras read them: $DOCKER_CONFIG/config.json,
// else ~/.docker/config.json, credential helpers included).
func repository(r Ref, o Options) (*remote.Repository, error) {
	repo, err := remote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return nil, err
	}
	repo.PlainHTTP = o.PlainHTTP || IsLoopback(r.Registry)
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker credentials: %w", err)
	}
	repo.Client = &auth.Client{
		Client:     retry.DefaultClient,
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(store),
		Header:     http.Header{"User-Agent": {"xdna"}},
	}
	return repo, nil
}

// explain turns the errors of a registry call into ones that say what
// happened, in the package's terms.
func explain(r Ref, what string, err error) error {
	var ne *net.OpError
	var ue interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, errdef.ErrNotFound):
		return fmt.Errorf("%w: %s in %s/%s", ErrNotFound, what, r.Registry, r.Repository)
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return fmt.Errorf("%s/%s: access denied: the registry wants a login and the docker config has none for %s (docker login or oras login %s)", r.Registry, r.Repository, r.Registry, r.Registry)
	case errors.As(err, &ne), errors.As(err, &ue):
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, r.Registry, err)
	}
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		switch er.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %s in %s/%s", ErrNotFound, what, r.Registry, r.Repository)
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%s/%s: access denied (log in with docker login or oras login %s): %w", r.Registry, r.Repository, r.Registry, err)
		}
	}
	if strings.Contains(err.Error(), "http: server gave HTTP response to HTTPS client") {
		return fmt.Errorf("%s speaks plain HTTP: pass --plain-http if you trust the network to it: %w", r.Registry, err)
	}
	return fmt.Errorf("%s %s: %w", r.Registry, what, err)
}

// Annotations returns the artifact annotations of an .xdna package.
func Annotations(m *layout.Manifest) map[string]string {
	var params int64
	byType := map[string]int64{}
	for _, t := range m.Tensors {
		n := int64(1)
		for _, d := range t.Shape {
			n *= int64(d)
		}
		params += n
		if len(t.Shape) == 2 {
			byType[t.Type] += n
		}
	}
	quant := ""
	for typ, n := range byType {
		if n > byType[quant] || (n == byType[quant] && typ < quant) {
			quant = typ
		}
	}
	a := map[string]string{
		AnnotationArch:         m.Model.Arch,
		AnnotationParameters:   strconv.FormatInt(params, 10),
		AnnotationQuantisation: quant,
		AnnotationTarget:       m.Package.Target,
	}
	if m.Source.ContentDigest != "" {
		a[AnnotationSourceDigest] = m.Source.ContentDigest
	}
	if m.Source.ContentSHA256 != "" {
		a[AnnotationSourceSHA256] = m.Source.ContentSHA256
	}
	if m.Model.Name != "" {
		a[AnnotationName] = m.Model.Name
	}
	if m.Source.Name != "" {
		a[AnnotationSource] = m.Source.Name
	}
	return a
}

// checkManifest decodes a fetched manifest and checks it is an xdna model:
// its artifact type, and exactly one layer of LayerMediaType within limits.
func checkManifest(m *ocispec.Manifest) (ocispec.Descriptor, error) {
	typ := m.ArtifactType
	if typ == "" {
		typ = m.Config.MediaType
	}
	if typ != ArtifactType {
		return ocispec.Descriptor{}, fmt.Errorf("%w: artifact type %q, want %q", ErrArtifactType, typ, ArtifactType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaType {
		types := make([]string, len(m.Layers))
		for i, l := range m.Layers {
			types[i] = l.MediaType
		}
		return ocispec.Descriptor{}, fmt.Errorf("%w: layers %v, want one %s", ErrArtifactType, types, LayerMediaType)
	}
	l := m.Layers[0]
	if err := l.Digest.Validate(); err != nil || l.Digest.Algorithm() != "sha256" {
		return ocispec.Descriptor{}, fmt.Errorf("%w: layer digest %q: want sha256", ErrArtifactType, l.Digest)
	}
	if l.Size <= 0 || l.Size > maxLayer {
		return ocispec.Descriptor{}, fmt.Errorf("layer of %d bytes: want 1 byte to 64 GiB", l.Size)
	}
	return l, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

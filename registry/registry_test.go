package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/xdna-go/xdna/kernelsel"
	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/pack"
	"github.com/xdna-go/xdna/registry/registrytest"
)

const shared = "../../shared/fixtures"

var (
	packOnce sync.Once
	packDir  string
	packErr  error
)

// packed returns stories260K-q4_0 packed for xdna2, made once per test binary.
func packed(t *testing.T) string {
	t.Helper()
	packOnce.Do(func() {
		packDir, packErr = os.MkdirTemp("", "registry-test")
		if packErr != nil {
			return
		}
		_, packErr = pack.Run(context.Background(), &pack.Options{Input: filepath.Join(shared, "models", "stories260K-q4_0.gguf"),
			Output: filepath.Join(packDir, "stories.xdna"), Target: "xdna2", Catalog: kernelsel.Default(), CPUMaxN: 256})
	})
	if packErr != nil {
		t.Fatal(packErr)
	}
	return filepath.Join(packDir, "stories.xdna")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if packDir != "" {
		os.RemoveAll(packDir)
	}
	os.Exit(code)
}

// tempStore points $XDG_CACHE_HOME at a temporary folder and opens the store.
func tempStore(t *testing.T) *Store {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	s, err := OpenStore()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseRef(t *testing.T) {
	for s, ok := range map[string]bool{
		"127.0.0.1:5000/models/stories:q4":               true,
		"localhost/m:1":                                  true,
		"ghcr.io/a/b@sha256:" + strings.Repeat("ab", 32): true,
		"ghcr.io/a/b":                                    false, // no tag
		"model.xdna":                                     false,
		"./dir/model.xdna":                               false,
		"models/x.xdna":                                  false,
		"../x.io/a:b":                                    false,
		"/abs/path.xdna":                                 false,
		"Host.io/UPPER:tag":                              false,
	} {
		if got := LooksLikeRef(s); got != ok {
			t.Errorf("LooksLikeRef(%q) = %v", s, got)
		}
	}
	// Plain HTTP: loopback registries always, others only when asked.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	for _, c := range []struct {
		ref   string
		flag  bool
		plain bool
	}{
		{"127.0.0.1:5000/a/b:1", false, true},
		{"localhost/a/b:1", false, true},
		{"registry.example.com/a/b:1", false, false},
		{"registry.example.com/a/b:1", true, true},
		{"10.1.2.3:5000/a/b:1", false, false},
	} {
		repo, err := repository(must(ParseRef(c.ref)), Options{PlainHTTP: c.flag})
		if err != nil || repo.PlainHTTP != c.plain {
			t.Errorf("%s --plain-http=%v: plain HTTP %v, %v", c.ref, c.flag, repo.PlainHTTP, err)
		}
	}
	for h, ok := range map[string]bool{"localhost:5000": true, "127.0.0.1:1": true, "127.1.2.3": true, "[::1]:5000": true, "10.0.0.1:5000": false, "ghcr.io": false} {
		if IsLoopback(h) != ok {
			t.Errorf("IsLoopback(%q) != %v", h, ok)
		}
	}
}

// TestAnnotationsDigest checks that each content digest goes under its
// own key: a package's BLAKE3 digest under AnnotationSourceDigest, the
// SHA-256 digest of a package written before it under
// AnnotationSourceSHA256, as it was published then, and never one under
// the other's key.
func TestAnnotationsDigest(t *testing.T) {
	b3 := layout.ContentScheme + ":" + strings.Repeat("ab", 32)
	flat := strings.Repeat("cd", 32)
	for _, c := range []struct {
		src         layout.Source
		digest, sha string
	}{
		{layout.Source{ContentDigest: b3}, b3, ""},
		{layout.Source{ContentSHA256: flat}, "", flat},
		{layout.Source{}, "", ""},
	} {
		a := Annotations(&layout.Manifest{Source: c.src})
		d, hasD := a[AnnotationSourceDigest]
		s, hasS := a[AnnotationSourceSHA256]
		if d != c.digest || s != c.sha || hasD != (c.digest != "") || hasS != (c.sha != "") {
			t.Errorf("source %+v: %s %q (%v), %s %q (%v); want %q and %q", c.src, AnnotationSourceDigest, d, hasD, AnnotationSourceSHA256, s, hasS, c.digest, c.sha)
		}
	}
}

// TestPushPull pushes a package to a real registry and pulls it back by tag
// and by digest: the unpacked package is the pushed file byte for byte, the
// stored layer is the registry's blob byte for byte; list and rm.
func TestPushPull(t *testing.T) {
	reg := registrytest.Start(t, "", "")
	s := tempStore(t)
	x := packed(t)
	ctx := context.Background()
	ref := reg.Host + "/models/stories:q4_0"
	man, err := Push(ctx, x, ref, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed %s: manifest %s (%d bytes)", ref, man.Digest, man.Size)
	m, err := s.Pull(ctx, ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Digest != man.Digest {
		t.Errorf("pulled manifest %s, pushed %s", m.Digest, man.Digest)
	}
	want, _ := os.ReadFile(x)
	got, _ := os.ReadFile(m.Path)
	if !bytes.Equal(got, want) {
		t.Errorf("unpacked package differs from the pushed one (%d vs %d bytes)", len(got), len(want))
	}
	regBlob, err := os.ReadFile(reg.BlobPath(m.Layer.Digest.Encoded()))
	if err != nil {
		t.Fatal(err)
	}
	ourBlob, _ := os.ReadFile(s.blobPath(m.Layer.Digest))
	if !bytes.Equal(regBlob, ourBlob) || int64(len(ourBlob)) != m.Layer.Size {
		t.Errorf("stored layer differs from the registry's blob")
	}
	a := m.Annotations
	if a[AnnotationTarget] != "xdna2" || a[AnnotationArch] != "llama" || a[AnnotationQuantisation] != "Q4_0" || a[AnnotationParameters] == "" ||
		!strings.HasPrefix(a[AnnotationSourceDigest], layout.ContentScheme+":") || len(a[AnnotationSourceDigest]) != len(layout.ContentScheme)+1+64 || a[AnnotationSourceSHA256] != "" {
		t.Errorf("annotations %v", a)
	}
	t.Logf("annotations: %v", a)

	byDigest := reg.Host + "/models/stories@" + m.Digest.String()
	m2, err := s.Pull(ctx, byDigest, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Path != m.Path {
		t.Errorf("by digest: %s, by tag: %s", m2.Path, m.Path)
	}
	list, errs := s.List()
	if len(errs) > 0 || len(list) != 2 || list[0].Ref != byDigest || list[1].Ref != ref {
		t.Errorf("list: %v %v", list, errs)
	}
	// rm the tag: the digest ref still holds the blobs; rm it too: all gone.
	if err := s.Remove(ref); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ref); !errors.Is(err, ErrNotInStore) {
		t.Errorf("after rm: %v", err)
	}
	if _, err := os.Stat(m.Path); err != nil {
		t.Errorf("rm of one ref removed a package another uses: %v", err)
	}
	if err := s.Remove(byDigest); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"blobs/sha256", "xdna", "refs"} {
		if ents, _ := os.ReadDir(filepath.Join(s.Dir, d)); len(ents) != 0 {
			t.Errorf("%s not empty after rm: %v", d, ents)
		}
	}
	if err := s.Remove(ref); !errors.Is(err, ErrNotInStore) {
		t.Errorf("rm twice: %v", err)
	}
}

// TestPullRefusals: a registry that is down, a tag that does not exist, an
// artifact of another type, a layer whose bytes do not match its digest, a
// target the caller refuses. None leaves anything in the store.
func TestPullRefusals(t *testing.T) {
	reg := registrytest.Start(t, "", "")
	s := tempStore(t)
	ctx := context.Background()
	ref := reg.Host + "/models/stories:q4_0"
	man, err := Push(ctx, packed(t), ref, Options{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		} else {
			t.Logf("%s: %v", what, err)
		}
		if list, _ := s.List(); len(list) != 0 {
			t.Errorf("%s: the store holds %v", what, list)
		}
	}
	_, err = s.Pull(ctx, registrytest.FreeHost(t)+"/models/stories:q4_0", PullOptions{})
	check("registry down", err, ErrUnreachable)
	_, err = s.Pull(ctx, reg.Host+"/models/stories:nosuchtag", PullOptions{})
	check("unknown tag", err, ErrNotFound)
	_, err = s.Pull(ctx, reg.Host+"/models/nosuchrepo:q4_0", PullOptions{})
	check("unknown repository", err, ErrNotFound)

	// Another artifact type, pushed with oras as another tool would.
	repo, err := repository(must(ParseRef(reg.Host+"/other/thing:v1")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	blob := []byte("not a model")
	bd := content.NewDescriptorFromBytes("application/vnd.example.data", blob)
	if err := repo.Push(ctx, bd, bytes.NewReader(blob)); err != nil {
		t.Fatal(err)
	}
	od, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "application/vnd.example.thing", oras.PackManifestOptions{Layers: []ocispec.Descriptor{bd}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctx, od, "v1"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Pull(ctx, reg.Host+"/other/thing:v1", PullOptions{})
	check("another artifact type", err, ErrArtifactType)

	// The target check runs before the download.
	refuse := errors.New("package built for xdna2, this machine's NPU is xdna1")
	_, err = s.Pull(ctx, ref, PullOptions{CheckTarget: func(target string) error {
		if target != "xdna2" {
			t.Errorf("CheckTarget(%q)", target)
		}
		return refuse
	}})
	check("target", err, refuse)
	if ents, _ := os.ReadDir(filepath.Join(s.Dir, "blobs/sha256")); len(ents) != 0 {
		t.Errorf("a refused target downloaded %v", ents)
	}

	// Corrupt the layer inside the registry's storage (same size, bytes
	// flipped): the registry serves it, the digest check refuses it.
	m, err := fetchManifest(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	lp := reg.BlobPath(m.Layers[0].Digest.Encoded())
	orig, err := os.ReadFile(lp)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(orig)
	bad[len(bad)/2] ^= 0xff
	if err := os.WriteFile(lp, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = s.Pull(ctx, ref, PullOptions{})
	check("digest mismatch", err, ErrDigest)
	if ents, _ := os.ReadDir(filepath.Join(s.Dir, "tmp")); len(ents) != 0 {
		t.Errorf("a refused download left %v in tmp/", ents)
	}
	os.WriteFile(lp, orig, 0o644)
	if _, err := s.Pull(ctx, ref, PullOptions{}); err != nil {
		t.Errorf("after the registry's blob was mended: %v", err)
	}
	_ = man
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func fetchManifest(ctx context.Context, ref string) (*ocispec.Manifest, error) {
	r := must(ParseRef(ref))
	repo, err := repository(r, Options{})
	if err != nil {
		return nil, err
	}
	_, rc, err := repo.FetchReference(ctx, r.Reference)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var m ocispec.Manifest
	return &m, jsonDecode(rc, &m)
}

// TestInterruptedPull cuts a pull off mid-layer: nothing but a partial
// file in tmp/ is left, the store does not list the model; the next pull
// resumes from the partial file with a range request and ends with the
// right bytes. A partial file with wrong bytes fails the digest check,
// is discarded, and the pull after that restarts cleanly.
func TestInterruptedPull(t *testing.T) {
	reg := registrytest.Start(t, "", "")
	s := tempStore(t)
	ctx := context.Background()
	if _, err := Push(ctx, packed(t), reg.Host+"/models/stories:q4_0", Options{}); err != nil {
		t.Fatal(err)
	}
	// Pull through a proxy that cuts the connection 100 kB into the
	// transfer (the manifest is 1 kB, the layer 242 kB).
	proxy := registrytest.StartProxy(t, reg.Host)
	ref := proxy.Host + "/models/stories:q4_0"
	proxy.CutAfter(100_000)
	_, err := s.Pull(ctx, ref, PullOptions{})
	if err == nil || proxy.Cuts() != 1 {
		t.Fatalf("pull cut off by the network: %v (%d cuts)", err, proxy.Cuts())
	}
	t.Logf("interrupted: %v", err)
	parts, _ := filepath.Glob(filepath.Join(s.Dir, "tmp", "*.part"))
	if len(parts) != 1 {
		t.Fatalf("partial files %v", parts)
	}
	st, _ := os.Stat(parts[0])
	if _, err := s.Resolve(ref); !errors.Is(err, ErrNotInStore) {
		t.Errorf("an interrupted pull is in the store: %v", err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("list after an interrupted pull: %v", list)
	}
	var log bytes.Buffer
	m, err := s.Pull(ctx, ref, PullOptions{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), fmt.Sprintf("resuming sha256:%s at %d of", m.Layer.Digest.Encoded()[:12], st.Size())) {
		t.Errorf("no resume from %d bytes: %q", st.Size(), log.String())
	}
	t.Logf("%s", strings.TrimSpace(log.String()))
	want, _ := os.ReadFile(packed(t))
	if got, _ := os.ReadFile(m.Path); !bytes.Equal(got, want) {
		t.Error("resumed pull: unpacked package differs")
	}

	// A partial file whose bytes are wrong: refused, discarded, then a clean restart.
	if err := s.Remove(ref); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(s.Dir, "tmp", m.Layer.Digest.Encoded()+".part")
	os.WriteFile(part, bytes.Repeat([]byte{0x55}, int(m.Layer.Size/2)), 0o644)
	if _, err := s.Pull(ctx, ref, PullOptions{}); !errors.Is(err, ErrDigest) {
		t.Errorf("pull over a bad partial file: %v", err)
	}
	if _, err := os.Stat(part); err == nil {
		t.Error("the bad partial file was kept")
	}
	if _, err := s.Pull(ctx, ref, PullOptions{}); err != nil {
		t.Errorf("pull after a discarded partial file: %v", err)
	}
}

// TestCredentials: a registry that requires a login refuses a push
// without credentials and takes one with them from the docker config.
func TestCredentials(t *testing.T) {
	reg := registrytest.Start(t, "xdna", "s3cret")
	tempStore(t)
	ctx := context.Background()
	ref := reg.Host + "/models/stories:q4_0"
	if _, err := Push(ctx, packed(t), ref, Options{}); err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Errorf("push without credentials: %v", err)
	} else {
		t.Logf("without credentials: %v", err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("xdna:s3cret"))
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, auth)
	if err := os.WriteFile(filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Push(ctx, packed(t), ref, Options{}); err != nil {
		t.Fatalf("push with credentials: %v", err)
	}
	s, _ := OpenStore()
	if _, err := s.Pull(ctx, ref, PullOptions{}); err != nil {
		t.Errorf("pull with credentials: %v", err)
	}
}

func jsonDecode(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, maxManifest))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/registry"
	"github.com/xdna-go/xdna/registry/registrytest"
)

// TestPush pushes with the CLI to a real registry, pulls the package back
// and compares bytes; then the refusals.
func TestPush(t *testing.T) {
	reg := registrytest.Start(t, "", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	dir := t.TempDir()
	x := filepath.Join(dir, "stories.xdna")
	if _, _, err := run(t, filepath.Join(fixtures, "stories260K-q4_0.gguf"), "-o", x, "-q"); err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/models/stories:q4_0"
	out, _, err := run(t, "push", x, ref)
	if err != nil || !strings.HasPrefix(out, "pushed "+ref+" sha256:") {
		t.Fatalf("push: %v %q", err, out)
	}
	t.Logf("xdnapack push: %s", strings.TrimSpace(out))
	s, err := registry.OpenStore()
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Pull(context.Background(), ref, registry.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(x)
	if got, _ := os.ReadFile(m.Path); !bytes.Equal(got, want) {
		t.Error("pulled package differs from the pushed one")
	}
	// The zstd form pushes as it is: the same layer.
	if _, _, err := run(t, "compress", x, "-o", x+".zst"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "push", x+".zst", reg.Host+"/models/stories:zst"); err != nil {
		t.Fatal(err)
	}
	m2, err := s.Pull(context.Background(), reg.Host+"/models/stories:zst", registry.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(m2.Path); !bytes.Equal(got, want) {
		t.Error("pulled package (pushed compressed) differs")
	}

	bad := filepath.Join(dir, "bad.xdna")
	b := bytes.Clone(want)
	b[len(b)-100] ^= 0xff
	os.WriteFile(bad, b, 0o644)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"push", x, registrytest.FreeHost(t) + "/models/stories:q4_0"}, "registry unreachable"},
		{[]string{"push", x, reg.Host + "/models/stories@" + m.Digest.String()}, "name a tag, not a digest"},
		{[]string{"push", bad, reg.Host + "/models/bad:1"}, "checksum"},
		{[]string{"push", filepath.Join(dir, "missing.xdna"), reg.Host + "/models/x:1"}, "no such file"},
		{[]string{"push", x, "stories:q4_0"}, "missing registry or repository"},
	} {
		_, _, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("xdnapack %s: %v, want %q", strings.Join(c.args, " "), err, c.msg)
		} else {
			t.Logf("xdnapack %s: %v", strings.Join(c.args, " "), err)
		}
	}
}

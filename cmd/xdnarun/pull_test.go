package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/xdna-go/xdna/registry"
	"github.com/xdna-go/xdna/registry/registrytest"
)

// pushedFixture starts a registry, points the store and the docker config
// at temporary folders, and pushes stories260K-q4_0 as REGISTRY/models/stories:q4_0.
func pushedFixture(t *testing.T) (reg *registrytest.Registry, x, ref string) {
	t.Helper()
	reg = registrytest.Start(t, "", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	x = packFixture(t, "stories260K-q4_0")
	ref = reg.Host + "/models/stories:q4_0"
	if _, err := registry.Push(context.Background(), x, ref, registry.Options{}); err != nil {
		t.Fatal(err)
	}
	return reg, x, ref
}

// TestPullOnFirstUse: xdnarun REF -p pulls the model into the store the
// first time and prints what the file gives; list shows it; serve REF
// serves it; rm removes it.
func TestPullOnFirstUse(t *testing.T) {
	_, x, ref := pushedFixture(t)
	want := cliText(t, x, "Once upon a time", "-n", "12", "--temp", "0")
	out, stderr, err := run(t, "", ref, "-p", "Once upon a time", "-n", "12", "--temp", "0", "-t", "2", "--device", "cpu")
	if err != nil || strings.TrimSuffix(out, "\n") != want || !strings.Contains(stderr, "pulling it") {
		t.Fatalf("first use: %v %q (want %q); stderr %q", err, out, want, stderr)
	}
	out, stderr, err = run(t, "", ref, "-p", "Once upon a time", "-n", "12", "--temp", "0", "-t", "2", "--device", "cpu")
	if err != nil || strings.TrimSuffix(out, "\n") != want || strings.Contains(stderr, "pulling") {
		t.Errorf("second use: %v %q; stderr %q", err, out, stderr)
	}
	list, _, err := run(t, "", "list")
	if err != nil || !strings.Contains(list, ref) || !strings.Contains(list, "xdna2") || !strings.Contains(list, "Q4_0") {
		t.Errorf("list: %v\n%s", err, list)
	}
	t.Logf("xdnarun list:\n%s", list)

	ts := startServe(t, ref, nil)
	c := ts.client()
	r, err := c.Completions.New(context.Background(), openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(ref),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")}, MaxTokens: openai.Int(12), Temperature: openai.Float(0)})
	if err != nil || r.Choices[0].Text != want {
		t.Errorf("serve REF: %v %+v", err, r)
	}
	ts.stop()

	if out, _, err := run(t, "", "rm", ref); err != nil || out != "removed "+ref+"\n" {
		t.Errorf("rm: %v %q", err, out)
	}
	if list, _, _ := run(t, "", "list"); strings.Contains(list, ref) {
		t.Errorf("list after rm:\n%s", list)
	}
	if _, _, err := run(t, "", "rm", ref); !errors.Is(err, registry.ErrNotInStore) {
		t.Errorf("rm twice: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "xdna", "oci", "blobs", "sha256"))
	if len(ents) != 0 {
		t.Errorf("blobs left after rm: %v", ents)
	}
}

// TestPullRefusals: each refusal from the CLI, with its message.
func TestPullRefusals(t *testing.T) {
	reg, _, ref := pushedFixture(t)
	for _, c := range []struct {
		args []string
		want error
		msg  string
	}{
		{[]string{"pull", registrytest.FreeHost(t) + "/models/stories:q4_0"}, registry.ErrUnreachable, "connection refused"},
		{[]string{"pull", reg.Host + "/models/stories:nosuchtag"}, registry.ErrNotFound, "tag nosuchtag"},
		{[]string{"pull", ref, "--device", "npu"}, nil, "--device npu: no NPU on this machine"},
		{[]string{ref, "-p", "Hi", "--device", "npu"}, nil, "--device npu: no NPU on this machine"},
		{[]string{"rm", reg.Host + "/models/never:pulled"}, registry.ErrNotInStore, "not in the local store"},
		{[]string{"pull", "not-a-ref"}, nil, "missing registry or repository"},
	} {
		if ts, _ := probeTargets(); len(ts) > 0 && strings.Contains(c.msg, "no NPU") {
			t.Logf("SKIP xdnarun %s: this machine has an NPU (%v)", strings.Join(c.args, " "), ts)
			continue
		}
		_, _, err := run(t, "", c.args...)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("xdnarun %s: %v", strings.Join(c.args, " "), err)
		} else {
			t.Logf("xdnarun %s: %v", strings.Join(c.args, " "), err)
		}
	}
	if list, _, _ := run(t, "", "list"); strings.Contains(list, reg.Host) {
		t.Errorf("a refused pull is in the store:\n%s", list)
	}
}

func TestCheckTarget(t *testing.T) {
	xdna1 := func() ([]string, error) { return []string{"xdna1"}, nil }
	none := func() ([]string, error) { return nil, errors.New("no /dev/accel") }
	for _, c := range []struct {
		device, target string
		npus           func() ([]string, error)
		want           string
	}{
		{"npu", "xdna2", xdna1, "the package is built for xdna2, this machine's NPU is xdna1"},
		{"npu", "xdna1", xdna1, ""},
		{"npu", "xdna2", none, "no NPU on this machine (no /dev/accel)"},
		{"cpu", "xdna2", xdna1, ""},
		{"auto", "xdna2", xdna1, ""},
		{"emu", "xdna1", none, ""},
	} {
		err := checkTarget(c.device, c.target, c.npus)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s %s: %v, want %q", c.device, c.target, err, c.want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdna-go/xdna/layout"
	"github.com/xdna-go/xdna/layout/gguftest"
)

const fixtures = "../../../shared/fixtures/models"

// run executes xdnapack with args and returns stdout, stderr and the error.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// onlyFiles fails if dir holds anything but the named files.
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, e := range ents {
		if !want[e.Name()] {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestPackVerifyInspectCompress(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(fixtures, "stories260K-q4_0.gguf")
	out := filepath.Join(dir, "s.xdna")
	stdout, stderr, err := run(t, model, "-o", out, "--target", "xdna1")
	if err != nil {
		t.Fatalf("pack: %v\n%s", err, stderr)
	}
	for _, want := range []string{"TENSOR", "blk.0.attn_qkv.weight", "embedding lookup", "cpu-max-n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan table lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "packing") || !strings.Contains(stderr, "wrote") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	stdout, _, err = run(t, "verify", out, "--against", model)
	if err != nil || !strings.Contains(stdout, "bit for bit") {
		t.Fatalf("verify: %v\n%s", err, stdout)
	}
	stdout, _, err = run(t, "inspect", out)
	if err != nil || !strings.Contains(stdout, "stories260K") && !strings.Contains(stdout, "llama") {
		t.Fatalf("inspect: %v\n%s", err, stdout)
	}
	if !strings.Contains(stdout, "(content "+layout.ContentScheme+":") {
		t.Errorf("inspect names no %s digest:\n%s", layout.ContentScheme, stdout)
	}
	if _, _, err = run(t, "compress", out); err != nil {
		t.Fatal(err)
	}
	stdout, _, err = run(t, "verify", out+".zst", "--against", model)
	if err != nil || !strings.Contains(stdout, "bit for bit") {
		t.Fatalf("verify .zst: %v\n%s", err, stdout)
	}
	stdout, _, err = run(t, "inspect", out+".zst", "--json")
	if err != nil || !strings.Contains(stdout, `"tensors"`) {
		t.Fatalf("inspect .zst: %v\n%s", err, stdout)
	}
	onlyFiles(t, dir, "s.xdna", "s.xdna.zst")
}

// TestBadInput: each bad input gives a one-line error naming what and where,
// and leaves no output file behind.
func TestBadInput(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join(fixtures, "stories260K-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	arch := []gguftest.KV{{Key: "general.architecture", Value: "llama"}}
	raw := func(infos ...gguftest.Info) []byte {
		b, err := gguftest.Raw(arch, infos, 64)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	iq := func(name string, typ uint32) []byte {
		// a 2-D tensor of a known type we do not pack
		b, _ := gguftest.Raw(arch, []gguftest.Info{{Name: name, Type: typ, Dims: []uint64{256, 1}}}, 256)
		return b
	}
	cases := []struct {
		name string
		data []byte // nil: the file does not exist
		want []string
	}{
		{"missing", nil, []string{"in.gguf", "no such file"}},
		{"empty", []byte{}, []string{"in.gguf", "too short"}},
		{"random", bytes.Repeat([]byte("xdna"), 100), []string{"in.gguf", "not a GGUF"}},
		{"truncated", fixture[:len(fixture)/2], []string{"in.gguf", "past the end"}},
		{"past end", raw(gguftest.Info{Name: "w", Type: 0, Dims: []uint64{64, 2}}), []string{"in.gguf", `"w"`, "past the end"}},
		{"overlap", raw(gguftest.Info{Name: "a", Type: 0, Dims: []uint64{8, 1}}, gguftest.Info{Name: "b", Type: 0, Dims: []uint64{8, 1}, Offset: 0}), []string{"in.gguf", "overlaps"}},
		{"overflow", raw(gguftest.Info{Name: "huge", Type: 0, Dims: []uint64{1 << 62, 1 << 62}}), []string{"in.gguf", `"huge"`}},
		{"unknown type", raw(gguftest.Info{Name: "odd", Type: 77, Dims: []uint64{8}}), []string{"in.gguf", `"odd"`, "unknown tensor type 77"}},
		{"unsupported type", iq("blk.0.attn_q.weight", 3), []string{"in.gguf", `"blk.0.attn_q.weight"`, "Q4_1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.gguf")
			if c.data != nil {
				os.WriteFile(in, c.data, 0o644)
			}
			_, _, err := run(t, in, "-o", filepath.Join(dir, "out.xdna"), "-q")
			checkErr(t, err, c.want...)
			if c.data != nil {
				onlyFiles(t, dir, "in.gguf")
			} else {
				onlyFiles(t, dir)
			}
		})
	}
	t.Run("catalog unknown key", func(t *testing.T) {
		dir := t.TempDir()
		cat := filepath.Join(dir, "cat.toml")
		base, _ := os.ReadFile("../../manifest.toml")
		os.WriteFile(cat, append([]byte("colour = \"blue\"\n"), base...), 0o644)
		_, _, err := run(t, filepath.Join(fixtures, "stories260K-q4_0.gguf"), "-o", filepath.Join(dir, "o.xdna"), "--catalog", cat, "-q")
		checkErr(t, err, "colour")
		onlyFiles(t, dir, "cat.toml")
	})
	t.Run("bad flag", func(t *testing.T) {
		_, _, err := run(t, filepath.Join(fixtures, "stories260K-q4_0.gguf"), "--target", "xdna9")
		checkErr(t, err, "--target", "xdna9")
	})
}

func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
}

// TestCorruptPackage: a flipped byte in a blob is named by verify; a
// manifest with an unknown key is refused naming the key.
func TestCorruptPackage(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.xdna")
	if _, _, err := run(t, filepath.Join(fixtures, "stories260K-q8_0.gguf"), "-o", out, "-q"); err != nil {
		t.Fatal(err)
	}
	f, err := layout.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	e := f.Manifest.Tensor("blk.2.ffn_down.weight")
	off := e.Offset + e.Size/2
	f.Close()
	data, _ := os.ReadFile(out)
	bad := append([]byte(nil), data...)
	bad[off] ^= 0x40
	corrupt := filepath.Join(dir, "corrupt.xdna")
	os.WriteFile(corrupt, bad, 0o644)
	_, _, err = run(t, "verify", corrupt)
	checkErr(t, err, "corrupt.xdna", "1 corrupted")
	stdout, _, _ := run(t, "verify", corrupt)
	if !strings.Contains(stdout, "blk.2.ffn_down.weight") {
		t.Errorf("verify output does not name the tensor:\n%s", stdout)
	}

	// Append an unknown key to the manifest and fix up the header so that
	// only the schema check can catch it.
	moff := binary.LittleEndian.Uint64(data[16:])
	body := append(append([]byte(nil), data[moff:]...), []byte("\nsurprise = 1\n")...)
	tampered := append(append([]byte(nil), data[:moff]...), body...)
	binary.LittleEndian.PutUint64(tampered[24:], uint64(len(body)))
	binary.LittleEndian.PutUint32(tampered[32:], layout.Checksum(body))
	binary.LittleEndian.PutUint64(tampered[40:], uint64(len(tampered)))
	binary.LittleEndian.PutUint32(tampered[60:], layout.Checksum(tampered[:60]))
	tp := filepath.Join(dir, "tampered.xdna")
	os.WriteFile(tp, tampered, 0o644)
	_, _, err = run(t, "verify", tp)
	checkErr(t, err, "tampered.xdna", "surprise")

	trunc := filepath.Join(dir, "trunc.xdna")
	os.WriteFile(trunc, data[:len(data)-100], 0o644)
	_, _, err = run(t, "inspect", trunc)
	checkErr(t, err, "trunc.xdna", "truncated")
}

// TestSourceLine: inspect's source line names the digest with its scheme,
// the SHA-256 digest of a package written before it as such, or none.
func TestSourceLine(t *testing.T) {
	b3 := layout.ContentScheme + ":" + strings.Repeat("ab", 32)
	flat := strings.Repeat("cd", 32)
	for _, c := range []struct {
		src  layout.Source
		want string
	}{
		{layout.Source{Name: "m.gguf", ContentDigest: b3}, "m.gguf (content " + b3 + ")"},
		{layout.Source{Name: "m.gguf", ContentSHA256: flat}, "m.gguf (content sha256 " + flat + ", the digest of packs before " + layout.ContentScheme + ")"},
		{layout.Source{Name: "m.gguf"}, "m.gguf (no content digest)"},
	} {
		if got := sourceLine(c.src); got != c.want {
			t.Errorf("sourceLine(%+v) = %q, want %q", c.src, got, c.want)
		}
	}
}

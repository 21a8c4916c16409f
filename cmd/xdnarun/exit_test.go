package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExitCodes runs xdnarun as a program: a write error on stdout
// (/dev/full) exits 1 naming it; SIGINT during -p generation exits 130,
// SIGTERM 143.
func TestExitCodes(t *testing.T) {
	model := packFixture(t, "rand-qwen2-q8_0")
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	c := xdnarunCmd(model, "-p", "Hello", "-n", "64", "--temp", "0", "--device", "cpu")
	c.Stdout = full
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err = c.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "writing the output") {
		t.Errorf("> /dev/full: %v, stderr %q; want exit 1 and a write error", err, stderr.String())
	}

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		c := xdnarunCmd(model, "-p", "Hello", "-n", "-1", "-c", "2048", "--temp", "1", "--seed", "1", "-t", "1", "--device", "cpu")
		r, w, _ := os.Pipe()
		c.Stdout = w
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		b := make([]byte, 64)
		if _, err := r.Read(b); err != nil { // the generation has begun
			t.Fatal(err)
		}
		c.Process.Signal(sig)
		go func() { // keep the pipe drained
			for {
				if _, err := r.Read(b); err != nil {
					return
				}
			}
		}()
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			c.Process.Kill()
			t.Fatalf("%v: still running", sig)
		}
		r.Close()
		want := 128 + int(sig)
		if !errors.As(err, &ee) || ee.ExitCode() != want {
			t.Errorf("%v during -p: %v, stderr %q; want exit %d", sig, err, stderr.String(), want)
		}
	}
}

// TestContextTooLarge: a context the machine cannot hold is a one-line
// error naming the bytes, before any allocation; above the training
// context, a warning.
func TestContextTooLarge(t *testing.T) {
	model := packFixture(t, "stories260K-q8_0")
	for _, c := range []string{"1000000000", "100000000"} {
		_, _, err := run(t, "", model, "-p", "Once", "-n", "2", "-c", c, "--device", "cpu")
		if err == nil || !strings.Contains(err.Error(), "-c "+c+": needs") || !strings.Contains(err.Error(), "bytes") || strings.Contains(err.Error(), "\n") {
			t.Errorf("-c %s: %v", c, err)
		}
	}
	_, errOut, err := run(t, "", model, "-p", "Once", "-n", "2", "-c", "3000", "--device", "cpu")
	if err != nil || !strings.Contains(errOut, "above the model's training context of 2048") {
		t.Errorf("-c 3000: %v, stderr %q", err, errOut)
	}
}

// TestUTF8Writer: a character split across pieces is written whole once
// complete; invalid bytes become U+FFFD; an unfinished one at the end too.
func TestUTF8Writer(t *testing.T) {
	cases := []struct {
		pieces []string
		writes []string
	}{
		{[]string{"a", "\xe2\x82", "\xac", "b"}, []string{"a", "", "€", "b"}},
		{[]string{"\xf0\x9f", "\x98", "\x80!"}, []string{"", "", "😀!"}},
		{[]string{"x\xff", "y"}, []string{"x\uFFFD", "y"}},
		{[]string{"z\xe2\x82"}, []string{"z", "\uFFFD"}}, // the last write is Flush
		{[]string{"\xc3", "\xa9t\xc3", "\xa9"}, []string{"", "ét", "é"}},
	}
	for _, c := range cases {
		var b bytes.Buffer
		u := &utf8Writer{w: &b}
		var got []string
		for _, p := range c.pieces {
			n := b.Len()
			if err := u.Write([]byte(p)); err != nil {
				t.Fatal(err)
			}
			got = append(got, b.String()[n:])
		}
		n := b.Len()
		u.Flush()
		if b.Len() > n {
			got = append(got, b.String()[n:])
		}
		for len(got) < len(c.writes) {
			got = append(got, "")
		}
		if strings.Join(got, "|") != strings.Join(c.writes, "|") {
			t.Errorf("%q: wrote %q, want %q", c.pieces, got, c.writes)
		}
	}
}

// TestLlamaFlags: llama.cpp's command line habits.
func TestLlamaFlags(t *testing.T) {
	model := packFixture(t, "stories260K-q8_0")
	out, errOut, err := run(t, "", "-m", model, "-p", "Once", "-n", "3", "--temp", "0", "-ngl", "99", "-fa", "--no-mmap")
	if err != nil || out == "" || !strings.Contains(errOut, "--n-gpu-layers 99 ignored") || strings.Contains(errOut, "--flash-attn") {
		t.Errorf("-m -ngl 99 -fa (flash attention, not ignored): %v, %q, stderr %q", err, out, errOut)
	}
	if _, _, err := run(t, "", model, "-p", "x", "--flash-attn=maybe"); err == nil || !strings.Contains(err.Error(), "--flash-attn maybe") {
		t.Errorf("--flash-attn maybe: %v", err)
	}
	if _, _, err := run(t, "", model, "-p", "x", "-ctk", "q8_0"); err == nil || !strings.Contains(err.Error(), "--cache-type-k q8_0") {
		t.Errorf("-ctk q8_0: %v", err)
	}
	prompt := t.TempDir() + "/p.txt"
	os.WriteFile(prompt, []byte("Once upon a time"), 0o644)
	a, _, err := run(t, "", model, "-f", prompt, "-n", "4", "--temp", "0")
	b, _, _ := run(t, "", model, "-p", "Once upon a time", "-n", "4", "--temp", "0")
	if err != nil || a != b {
		t.Errorf("-f: %v, %q; -p gives %q", err, a, b)
	}
	if out, _, err := run(t, "", "--version"); err != nil || !strings.Contains(out, Version) {
		t.Errorf("--version: %v, %q", err, out)
	}
	if _, _, err := run(t, "", model, "-m", model+"x", "-p", "x"); err == nil || !strings.Contains(err.Error(), "two models") {
		t.Errorf("two models: %v", err)
	}
	if _, _, err := run(t, "", "-p", "x"); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model: %v", err)
	}
	if got := llamaArgs([]string{"-p", "-sys", "-sys=a", "-sys", "-ngl", "-ngl", "9", "--", "-ngl"}); strings.Join(got, " ") != "-p -sys --system=a --system -ngl --n-gpu-layers 9 -- -ngl" {
		t.Errorf("llamaArgs: %q", got)
	}
}

// TestRunGGUF runs a GGUF file: the first run packs it into the cache and
// says so, the second maps the cached pack; the text is the .xdna's.
func TestRunGGUF(t *testing.T) {
	gguf := shared + "/models/stories260K-q4_0.gguf"
	out1, err1, err := run(t, "", gguf, "-p", "Once", "-n", "6", "--temp", "0")
	if err != nil || !strings.Contains(err1, "packing it once for xdna2") {
		t.Fatalf("first run: %v, stderr %q", err, err1)
	}
	out2, err2, err := run(t, "", gguf, "-p", "Once", "-n", "6", "--temp", "0")
	if err != nil || !strings.Contains(err2, "from the cache") || strings.Contains(err2, "packing") {
		t.Fatalf("second run: %v, stderr %q", err, err2)
	}
	ref, _, _ := run(t, "", packFixture(t, "stories260K-q4_0"), "-p", "Once", "-n", "6", "--temp", "0")
	if out1 != ref || out2 != ref {
		t.Errorf("GGUF runs %q, %q; the .xdna %q", out1, out2, ref)
	}
}

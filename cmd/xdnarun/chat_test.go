package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/xdna-go/xdna/runtime/sample"
)

// xdnarunCmd returns the test binary started as xdnarun with args (TestMain
// runs main when XDNARUN_TEST_MAIN=1).
func xdnarunCmd(args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), "XDNARUN_TEST_MAIN=1")
	return c
}

// ptyOutput collects what the program writes to its terminal.
type ptyOutput struct {
	mu  sync.Mutex
	buf []byte
}

func (p *ptyOutput) copyFrom(r io.Reader) {
	b := make([]byte, 4096)
	for {
		n, err := r.Read(b)
		p.mu.Lock()
		p.buf = append(p.buf, b[:n]...)
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (p *ptyOutput) len() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.buf) }

func (p *ptyOutput) String() string { p.mu.Lock(); defer p.mu.Unlock(); return string(p.buf) }

// waitFor waits until the output after byte from contains s (or, for s
// empty, holds at least n bytes), and returns the offset after it.
func (p *ptyOutput) waitFor(t *testing.T, from int, s string, n int) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		out := string(p.buf[min(from, len(p.buf)):])
		p.mu.Unlock()
		if s == "" && len(out) >= n {
			return from + len(out)
		}
		if i := strings.Index(out, s); s != "" && i >= 0 {
			return from + i + len(s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %q (or %d bytes) after byte %d of the terminal output:\n%s", s, n, from, p.String())
	return 0
}

// TestChatPty chats on a pseudo-terminal: Ctrl-C (the terminal's ^C, a
// SIGINT to the process group) during a reply stops it with [stopped] and
// the next message gets a reply again; Ctrl-C at the prompt leaves with 0.
func TestChatPty(t *testing.T) {
	model := packFixture(t, "rand-qwen2-q8_0") // random weights: replies run until the context is full
	c := xdnarunCmd(model, "--temp", "1", "--seed", "3", "-c", "2048", "-t", "1", "--device", "cpu")
	tty, err := pty.Start(c)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer tty.Close()
	var out ptyOutput
	go out.copyFrom(tty)
	at := out.waitFor(t, 0, "> ", 0)
	for i, msg := range []string{"hello", "again"} {
		tty.Write([]byte(msg + "\r"))
		at = out.waitFor(t, at, msg+"\r\n", 0)
		out.waitFor(t, at, "", 40) // 40 bytes of the reply
		tty.Write([]byte{3})       // ^C
		at = out.waitFor(t, at, "[stopped]", 0)
		at = out.waitFor(t, at, "> ", 0)
		if i == 1 && strings.Contains(out.String(), "xdnarun:") {
			t.Fatalf("an error after a stopped reply:\n%s", out.String())
		}
	}
	t.Logf("terminal:\n%q", out.String())
	tty.Write([]byte{3}) // ^C at the prompt: leave
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("leaving with Ctrl-C at the prompt: %v\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		c.Process.Kill()
		t.Fatalf("Ctrl-C at the prompt did not leave:\n%s", out.String())
	}
}

// TestChatKeepsCache checks that the second turn runs only the tokens the
// cache does not hold, and that its greedy reply is the one a fresh cache
// fed the whole conversation gives.
func TestChatKeepsCache(t *testing.T) {
	l, err := load(context.Background(), packFixture(t, "stories260K-q8_0"), loadOptions{threads: 1, device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := &genOptions{n: 12, sp: sample.Params{Temp: 0, TopP: 1, RepeatPenalty: 1}, stderr: io.Discard}
	c, err := newChat(l, o, "")
	if err != nil {
		t.Fatal(err)
	}
	var b1, b2 bytes.Buffer
	t1, err := c.reply(context.Background(), "Once upon a time", &b1)
	if err != nil {
		t.Fatal(err)
	}
	if t1.fed != t1.total || b1.Len() == 0 {
		t.Fatalf("turn 1: fed %d of %d tokens, reply %q", t1.fed, t1.total, b1.String())
	}
	t2, err := c.reply(context.Background(), "The little dog", &b2)
	if err != nil {
		t.Fatal(err)
	}
	if t2.fed >= t2.total-t1.total {
		t.Fatalf("turn 2 fed %d of the conversation's %d tokens; turn 1 left %d in the cache", t2.fed, t2.total, t1.total)
	}
	t.Logf("turn 1: %d tokens; turn 2: %d of %d run", t1.total, t2.fed, t2.total)

	fresh, err := newChat(l, o, "")
	if err != nil {
		t.Fatal(err)
	}
	fresh.msgs = append(fresh.msgs, c.msgs[:2]...)
	var b3 bytes.Buffer
	t3, err := fresh.reply(context.Background(), "The little dog", &b3)
	if err != nil {
		t.Fatal(err)
	}
	if t3.fed != t3.total || t3.total != t2.total {
		t.Fatalf("fresh: fed %d of %d, want all of %d", t3.fed, t3.total, t2.total)
	}
	if b3.String() != b2.String() {
		t.Errorf("reply with the cache %q, from a fresh cache %q", b2.String(), b3.String())
	}
}

// TestChatStdin chats from a pipe (-i) with a system message: each
// message is answered, the end of input (Ctrl-D) leaves with 0.
func TestChatStdin(t *testing.T) {
	model := packFixture(t, "stories260K-q8_0")
	out, errOut, err := run(t, "Once upon a time\nThe dog\n", model, "-i", "-n", "6", "--temp", "0", "-sys", "Be brief")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if got := strings.Count(out, "> "); got != 3 {
		t.Errorf("%d prompts, want 3:\n%s", got, out)
	}
	if !strings.Contains(errOut, "template chatml") {
		t.Errorf("stderr does not name the template: %s", errOut)
	}

}

// TestChatTemplateAtStart: a template that cannot be used is an error
// before the first prompt, whether named by --chat-template or the model's.
func TestChatTemplateAtStart(t *testing.T) {
	model := packFixture(t, "stories260K-q8_0")
	bad := t.TempDir() + "/t.jinja"
	os.WriteFile(bad, []byte("{{ nothing llama.cpp knows }}"), 0o644)
	out, _, err := run(t, "hello\n", model, "-i", "--chat-template", bad)
	if err == nil || !strings.Contains(err.Error(), "unsupported") || out != "" {
		t.Errorf("--chat-template %s: %v, stdout %q", bad, err, out)
	}
	if _, _, err := run(t, "", model, "-i", "--chat-template", "no-such-family"); err == nil || !strings.Contains(err.Error(), "neither a template name") {
		t.Errorf("--chat-template no-such-family: %v", err)
	}
	out, _, err = run(t, "hello\n", model, "-i", "--chat-template", "llama3", "-n", "3")
	if err != nil || !strings.Contains(out, "> ") {
		t.Errorf("--chat-template llama3: %v, %q", err, out)
	}

	l, err := load(context.Background(), model, loadOptions{threads: 1, device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.tok.Vocab().ChatTemplate = "{% for m in messages %}{{ m.text }}{% endfor %}"
	if _, err := newChat(l, &genOptions{}, ""); err == nil || !strings.Contains(err.Error(), "--chat-template") {
		t.Errorf("the model's unknown template: %v", err)
	}
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/xdna-go/xdna/cmd/internal/cli"
	"github.com/xdna-go/xdna/runtime/engine"
	"github.com/xdna-go/xdna/runtime/tokenizer"
)

// chatTemplateArg resolves --chat-template: "" (the model's), a family name
// llama.cpp knows, or a file holding a Jinja template of a known family. It
// returns the family name, or "" for the model's own.
func chatTemplateArg(arg string) (string, error) {
	if arg == "" {
		return "", nil
	}
	if name, ok := tokenizer.DetectTemplate(arg); ok && name == arg {
		return name, nil
	}
	b, err := readCapped(arg, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("--chat-template %q: neither a template name llama.cpp knows (chatml, llama3, mistral-v7, phi3, gemma, ...) nor a file", arg)
	}
	if err != nil {
		return "", fmt.Errorf("--chat-template: %w", err)
	}
	name, ok := tokenizer.DetectTemplate(string(b))
	if !ok {
		return "", fmt.Errorf("--chat-template %s: %w chat template (no family of llama.cpp's fits it)", arg, tokenizer.ErrUnsupported)
	}
	return name, nil
}

// chat is a conversation on one KV cache: each turn renders the whole
// conversation with the template, and only the tokens after the part the
// cache already holds are run (as llama.cpp's server reuses its cache).
type chat struct {
	l      *loaded
	o      *genOptions
	tmpl   string // template family
	msgs   []tokenizer.Message
	st     *engine.State
	cached []int32 // the tokens whose keys and values st holds, in order
}

// newChat checks the chat template (the model's unless tmpl names one)
// before the first message.
func newChat(l *loaded, o *genOptions, tmpl string) (*chat, error) {
	if tmpl == "" {
		name, ok := tokenizer.DetectTemplate(l.tok.Vocab().ChatTemplate)
		if !ok {
			t := l.tok.Vocab().ChatTemplate
			if len(t) > 60 {
				t = t[:60] + "..."
			}
			return nil, fmt.Errorf("the model's chat template %q: %w (no family of llama.cpp's fits it); name one with --chat-template", t, tokenizer.ErrUnsupported)
		}
		tmpl = name
	}
	c := &chat{l: l, o: o, tmpl: tmpl, st: l.model.NewState(l.ctx)}
	if o.system != "" {
		c.msgs = append(c.msgs, tokenizer.Message{Role: "system", Content: o.system})
	}
	if _, err := tokenizer.ApplyTemplate(tmpl, append(c.msgs, tokenizer.Message{Role: "user", Content: "x"}), true); err != nil {
		return nil, err
	}
	return c, nil
}

// turn is what one reply cost: the conversation's tokens and how many of
// them were run (the rest came from the cache).
type turn struct {
	total, fed int
	res        *result
}

// reply adds the user's message, runs the new tokens and streams the reply
// to out. When the conversation no longer fits the context, the oldest
// turns are dropped (the system message stays) and the cache starts afresh.
func (c *chat) reply(ctx context.Context, line string, out io.Writer) (*turn, error) {
	c.msgs = append(c.msgs, tokenizer.Message{Role: "user", Content: line})
	tokens, err := c.render()
	if err != nil {
		return nil, err
	}
	for len(tokens) >= c.l.ctx {
		first := 0
		if c.msgs[0].Role == "system" {
			first = 1
		}
		if len(c.msgs)-first <= 1 {
			c.msgs = c.msgs[:len(c.msgs)-1]
			return nil, fmt.Errorf("the message (%d tokens with the template) does not fit the context of %d (-c)", len(tokens), c.l.ctx)
		}
		fmt.Fprintf(c.o.stderr, "the conversation (%d tokens) no longer fits the context of %d; dropping its oldest turn\n", len(tokens), c.l.ctx)
		drop := 1
		if len(c.msgs)-first > 2 {
			drop = 2 // a user message and its reply
		}
		c.msgs = append(c.msgs[:first], c.msgs[first+drop:]...)
		if tokens, err = c.render(); err != nil {
			return nil, err
		}
	}
	keep := commonPrefix(c.cached, tokens)
	if keep == len(tokens) {
		keep-- // the last token is run again for its logits
	}
	c.st.Truncate(keep)
	keep = c.st.Pos() // a model with sliding windows may have dropped the whole cache
	c.cached = c.cached[:keep]
	res, err := generate(ctx, c.l, c.st, tokens, tokens[keep:], c.o, out)
	if err != nil {
		c.msgs = c.msgs[:len(c.msgs)-1] // the message had no reply
		c.st.Truncate(0)
		c.cached = c.cached[:0]
		return nil, err
	}
	seq := append(tokens, make([]int32, 0, len(res.Steps))...)
	for _, s := range res.Steps {
		seq = append(seq, s.Token)
	}
	c.cached = append(c.cached[:0], seq[:c.st.Pos()]...)
	c.msgs = append(c.msgs, tokenizer.Message{Role: "assistant", Content: strings.TrimSpace(res.Text)})
	return &turn{total: len(tokens), fed: len(tokens) - keep, res: res}, nil
}

func (c *chat) render() ([]int32, error) {
	prompt, err := tokenizer.ApplyTemplate(c.tmpl, c.msgs, true)
	if err != nil {
		return nil, err
	}
	return c.l.tok.Encode(prompt, true), nil
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

type line struct {
	text string
	err  error // io.EOF at the end
}

// run reads messages from stdin and replies until Ctrl-D, or Ctrl-C at the
// prompt. Ctrl-C during a reply stops it ("[stopped]") and the chat goes on.
func (c *chat) run(ctx context.Context) error {
	o := c.o
	intr := o.interrupt
	if intr == nil {
		ch := make(chan struct{}, 1)
		restore := cli.OnInterrupt(ctx, func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		})
		defer restore()
		intr = ch
	}
	lines := make(chan line)
	go func() {
		r := bufio.NewReaderSize(o.stdin, 64<<10)
		for {
			s, err := r.ReadString('\n')
			if err != nil && (s == "" || err != io.EOF) {
				lines <- line{err: err}
				return
			}
			lines <- line{text: s}
		}
	}()
	fmt.Fprintf(o.stderr, "chat with %s (%s, template %s); Ctrl-C stops a reply, Ctrl-C at the prompt or Ctrl-D leaves\n",
		c.l.file.Manifest.Model.Name, c.l.file.Manifest.Model.Arch, c.tmpl)
	for {
		select { // a Ctrl-C that came as a reply ended is not a request to leave
		case <-intr:
		default:
		}
		if _, err := fmt.Fprint(o.stdout, "\n> "); err != nil {
			return outErr(err)
		}
		var in line
		select {
		case <-ctx.Done():
			return cli.Err(ctx)
		case <-intr:
			fmt.Fprintln(o.stdout)
			return nil
		case in = <-lines:
		}
		if in.err == io.EOF {
			fmt.Fprintln(o.stdout)
			return nil
		}
		if in.err != nil {
			return fmt.Errorf("reading stdin: %w", in.err)
		}
		msg := strings.TrimSpace(in.text)
		if msg == "" {
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			select {
			case <-intr:
				cancel()
			case <-done:
			}
		}()
		_, err := c.reply(rctx, msg, o.stdout)
		close(done)
		stopped := rctx.Err() != nil && ctx.Err() == nil
		cancel()
		if ctx.Err() != nil {
			return cli.Err(ctx)
		}
		if err != nil {
			if oe := (*outputError)(nil); errors.As(err, &oe) {
				return err
			}
			fmt.Fprintln(o.stderr, "xdnarun:", err)
			continue
		}
		if stopped {
			fmt.Fprint(o.stdout, " [stopped]")
		}
		if _, err := fmt.Fprintln(o.stdout); err != nil {
			return outErr(err)
		}
	}
}

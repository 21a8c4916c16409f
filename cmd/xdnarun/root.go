package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/xdna-go/xdna/runtime/sample"
	"github.com/xdna-go/xdna/runtime/tokenizer"
)

type genOptions struct {
	loadOptions
	prompt     string
	promptSet  bool
	n          int
	sp         sample.Params
	seed       int64
	json       bool
	topLogits  int
	stdin      io.Reader
	stdout     io.Writer
	stderr     io.Writer
	isTerminal bool
}

func addLoadFlags(cmd *cobra.Command, o *loadOptions) {
	f := cmd.Flags()
	f.IntVarP(&o.threads, "threads", "t", runtime.NumCPU(), "CPU threads")
	f.IntVarP(&o.ctx, "ctx-size", "c", 0, "context size in tokens (0: the model's, at most 4096)")
	f.StringVar(&o.device, "device", "auto", "where planned matrices run: auto (npu if found, else cpu), cpu, emu (emulated NPU) or npu")
	f.StringVar(&o.emuFault, "emu-fault", "", "inject a fault into the emulator: DISPATCH:KIND (timeout, error, or a wrong stream: txn-opcode, txn-gen, txn-bd, txn-length, txn-patch)")
	f.MarkHidden("emu-fault")
}

func newRootCmd() *cobra.Command {
	o := &genOptions{}
	cmd := &cobra.Command{
		Use:   "xdnarun MODEL.xdna -p PROMPT",
		Short: "Run an .xdna language model: generate, chat, tokenize, perplexity, bench",
		Long: `xdnarun maps an .xdna package made by xdnapack and generates text from it,
reading the packed weights in place. With -p it continues the prompt and streams
the text to stdout (speed to stderr at the end). Without -p, on a terminal, it
starts a chat using the model's chat template (Ctrl-C stops a reply, Ctrl-D
leaves); with stdin not a terminal, stdin is the prompt.`,
		Example: `  xdnarun model.xdna -p "Once upon a time" -n 64
  xdnarun model.xdna -p "Once upon a time" --temp 0 --json --top-logits 8
  xdnarun model.xdna                       # chat
  xdnarun tokenize model.xdna "Hello world"
  xdnarun perplexity model.xdna -f text.txt -c 128
  xdnarun bench model.xdna -p 128 -n 64 -r 3`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.promptSet = cmd.Flags().Changed("prompt")
			o.stdout, o.stderr, o.stdin = cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin()
			o.warn = o.stderr
			if f, ok := o.stdin.(*os.File); ok {
				o.isTerminal = term.IsTerminal(int(f.Fd()))
			}
			o.sp.Seed = uint64(o.seed)
			if o.seed < 0 {
				o.sp.Seed = uint64(time.Now().UnixNano())
			}
			return runGenerate(cmd.Context(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.prompt, "prompt", "p", "", "prompt to continue")
	f.IntVarP(&o.n, "n-predict", "n", -1, "tokens to generate (-1: until end of text or the context is full)")
	f.Float32Var(&o.sp.Temp, "temp", 0.8, "temperature (0: greedy)")
	f.IntVar(&o.sp.TopK, "top-k", 40, "keep the K most likely tokens (0: off)")
	f.Float32Var(&o.sp.TopP, "top-p", 0.95, "keep the smallest set of tokens whose probability sums to P (1: off)")
	f.Float32Var(&o.sp.MinP, "min-p", 0.05, "drop tokens less likely than P times the most likely (0: off)")
	f.Float32Var(&o.sp.RepeatPenalty, "repeat-penalty", 1.0, "penalise tokens seen in the last --repeat-last-n (1: off)")
	f.IntVar(&o.sp.RepeatLastN, "repeat-last-n", 64, "window of the repeat penalty")
	f.Int64Var(&o.seed, "seed", -1, "random seed (-1: from the clock)")
	f.BoolVar(&o.json, "json", false, "print one JSON object: prompt tokens, steps with top logits, text")
	f.IntVar(&o.topLogits, "top-logits", 0, "with --json, the K largest logits of each step")
	addLoadFlags(cmd, &o.loadOptions)
	cmd.AddCommand(newTokenizeCmd(), newPerplexityCmd(), newBenchCmd(), newProbeCmd())
	return cmd
}

func runGenerate(ctx context.Context, path string, o *genOptions) error {
	if o.n < -1 {
		return fmt.Errorf("-n %d: want -1 or more", o.n)
	}
	if o.topLogits < 0 || o.topLogits > 1000 {
		return fmt.Errorf("--top-logits %d: want 0..1000", o.topLogits)
	}
	if o.topLogits > 0 && !o.json {
		return fmt.Errorf("--top-logits needs --json")
	}
	if err := o.sp.Validate(); err != nil {
		return err
	}
	chat := false
	if !o.promptSet {
		if o.isTerminal {
			chat = true
		} else {
			b, err := io.ReadAll(io.LimitReader(o.stdin, 64<<20))
			if err != nil {
				return fmt.Errorf("reading the prompt from stdin: %w", err)
			}
			o.prompt = string(b)
		}
	}
	if !chat && o.prompt == "" {
		return errors.New("empty prompt: give -p PROMPT")
	}
	l, err := load(path, o.loadOptions)
	if err != nil {
		return err
	}
	defer l.Close()
	if chat {
		return runChat(ctx, l, o)
	}
	tokens := l.tok.Encode(o.prompt, true)
	if len(tokens) == 0 {
		return errors.New("empty prompt: it encodes to no tokens")
	}
	if len(tokens) >= l.ctx {
		return fmt.Errorf("prompt of %d tokens does not fit the context of %d (-c)", len(tokens), l.ctx)
	}
	res, err := generate(ctx, l, tokens, o, o.stdout)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(o.stdout)
		return enc.Encode(res)
	}
	fmt.Fprintln(o.stdout)
	res.report(o.stderr, o.threads)
	return nil
}

type step struct {
	Token int32        `json:"token"`
	Piece string       `json:"piece"`
	Top   [][2]float64 `json:"top,omitempty"`
}

type result struct {
	PromptTokens []int32 `json:"prompt_tokens"`
	Steps        []step  `json:"steps"`
	Text         string  `json:"text"`
	prefill      time.Duration
	decode       time.Duration
	device       string
}

func (r *result) report(w io.Writer, threads int) {
	pp := float64(len(r.PromptTokens)) / r.prefill.Seconds()
	fmt.Fprintf(w, "prompt: %d tokens in %.1f ms (%.1f tok/s); generated: %d tokens", len(r.PromptTokens), ms(r.prefill), pp, len(r.Steps))
	if len(r.Steps) > 1 {
		fmt.Fprintf(w, " in %.1f ms (%.1f tok/s)", ms(r.decode), float64(len(r.Steps)-1)/r.decode.Seconds())
	}
	fmt.Fprintf(w, "; device %s, %d threads\n", r.device, threads)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// generate prefills tokens and samples up to o.n tokens, streaming the text
// to out unless o.json. It stops at an end-of-generation token, at the
// context's end, or when ctx is cancelled.
func generate(ctx context.Context, l *loaded, tokens []int32, o *genOptions, out io.Writer) (*result, error) {
	res := &result{PromptTokens: tokens, device: l.device}
	st := l.model.NewState(l.ctx)
	smp := sample.New(o.sp)
	t0 := time.Now()
	logits, err := st.Prefill(tokens)
	if err != nil {
		return nil, err
	}
	res.prefill = time.Since(t0)
	history := append([]int32(nil), tokens...)
	var text []byte
	pending := 0 // bytes of text not yet written (an incomplete UTF-8 sequence)
	t1 := time.Now()
	for i := 0; o.n < 0 || i < o.n; i++ {
		if ctx.Err() != nil {
			break
		}
		var top [][2]float64
		if o.json && o.topLogits > 0 {
			top = topK(logits, o.topLogits)
		}
		tok := smp.Sample(logits, history)
		if l.tok.IsEOG(tok) {
			break
		}
		piece := l.tok.Piece(tok)
		res.Steps = append(res.Steps, step{Token: tok, Piece: piece, Top: top})
		history = append(history, tok)
		text = append(text, piece...)
		if !o.json {
			end := len(text)
			for end > pending && !utf8.Valid(text[pending:end]) {
				end--
			}
			if end > pending {
				out.Write(text[pending:end])
				pending = end
			}
		}
		if st.Pos() >= l.ctx || (o.n >= 0 && i+1 >= o.n) {
			break
		}
		if i == 0 {
			t1 = time.Now()
		}
		if logits, err = st.Decode(tok); err != nil {
			return nil, err
		}
	}
	res.decode = time.Since(t1)
	if !o.json && pending < len(text) {
		out.Write(text[pending:])
	}
	res.Text = string(text)
	return res, nil
}

// topK returns the k largest logits, largest first (ties: lower id first).
func topK(logits []float32, k int) [][2]float64 {
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	k = min(k, len(idx))
	out := make([][2]float64, k)
	for i := 0; i < k; i++ {
		out[i] = [2]float64{float64(idx[i]), float64(logits[idx[i]])}
	}
	return out
}

func runChat(ctx context.Context, l *loaded, o *genOptions) error {
	fmt.Fprintf(o.stderr, "chat with %s (%s); Ctrl-C stops a reply, Ctrl-D leaves\n", l.file.Manifest.Model.Name, l.file.Manifest.Model.Arch)
	var msgs []tokenizer.Message
	in := bufio.NewScanner(o.stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for {
		fmt.Fprint(o.stdout, "\n> ")
		if !in.Scan() {
			fmt.Fprintln(o.stdout)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		msgs = append(msgs, tokenizer.Message{Role: "user", Content: line})
		prompt, err := l.tok.ChatPrompt(msgs, true)
		if err != nil {
			return err
		}
		tokens := l.tok.Encode(prompt, true)
		if len(tokens) >= l.ctx {
			fmt.Fprintf(o.stderr, "the conversation (%d tokens) no longer fits the context of %d; starting afresh\n", len(tokens), l.ctx)
			msgs = msgs[len(msgs)-1:]
			prompt, _ = l.tok.ChatPrompt(msgs, true)
			tokens = l.tok.Encode(prompt, true)
			if len(tokens) >= l.ctx {
				msgs = nil
				fmt.Fprintln(o.stderr, "that message alone does not fit the context")
				continue
			}
		}
		// Ctrl-C during a reply stops the reply, not the program.
		rctx, cancel := signal.NotifyContext(ctx, os.Interrupt)
		res, err := generate(rctx, l, tokens, o, o.stdout)
		interrupted := rctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil {
			return err
		}
		if interrupted {
			fmt.Fprintln(o.stderr, "\n[stopped]")
		}
		msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: strings.TrimSpace(res.Text)})
		fmt.Fprintln(o.stdout)
	}
}

func newTokenizeCmd() *cobra.Command {
	var noBOS bool
	var lo loadOptions
	cmd := &cobra.Command{
		Use:           "tokenize MODEL.xdna TEXT",
		Short:         "Print the token ids of TEXT, on one line",
		Args:          cobra.ExactArgs(2),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := load(args[0], lo)
			if err != nil {
				return err
			}
			defer l.Close()
			ids := l.tok.Encode(args[1], true)
			if noBOS {
				ids = l.tok.EncodeRaw(args[1], true)
			}
			s := make([]string, len(ids))
			for i, id := range ids {
				s[i] = fmt.Sprint(id)
			}
			fmt.Fprintln(cmd.OutOrStdout(), strings.Join(s, " "))
			return nil
		},
	}
	cmd.Flags().BoolVar(&noBOS, "no-bos", false, "do not add the BOS token")
	addLoadFlags(cmd, &lo)
	return cmd
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/xdna-go/xdna/cmd/internal/cli"
	"github.com/xdna-go/xdna/runtime/cpu"
	"github.com/xdna-go/xdna/runtime/engine"
	"github.com/xdna-go/xdna/runtime/sample"
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

	file         string // -f: the prompt's file
	model        string // -m: the model, in place of the argument
	system       string // chat: the system message
	chatTemplate string // chat: a family name or a template file
	interactive  bool   // -i: chat whatever stdin is
	llama        llamaFlags
	// interrupt, if set, delivers the chat's Ctrl-C (tests); else SIGINT does.
	interrupt chan struct{}
}

func addLoadFlags(cmd *cobra.Command, o *loadOptions) {
	f := cmd.Flags()
	f.IntVarP(&o.threads, "threads", "t", runtime.NumCPU(), "CPU threads")
	f.IntVarP(&o.ctx, "ctx-size", "c", 0, "context size in tokens (0: the model's, at most 4096)")
	f.StringVar(&o.device, "device", "auto", "where planned matrices run: auto (npu if found, else cpu), cpu, emu (emulated NPU, Go kernel model), sim (emulated NPU running the AIE kernel sources; a -tags sim build) or npu")
	f.StringVar(&o.kernels, "cpu-kernels", "best", "CPU kernel set for the quantised matrices: best (the fastest this CPU runs), or one of "+strings.Join(cpu.Levels(), ", ")+" (all give the same bits)")
	f.StringVar(&o.resident, "npu-resident", "0", "pin budget for weights kept resident on the NPU (no host copy per token): 0 (stream every matrix through the 2 x 64 MiB ring), a size such as 512M or 2G, or auto (half of what can be pinned here: available memory, cgroup limit, ulimit -l)")
	f.BoolVar(&o.noMmap, "no-mmap", false, "on the CPU, read the weights into memory on huge pages in place of multiplying them from the mapped package (llama.cpp's flag; more memory)")
	f.StringVar(&o.emuFault, "emu-fault", "", "inject a fault into the emulator: DISPATCH:KIND (timeout, error, or a wrong stream: txn-opcode, txn-gen, txn-bd, txn-length, txn-patch)")
	f.MarkHidden("emu-fault")
}

// Version names this program in --version.
const Version = "xdnarun 0.1.0"

func newRootCmd() *cobra.Command {
	o := &genOptions{}
	cmd := &cobra.Command{
		Use:   "xdnarun MODEL.xdna -p PROMPT",
		Short: "Run an .xdna language model: generate, chat, tokenize, perplexity, bench",
		Long: `xdnarun maps an .xdna package made by xdnapack and generates text from it,
reading the packed weights in place (--no-mmap: on the CPU, from a copy in
memory). With -p (or -f FILE) it continues the prompt
and streams the text to stdout (speed to stderr at the end). Without a prompt, on
a terminal (or with -i), it starts a chat using the model's chat template
(Ctrl-C stops a reply, Ctrl-C at the prompt or Ctrl-D leaves); with stdin not a
terminal, stdin is the prompt. A GGUF file is packed once into the cache
($XDG_CACHE_HOME/xdna/gguf) and run from there.`,
		Example: `  xdnarun model.xdna -p "Once upon a time" -n 64
  xdnarun model.xdna -p "Once upon a time" --temp 0 --json --top-logits 8
  xdnarun model.xdna                       # chat
  xdnarun model.gguf -sys "You are terse"  # chat; the GGUF is packed once into the cache
  xdnarun tokenize model.xdna "Hello world"
  xdnarun perplexity model.xdna -f text.txt -c 128
  xdnarun bench model.xdna -p 128 -n 64 -r 3`,
		Version:       Version,
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := modelArg(args, o.model)
			if err != nil {
				return err
			}
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
			if err := o.llama.check(cmd, o.stderr); err != nil {
				return err
			}
			o.flashAttn = o.llama.flashAttn != "off"
			return runGenerate(cmd.Context(), path, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.prompt, "prompt", "p", "", "prompt to continue")
	f.StringVarP(&o.file, "file", "f", "", "read the prompt from this file")
	f.StringVarP(&o.model, "model", "m", "", "the model (.xdna, .xdna.zst or .gguf), in place of the argument")
	f.StringVar(&o.system, "system", "", "chat: the system message (llama.cpp: -sys)")
	f.StringVar(&o.chatTemplate, "chat-template", "", "chat: a template family name as llama.cpp's (chatml, llama3, ...) or a file holding a Jinja template (default: the model's)")
	f.BoolVarP(&o.interactive, "interactive", "i", false, "chat even when stdin is not a terminal")
	f.BoolVar(&o.interactive, "conversation", false, "chat (llama.cpp: -cnv); the same as -i")
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
	o.llama.add(cmd)
	cmd.SetVersionTemplate("{{.Version}}\n")
	cmd.AddCommand(newTokenizeCmd(), newPerplexityCmd(), newBenchCmd(), newProbeCmd(), newDoctorCmd(), newSelftestCmd(), newCalibrateCmd())
	addServeCommands(cmd)
	return cmd
}

// modelArg returns the model path from the argument or -m, not both.
func modelArg(args []string, model string) (string, error) {
	switch {
	case len(args) == 1 && model != "" && model != args[0]:
		return "", fmt.Errorf("two models: %s and -m %s", args[0], model)
	case len(args) == 1:
		return args[0], nil
	case model != "":
		return model, nil
	}
	return "", errors.New("no model: give MODEL.xdna (or -m MODEL)")
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
	if o.file != "" {
		if o.promptSet {
			return errors.New("-p and -f: give the prompt one way")
		}
		b, err := readCapped(o.file, 64<<20)
		if err != nil {
			return fmt.Errorf("-f: %w", err)
		}
		o.prompt, o.promptSet = string(b), true
	}
	chat := o.interactive
	if chat && o.promptSet {
		return errors.New("-i with a prompt: the chat takes its messages from stdin (a system message: --system)")
	}
	if chat && o.json {
		return errors.New("--json is for -p, not the chat")
	}
	if !o.promptSet && !chat {
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
	if !chat && (o.system != "" || o.chatTemplate != "") {
		return errors.New("--system and --chat-template are for the chat (-i)")
	}
	if !chat && o.prompt == "" {
		return errors.New("empty prompt: give -p PROMPT")
	}
	var tmpl string
	if chat {
		// Before loading: a template that cannot be used is said at once.
		var err error
		if tmpl, err = chatTemplateArg(o.chatTemplate); err != nil {
			return err
		}
	}
	l, err := load(ctx, path, o.loadOptions)
	if err != nil {
		return err
	}
	defer l.Close()
	if chat {
		c, err := newChat(l, o, tmpl)
		if err != nil {
			return err
		}
		return c.run(ctx)
	}
	tokens := l.tok.Encode(o.prompt, true)
	if len(tokens) == 0 {
		return errors.New("empty prompt: it encodes to no tokens")
	}
	if len(tokens) >= l.ctx {
		return fmt.Errorf("prompt of %d tokens does not fit the context of %d (-c)", len(tokens), l.ctx)
	}
	st := l.model.NewState(l.ctx)
	res, err := generate(ctx, l, st, tokens, tokens, o, o.stdout)
	if err != nil {
		return err
	}
	if o.json {
		if ctx.Err() != nil {
			return cli.Err(ctx)
		}
		if err := json.NewEncoder(o.stdout).Encode(res); err != nil {
			return outErr(err)
		}
		return nil
	}
	if _, err := fmt.Fprintln(o.stdout); err != nil {
		return outErr(err)
	}
	if ctx.Err() != nil {
		return cli.Err(ctx)
	}
	if l.backend != nil {
		st := l.backend.Stats()
		res.npuCalls, res.cpuCalls = st.NPUCalls, st.CPUCalls
	}
	res.report(o.stderr, o.threads)
	return nil
}

// readCapped reads a whole file of at most limit bytes.
func readCapped(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return b, nil
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
	// npuCalls and cpuCalls count the matmul calls of an NPU device's
	// backend (both 0 on the CPU device).
	npuCalls, cpuCalls int64
}

func (r *result) report(w io.Writer, threads int) {
	pp := float64(len(r.PromptTokens)) / r.prefill.Seconds()
	fmt.Fprintf(w, "prompt: %d tokens in %.1f ms (%.1f tok/s); generated: %d tokens", len(r.PromptTokens), ms(r.prefill), pp, len(r.Steps))
	if len(r.Steps) > 1 {
		fmt.Fprintf(w, " in %.1f ms (%.1f tok/s)", ms(r.decode), float64(len(r.Steps)-1)/r.decode.Seconds())
	}
	dev := r.device
	if r.npuCalls+r.cpuCalls > 0 {
		dev = fmt.Sprintf("%s (%d of %d matmul calls on it)", r.device, r.npuCalls, r.npuCalls+r.cpuCalls)
	}
	fmt.Fprintf(w, "; device %s, %d threads\n", dev, threads)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// generate feeds tokens to st from its current position, then samples up
// to o.n tokens, streaming the text to out unless o.json. history is the
// whole sequence so far (tokens included), for the repeat penalty. It
// stops at an end-of-generation token, at the context's end, or when ctx is
// cancelled (returning what it has, without error), and returns an error
// when out fails.
func generate(ctx context.Context, l *loaded, st *engine.State, history, tokens []int32, o *genOptions, out io.Writer) (*result, error) {
	res := &result{PromptTokens: tokens, device: l.device}
	smp := sample.New(o.sp)
	t0 := time.Now()
	logits, err := st.Prefill(tokens)
	if err != nil {
		return nil, err
	}
	res.prefill = time.Since(t0)
	history = slices.Clone(history)
	var text []byte
	var w *utf8Writer
	if !o.json {
		w = &utf8Writer{w: out}
	}
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
		if w != nil {
			if err := w.Write([]byte(piece)); err != nil {
				return nil, err
			}
		}
		if st.Pos() >= st.Context() || (o.n >= 0 && i+1 >= o.n) {
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
	if w != nil {
		if err := w.Flush(); err != nil {
			return nil, err
		}
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
			l, err := load(cmd.Context(), args[0], lo)
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

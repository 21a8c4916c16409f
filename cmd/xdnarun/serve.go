package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/xdna-go/xdna/cmd/internal/cli"
	"github.com/xdna-go/xdna/registry"
	"github.com/xdna-go/xdna/runtime/engine"
	"github.com/xdna-go/xdna/runtime/tokenizer"
	"github.com/xdna-go/xdna/server"
)

type serveOptions struct {
	loadOptions
	host         string
	port         int
	apiKey       string
	parallel     int
	queue        int
	maxBody      int64
	alias        string
	cors         []string // --cors: origins whose pages may call the server ("*": any)
	chatTemplate string
	pull         pullOptions
	stderr       io.Writer
	ready        func(addr string) // test hook: called with the address once listening
	noSignal     bool              // test hook: do not catch SIGINT/SIGTERM
}

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve MODEL.xdna|REF",
		Short: "Serve the model over the OpenAI HTTP API (chat, completions, models; streaming)",
		Long: `serve loads one model and answers the OpenAI HTTP API on --host:--port:
POST /v1/chat/completions (the model's chat template), POST /v1/completions,
GET /v1/models, and GET /health. stream: true sends server-sent events ending
with "data: [DONE]". Greedy output (temperature 0) is the text xdnarun -p gives
for the same prompt. --parallel requests generate at once; up to --queue more
wait, and beyond that requests get 503. It binds to 127.0.0.1 unless --host
says otherwise. SIGINT or SIGTERM stops accepting, lets the requests in flight
finish, then exits; a second signal exits at once. REF (REGISTRY/REPO:TAG) is
pulled into the store first if it is not there yet. --cors ORIGIN lets the web
pages of ORIGIN call the server from a browser (preflight answered, replies
readable); without it a browser refuses cross-origin calls. /v1/models says
what the model is and where it runs (architecture, parameters, quantisation,
context, target, device).`,
		Example: `  xdnarun serve model.xdna --port 8080
  xdnarun serve model.xdna --cors http://localhost:3000 --api-key sk-local
  curl -s localhost:8080/v1/chat/completions -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":16}'`,
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			o.warn = o.stderr
			o.pull.stderr = o.stderr
			o.pull.device = o.device
			return runServe(cmd.Context(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.host, "host", "127.0.0.1", "address to bind (another than loopback exposes the model to the network)")
	f.IntVar(&o.port, "port", 8080, "TCP port (0: any free port)")
	f.StringVar(&o.apiKey, "api-key", os.Getenv("XDNA_API_KEY"), "require \"Authorization: Bearer KEY\" on /v1 (default $XDNA_API_KEY)")
	f.IntVar(&o.parallel, "parallel", 1, "requests generating at once")
	f.IntVar(&o.queue, "queue", 16, "requests that may wait for a slot; more get 503")
	f.Int64Var(&o.maxBody, "max-body", 1<<20, "request body limit in bytes; larger get 413")
	f.StringVar(&o.chatTemplate, "chat-template", "", "a template family name as llama.cpp's (chatml, llama3, ...) or a file holding a Jinja template (default: the model's)")
	f.StringArrayVar(&o.cors, "cors", nil, "let web pages of ORIGIN (http://localhost:3000, or * for any) call the server from a browser; repeatable (default: none)")
	f.StringVar(&o.alias, "alias", "", "model id served by /v1/models (default: the file name or REF)")
	f.BoolVar(&o.pull.plainHTTP, "plain-http", false, "pull REF over plain HTTP (loopback registries need no flag)")
	addLoadFlags(cmd, &o.loadOptions)
	return cmd
}

func runServe(ctx context.Context, arg string, o *serveOptions) error {
	if o.parallel < 1 || o.parallel > 64 {
		return fmt.Errorf("--parallel %d: want 1..64", o.parallel)
	}
	if o.queue < 0 || o.queue > 4096 {
		return fmt.Errorf("--queue %d: want 0..4096", o.queue)
	}
	if o.maxBody < 1024 {
		return fmt.Errorf("--max-body %d: want at least 1024 bytes", o.maxBody)
	}
	if o.port < 0 || o.port > 65535 {
		return fmt.Errorf("--port %d: want 0..65535", o.port)
	}
	for _, c := range o.cors {
		if err := server.CheckOrigin(c); err != nil {
			return fmt.Errorf("--cors: %w", err)
		}
	}
	path, err := resolveModel(ctx, arg, &o.pull)
	if err != nil {
		return err
	}
	id := o.alias
	if id == "" {
		id = arg
		if path == arg {
			id = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(arg), ".zst"), ".xdna")
		}
	}
	tmpl, err := chatTemplateArg(o.chatTemplate)
	if err != nil {
		return err
	}
	l, err := load(ctx, path, o.loadOptions)
	if err != nil {
		return err
	}
	defer l.Close()
	if l.tok == nil {
		return fmt.Errorf("%s: the package holds no tokenizer", arg)
	}
	// Every slot holds a state of the whole context: check they all fit.
	if need, err := l.model.StateBytes(l.ctx); err == nil {
		if avail, src := availableMemory(); avail > 0 && need*int64(o.parallel) > avail {
			return fmt.Errorf("--parallel %d -c %d: needs %s for the KV caches; %s has %s", o.parallel, l.ctx, cli.Human(need*int64(o.parallel)), src, cli.Human(avail))
		}
	}
	b := &serveBackend{l: l, tmpl: tmpl, states: make(chan *engine.State, o.parallel)}
	if b.tmpl == "" {
		name, ok := tokenizer.DetectTemplate(l.tok.Vocab().ChatTemplate)
		if ok {
			b.tmpl = name
		} else {
			fmt.Fprintf(o.stderr, "xdnarun: no chat template family fits the model's; /v1/chat/completions will refuse (name one with --chat-template)\n")
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("--host %s --port %d: %w", o.host, o.port, err)
	}
	if ip := net.ParseIP(o.host); o.host != "localhost" && (ip == nil || !ip.IsLoopback()) && o.apiKey == "" {
		fmt.Fprintf(o.stderr, "xdnarun: serving on %s without --api-key: anyone who reaches this address can use the model\n", o.host)
	}
	if slices.Contains(o.cors, "*") && o.apiKey == "" {
		fmt.Fprintf(o.stderr, "xdnarun: --cors * without --api-key: any web page open in a browser on this machine can use the model\n")
	}
	s := server.New(b, server.Config{
		Model: id, APIKey: o.apiKey, Parallel: o.parallel, Queue: o.queue, MaxBody: o.maxBody, Log: o.stderr,
		CORS: o.cors, Info: modelInfo(l),
	})
	addr := ln.Addr().String()
	fmt.Fprintf(o.stderr, "serving %s on http://%s (device %s, context %d, %d parallel, queue %d)\n", id, addr, l.device, l.ctx, o.parallel, o.queue)

	// SIGINT or SIGTERM starts the drain; a second one exits at once.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	if !o.noSignal {
		sig := make(chan os.Signal, 2)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		finished := make(chan struct{})
		defer func() { signal.Stop(sig); close(finished) }()
		go func() {
			for n := 1; ; n++ {
				select {
				case s := <-sig:
					if n > 1 {
						fmt.Fprintf(o.stderr, "xdnarun: %v: exiting without draining\n", s)
						os.Exit(130)
					}
					stop()
				case <-finished:
					return
				}
			}
		}()
	}
	if o.ready != nil {
		o.ready(addr)
	}
	draining := func() {
		st := s.Stats()
		fmt.Fprintf(o.stderr, "xdnarun: stopping: draining %d requests in flight and %d queued (a second SIGINT or SIGTERM exits at once)\n", st.Active, st.Waiting)
	}
	if err := server.Serve(sctx, ln, s, draining); err != nil {
		return err
	}
	st := s.Stats()
	fmt.Fprintf(o.stderr, "xdnarun: stopped after %d requests, %d tokens\n", st.Served, st.Tokens)
	return nil
}

// modelInfo is what /v1/models says of the loaded model.
func modelInfo(l *loaded) server.ModelInfo {
	m := l.file.Manifest
	a := registry.Annotations(m)
	n, _ := strconv.ParseInt(a[registry.AnnotationParameters], 10, 64)
	return server.ModelInfo{
		Architecture: a[registry.AnnotationArch], Parameters: n, Quantisation: a[registry.AnnotationQuantisation],
		ContextLength: l.ctx, Target: m.Package.Target, Device: l.device,
	}
}

// serveBackend generates with the same code as xdnarun -p. It keeps one
// State per slot (at most --parallel), emptied between requests.
type serveBackend struct {
	l      *loaded
	tmpl   string // chat template family; "": chat refused
	states chan *engine.State
}

func (b *serveBackend) ChatPrompt(msgs []tokenizer.Message) (string, error) {
	if b.tmpl == "" {
		return "", fmt.Errorf("the model's chat template: %w (no family of llama.cpp's fits it; start serve with --chat-template)", tokenizer.ErrUnsupported)
	}
	return tokenizer.ApplyTemplate(b.tmpl, msgs, true)
}

func (b *serveBackend) Generate(ctx context.Context, g server.Generation, w io.Writer) (server.Result, error) {
	tokens := b.l.tok.Encode(g.Prompt, true)
	r := server.Result{PromptTokens: len(tokens)}
	if len(tokens) == 0 {
		return r, fmt.Errorf("%w: the prompt encodes to no tokens", server.ErrPrompt)
	}
	if len(tokens) >= b.l.ctx {
		return r, fmt.Errorf("%w: prompt of %d tokens does not fit the context of %d (-c)", server.ErrPrompt, len(tokens), b.l.ctx)
	}
	var st *engine.State
	select {
	case st = <-b.states:
		st.Truncate(0)
	default:
		st = b.l.model.NewState(b.l.ctx)
	}
	defer func() {
		select {
		case b.states <- st:
		default:
		}
	}()
	res, err := generate(ctx, b.l, st, tokens, tokens, &genOptions{n: g.MaxTokens, sp: g.Params}, w)
	if err != nil {
		return r, err
	}
	n := len(res.Steps)
	r.CompletionTokens = n
	// generate stops after n tokens at -n, or when the token just made sits
	// at the last position of the context (see its loop).
	r.Length = (g.MaxTokens >= 0 && n >= g.MaxTokens) || (n > 0 && len(tokens)+n-1 >= b.l.ctx)
	return r, nil
}

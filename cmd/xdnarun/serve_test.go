package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// syncBuffer is a bytes.Buffer safe for the server's log and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type testServer struct {
	url    string
	log    *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// startServe runs `xdnarun serve` in this process on a free loopback port.
func startServe(t *testing.T, model string, edit func(*serveOptions)) *testServer {
	t.Helper()
	o := &serveOptions{host: "127.0.0.1", parallel: 1, queue: 16, maxBody: 1 << 20, noSignal: true}
	o.threads, o.device = 2, "cpu"
	if edit != nil {
		edit(o)
	}
	ts := &testServer{log: &syncBuffer{}, done: make(chan error, 1)}
	o.stderr, o.warn = ts.log, ts.log
	ready := make(chan string, 1)
	o.ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	ts.cancel = cancel
	go func() { ts.done <- runServe(ctx, model, o) }()
	select {
	case addr := <-ready:
		ts.url = "http://" + addr
	case err := <-ts.done:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) stop() {
	if ts.cancel != nil {
		ts.cancel()
		<-ts.done
		ts.cancel = nil
	}
}

func (ts *testServer) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(ts.url + "/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0)}, opts...)...)
}

// cliText is what `xdnarun MODEL -p PROMPT args...` prints, without the
// final newline.
func cliText(t *testing.T, model, prompt string, args ...string) string {
	t.Helper()
	out, _, err := run(t, "", append([]string{model, "-p", prompt, "-t", "2", "--device", "cpu"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(out, "\n")
}

func completion(t *testing.T, c openai.Client, p openai.CompletionNewParams) (string, *openai.Completion) {
	t.Helper()
	r, err := c.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r.Choices[0].Text, r
}

func streamCompletion(t *testing.T, c openai.Client, p openai.CompletionNewParams) string {
	t.Helper()
	s := c.Completions.NewStreaming(context.Background(), p)
	var b strings.Builder
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 {
			b.WriteString(ch.Choices[0].Text)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func streamChat(t *testing.T, c openai.Client, p openai.ChatCompletionNewParams) (string, string, openai.CompletionUsage) {
	t.Helper()
	s := c.Chat.Completions.NewStreaming(context.Background(), p)
	var b strings.Builder
	var finish string
	var u openai.CompletionUsage
	for s.Next() {
		ch := s.Current()
		if len(ch.Choices) > 0 {
			b.WriteString(ch.Choices[0].Delta.Content)
			if ch.Choices[0].FinishReason != "" {
				finish = string(ch.Choices[0].FinishReason)
			}
		}
		if ch.Usage.TotalTokens > 0 {
			u = ch.Usage
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String(), finish, u
}

// TestServeOpenAI talks to the server with the official Go SDK: models,
// completions and chat, whole and streamed, greedy and seeded, each
// compared with what xdnarun -p prints for the same prompt and settings.
func TestServeOpenAI(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	ts := startServe(t, x, nil)
	c := ts.client()
	ctx := context.Background()

	models, err := c.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "stories260K-q4_0.xdna2.256" {
		t.Fatalf("models: %v %+v", err, models)
	}
	model := models.Data[0].ID

	const prompt = "Once upon a time"
	want := cliText(t, x, prompt, "-n", "24", "--temp", "0")
	if !strings.HasPrefix(want, ", there was a little girl") {
		t.Fatalf("xdnarun -p gives %q", want)
	}
	greedy := openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(model), Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(24), Temperature: openai.Float(0)}
	got, r := completion(t, c, greedy)
	if got != want {
		t.Errorf("completion (greedy):\n%q\nxdnarun -p:\n%q", got, want)
	}
	ids, _, _ := run(t, "", "tokenize", x, prompt)
	if np := len(strings.Fields(ids)); r.Usage.PromptTokens != int64(np) || r.Usage.CompletionTokens != 24 || r.Usage.TotalTokens != int64(np+24) || r.Choices[0].FinishReason != "length" {
		t.Errorf("usage %+v (prompt %d tokens), finish %q", r.Usage, np, r.Choices[0].FinishReason)
	}
	t.Logf("completion, greedy, 24 tokens: %q", got)
	if got := streamCompletion(t, c, greedy); got != want {
		t.Errorf("streamed completion (greedy):\n%q\nwant\n%q", got, want)
	}

	// Sampled with a seed: the same text as xdnarun -p with that seed
	// (unset fields take xdnarun's defaults: temp 0.8, top-k 40, top-p 0.95, min-p 0.05).
	wantSeed := cliText(t, x, prompt, "-n", "24", "--seed", "42", "--temp", "1.1", "--top-p", "0.9")
	seeded := greedy
	seeded.Temperature, seeded.TopP, seeded.Seed = openai.Float(1.1), openai.Float(0.9), openai.Int(42)
	if got, _ := completion(t, c, seeded); got != wantSeed {
		t.Errorf("completion (seed 42):\n%q\nxdnarun -p --seed 42:\n%q", got, wantSeed)
	}
	if got := streamCompletion(t, c, seeded); got != wantSeed {
		t.Errorf("streamed completion (seed 42):\n%q\nwant\n%q", got, wantSeed)
	}
	if wantSeed == want {
		t.Errorf("sampling at temperature 1.1 gave the greedy text")
	}

	// Chat: the prompt is the model's template (ChatML for stories260K,
	// which has none), so xdnarun -p with that text gives the same reply.
	chatPrompt := "<|im_start|>user\nOnce upon a time<|im_end|>\n<|im_start|>assistant\n"
	wantChat := cliText(t, x, chatPrompt, "-n", "20", "--temp", "0")
	cp := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
		MaxTokens: openai.Int(20), Temperature: openai.Float(0)}
	cr, err := c.Chat.Completions.New(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	if got := cr.Choices[0].Message.Content; got != wantChat || cr.Choices[0].Message.Role != "assistant" || cr.Object != "chat.completion" {
		t.Errorf("chat: %q (%s), xdnarun -p: %q", got, cr.Choices[0].Message.Role, wantChat)
	}
	cp.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	gotChat, finish, u := streamChat(t, c, cp)
	if gotChat != wantChat || finish != "length" || u.CompletionTokens != 20 || u.PromptTokens != cr.Usage.PromptTokens {
		t.Errorf("streamed chat: %q finish %q usage %+v; want %q, length, 20 tokens", gotChat, finish, u, wantChat)
	}
	t.Logf("chat, greedy, 20 tokens: %q", gotChat)

	// A stop sequence cuts the text before it.
	stop := greedy
	stop.Stop = openai.CompletionNewParamsStopUnion{OfString: openai.String("little")}
	if got, r := completion(t, c, stop); got != ", there was a " || r.Choices[0].FinishReason != "stop" {
		t.Errorf("stop \"little\": %q, %s", got, r.Choices[0].FinishReason)
	}

	// Errors through the SDK: status, type and code.
	var apiErr *openai.Error
	bad := greedy
	bad.Model = "no-such-model"
	_, err = c.Completions.New(ctx, bad)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: %v", err)
	}
	bad = greedy
	bad.Temperature = openai.Float(5)
	_, err = c.Completions.New(ctx, bad)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" || apiErr.Param != "temperature" {
		t.Errorf("temperature 5: %v", err)
	}
	long := greedy
	long.Prompt = openai.CompletionNewParamsPromptUnion{OfString: openai.String(strings.Repeat("Once upon a time ", 600))}
	_, err = c.Completions.New(ctx, long)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" {
		t.Errorf("prompt past the context: %v", err)
	}
	huge := greedy
	huge.Prompt = openai.CompletionNewParamsPromptUnion{OfString: openai.String(strings.Repeat("x", 2<<20))}
	_, err = c.Completions.New(ctx, huge)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 413 || apiErr.Code != "request_too_large" {
		t.Errorf("2 MiB body: %v", err)
	}
	t.Logf("server log:\n%s", ts.log)
}

// TestServeAPIKey: with --api-key, a wrong key is 401, the right one works.
func TestServeAPIKey(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	ts := startServe(t, x, func(o *serveOptions) { o.apiKey = "sesame" })
	var apiErr *openai.Error
	cw := ts.client(option.WithAPIKey("wrong"))
	_, err := cw.Models.List(context.Background())
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
		t.Errorf("wrong key: %v", err)
	}
	cr := ts.client(option.WithAPIKey("sesame"))
	if _, err := cr.Models.List(context.Background()); err != nil {
		t.Errorf("right key: %v", err)
	}
}

// longGen is a completion that runs long enough on stories260K (until the
// 4096-token context is full) to be caught in flight.
func longGen(model string) openai.CompletionNewParams {
	return openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(model), Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(4000), Temperature: openai.Float(0)}
}

// TestServeDisconnect: a streaming client that goes away stops its
// generation at once (the server logs how far it got).
func TestServeDisconnect(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	ts := startServe(t, x, func(o *serveOptions) { o.ctx = 4096; o.alias = "m" })
	ctx, cancel := context.WithCancel(context.Background())
	c := ts.client()
	s := c.Completions.NewStreaming(ctx, longGen("m"))
	if !s.Next() {
		t.Fatalf("no first chunk: %v", s.Err())
	}
	cancel()
	s.Close()
	t0 := time.Now()
	for !strings.Contains(ts.log.String(), "client left after") {
		if time.Since(t0) > 5*time.Second {
			t.Fatalf("the generation did not stop; log:\n%s", ts.log)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("stopped %.1f ms after the client left: %s", ms(time.Since(t0)), strings.TrimSpace(ts.log.String()))
	var n int
	fmt.Sscanf(ts.log.String()[strings.Index(ts.log.String(), "client left after")+len("client left after "):], "%d", &n)
	if n >= 4000 {
		t.Errorf("generated all %d tokens for a client that left", n)
	}
}

// TestServeSIGTERM sends SIGTERM to this process while a stream is in
// flight: the server stops accepting, the stream runs to its end, serve
// returns nil.
func TestServeSIGTERM(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	ts := startServe(t, x, func(o *serveOptions) { o.ctx = 4096; o.alias = "m"; o.noSignal = false })
	p := longGen("m")
	p.MaxTokens = openai.Int(1500)
	c := ts.client()
	s := c.Completions.NewStreaming(context.Background(), p)
	if !s.Next() {
		t.Fatalf("no first chunk: %v", s.Err())
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(ts.log.String(), "draining") {
		time.Sleep(time.Millisecond)
	}
	if _, err := http.Get(ts.url + "/health"); err == nil {
		t.Error("a new connection was accepted while draining")
	}
	chunks := 1
	var finish string
	for s.Next() {
		chunks++
		if ch := s.Current(); len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
			finish = string(ch.Choices[0].FinishReason)
		}
	}
	if err := s.Err(); err != nil || finish != "length" {
		t.Errorf("drained stream: %v, finish %q", err, finish)
	}
	if err := <-ts.done; err != nil {
		t.Errorf("serve: %v", err)
	}
	ts.cancel = nil
	t.Logf("%d chunks after SIGTERM; log:\n%s", chunks, ts.log)
	if chunks < 100 {
		t.Errorf("only %d chunks: the stream ended before the signal could be drained", chunks)
	}
}

// TestServeLoad: 16 concurrent streaming requests with --parallel 2 on
// loopback; every one completes with the text xdnarun -p gives; no
// goroutine is left behind. It logs first-token and total latency per
// request and the process's peak RSS (server and clients together).
func TestServeLoad(t *testing.T) {
	// XDNA_SERVE_URL, XDNA_SERVE_MODEL, XDNA_SERVE_PID: load a server run
	// apart (xdnarun serve MODEL --parallel 2 --alias m) and report its
	// peak RSS instead of this process's.
	x, url, pid := os.Getenv("XDNA_SERVE_MODEL"), os.Getenv("XDNA_SERVE_URL"), os.Getenv("XDNA_SERVE_PID")
	if x == "" {
		x = packFixture(t, "stories260K-q4_0")
	}
	prompts := []string{"Once upon a time", "The little dog", "Pierre said that", "One day, a big bear found a"}
	want := map[string]string{}
	for _, p := range prompts {
		want[p] = cliText(t, x, p, "-n", "64", "--temp", "0")
	}
	before := runtime.NumGoroutine()
	ts := &testServer{url: url}
	if url == "" {
		ts = startServe(t, x, func(o *serveOptions) { o.parallel = 2; o.alias = "m" })
	}
	tr := &http.Transport{}
	c := ts.client(option.WithHTTPClient(&http.Client{Transport: tr}))
	type lat struct {
		first, total time.Duration
		chunks       int
		prompt       string
		err          error
	}
	res := make([]lat, 16)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := prompts[i%len(prompts)]
			res[i].prompt = p
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: "m", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(p)},
				MaxTokens: openai.Int(64), Temperature: openai.Float(0)})
			var b strings.Builder
			for s.Next() {
				if ch := s.Current(); len(ch.Choices) > 0 && ch.Choices[0].Text != "" {
					if res[i].chunks == 0 {
						res[i].first = time.Since(t0)
					}
					res[i].chunks++
					b.WriteString(ch.Choices[0].Text)
				}
			}
			res[i].total = time.Since(t0)
			res[i].err = s.Err()
			s.Close()
			if res[i].err == nil && b.String() != want[p] {
				res[i].err = fmt.Errorf("text %q, want %q", b.String(), want[p])
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	var firsts, totals []float64
	for i, r := range res {
		if r.err != nil {
			t.Errorf("request %d: %v", i, r.err)
		}
		t.Logf("request %2d %-30q first token %7.1f ms, total %7.1f ms, %d chunks", i, r.prompt, ms(r.first), ms(r.total), r.chunks)
		firsts, totals = append(firsts, ms(r.first)), append(totals, ms(r.total))
	}
	sort.Float64s(firsts)
	sort.Float64s(totals)
	t.Logf("16 requests, --parallel 2, 64 tokens each: wall %.1f ms; first token median %.1f ms, max %.1f ms; total median %.1f ms, max %.1f ms; peak RSS of the test process %s",
		ms(wall), firsts[7], firsts[15], totals[7], totals[15], peakRSS("self"))
	if pid != "" {
		t.Logf("peak RSS of the server (pid %s): %s", pid, peakRSS(pid))
	}
	ts.stop()
	tr.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the load, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// peakRSS reads VmHWM from /proc/PID/status.
func peakRSS(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.Join(strings.Fields(l)[1:], " ")
		}
	}
	return "unknown"
}

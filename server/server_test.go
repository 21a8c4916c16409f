package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdna-go/xdna/runtime/tokenizer"
)

// gateBackend writes one word per step and waits for a tick between steps,
// so that tests decide how long a generation lasts. It is a test double for
// the queue and cancellation paths; the real model's tests are in
// cmd/xdnarun (serve_test.go).
type gateBackend struct {
	tick      chan struct{} // one step per receive; closed: run freely
	mu        sync.Mutex
	started   int
	cancelled int // generations that saw ctx cancelled
	last      Generation
}

func (b *gateBackend) ChatPrompt(msgs []tokenizer.Message) (string, error) {
	var s strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&s, "[%s]%s", m.Role, m.Content)
	}
	return s.String(), nil
}

func (b *gateBackend) Generate(ctx context.Context, g Generation, w io.Writer) (Result, error) {
	b.mu.Lock()
	b.started++
	b.last = g
	b.mu.Unlock()
	r := Result{PromptTokens: len(strings.Fields(g.Prompt))}
	if strings.Contains(g.Prompt, "TOOLONG") {
		return r, fmt.Errorf("%w: prompt of 9999 tokens does not fit the context of 64 (-c)", ErrPrompt)
	}
	for i := 0; g.MaxTokens < 0 || i < g.MaxTokens; i++ {
		select {
		case <-ctx.Done():
			b.mu.Lock()
			b.cancelled++
			b.mu.Unlock()
			return r, nil
		case <-b.tick:
		}
		fmt.Fprintf(w, " w%d", i)
		r.CompletionTokens++
	}
	r.Length = true
	return r, nil
}

func startServer(t *testing.T, b Backend, c Config) (string, context.CancelFunc, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, New(b, c), nil) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String(), cancel, done
}

func post(t *testing.T, url, body string, hdr ...string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	json.NewDecoder(resp.Body).Decode(&v)
	return resp, v
}

// errorOf returns status, type and code of an OpenAI error body.
func errorOf(resp *http.Response, v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	return fmt.Sprintf("%d %v %v", resp.StatusCode, e["type"], e["code"])
}

func TestErrors(t *testing.T) {
	b := &gateBackend{tick: make(chan struct{})}
	close(b.tick)
	url, _, _ := startServer(t, b, Config{Model: "m", APIKey: "k", MaxBody: 4096})
	auth := []string{"Authorization", "Bearer k"}
	for _, c := range []struct {
		path, body string
		hdr        []string
		want       string
	}{
		{"/v1/completions", `{"prompt":"a","max_tokens":2}`, nil, "401 invalid_request_error invalid_api_key"},
		{"/v1/completions", `{"prompt":"a"}`, []string{"Authorization", "Bearer wrong"}, "401 invalid_request_error invalid_api_key"},
		{"/v1/completions", `{"model":"other","prompt":"a"}`, auth, "404 invalid_request_error model_not_found"},
		{"/v1/completions", `{"prompt":"a",`, auth, "400 invalid_request_error <nil>"},
		{"/v1/completions", `{"prompt":"a","temperature":3}`, auth, "400 invalid_request_error <nil>"},
		{"/v1/completions", `{"prompt":"a","n":2}`, auth, "400 invalid_request_error <nil>"},
		{"/v1/completions", `{"prompt":"a","max_tokens":0}`, auth, "400 invalid_request_error <nil>"},
		{"/v1/completions", `{"prompt":["a","b"]}`, auth, "400 invalid_request_error <nil>"},
		{"/v1/completions", `{"prompt":"a","stop":["1","2","3","4","5"]}`, auth, "400 invalid_request_error <nil>"},
		{"/v1/completions", `{"prompt":"a TOOLONG"}`, auth, "400 invalid_request_error context_length_exceeded"},
		{"/v1/completions", `{"prompt":"` + strings.Repeat("x", 5000) + `"}`, auth, "413 invalid_request_error request_too_large"},
		{"/v1/chat/completions", `{"messages":[]}`, auth, "400 invalid_request_error <nil>"},
		{"/v1/chat/completions", `{"messages":[{"role":"tool","content":"x"}]}`, auth, "400 invalid_request_error <nil>"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, auth, "400 invalid_request_error <nil>"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"tools":[{}]}`, auth, "400 invalid_request_error <nil>"},
		{"/v1/nothing", `{}`, auth, "404 invalid_request_error <nil>"},
	} {
		resp, v := post(t, url+c.path, c.body, c.hdr...)
		if got := errorOf(resp, v); got != c.want {
			t.Errorf("%s %.60s: %s, want %s (%v)", c.path, c.body, got, c.want, v)
		}
	}
	// /health needs no key; GET on a POST path is 405.
	resp, err := http.Get(url + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/health: %v %v", resp, err)
	}
	resp, _ = http.Get(url + "/v1/completions")
	if resp.StatusCode != 405 {
		t.Errorf("GET /v1/completions: %d, want 405", resp.StatusCode)
	}
	// The right key passes; stop sequences cut the text and say "stop".
	resp, v := post(t, url+"/v1/completions", `{"prompt":"a b","max_tokens":5,"stop":"w3"}`, auth...)
	ch := v["choices"].([]any)[0].(map[string]any)
	if resp.StatusCode != 200 || ch["text"] != " w0 w1 w2 " || ch["finish_reason"] != "stop" {
		t.Errorf("stop sequence: %d %v", resp.StatusCode, v)
	}
	resp, v = post(t, url+"/v1/completions", `{"prompt":"a b","max_tokens":3}`, auth...)
	ch = v["choices"].([]any)[0].(map[string]any)
	u := v["usage"].(map[string]any)
	if ch["text"] != " w0 w1 w2" || ch["finish_reason"] != "length" || u["prompt_tokens"] != 2.0 || u["completion_tokens"] != 3.0 || u["total_tokens"] != 5.0 {
		t.Errorf("length: %v", v)
	}
}

// TestStopWriter feeds text in every split and checks the cut.
func TestStopWriter(t *testing.T) {
	for _, c := range []struct {
		text  string
		stops []string
		want  string
		stop  bool
	}{
		{"hello world", []string{"wor"}, "hello ", true},
		{"hello world", []string{"xyz"}, "hello world", false},
		{"hello world", []string{"world!"}, "hello world", false},
		{"aaab", []string{"aab"}, "a", true},
		{"héllo wörld", []string{"ö"}, "héllo w", true},
		{"one two", []string{"two", "one"}, "", true},
	} {
		for split := 1; split <= len(c.text); split++ {
			var got strings.Builder
			cancelled := false
			w := &stopWriter{stops: c.stops, emit: func(s string) error { got.WriteString(s); return nil }, cancel: func() { cancelled = true }}
			for i := 0; i < len(c.text); i += split {
				w.Write([]byte(c.text[i:min(i+split, len(c.text))]))
			}
			w.flush()
			if got.String() != c.want || w.stopped != c.stop || cancelled != c.stop {
				t.Errorf("%q stops %q split %d: %q stopped %v, want %q %v", c.text, c.stops, split, got.String(), w.stopped, c.want, c.stop)
			}
		}
	}
}

// TestQueue fills the slots and the queue: the next request gets 503 at
// once; a queued client that leaves frees its place; all others finish.
func TestQueue(t *testing.T) {
	b := &gateBackend{tick: make(chan struct{})}
	url, _, _ := startServer(t, b, Config{Model: "m", Parallel: 2, Queue: 2})
	// Release the generations before the server drains, also when the
	// test fails half-way (cleanups run last-registered first).
	var once sync.Once
	release := func() { once.Do(func() { close(b.tick) }) }
	t.Cleanup(release)
	var wg sync.WaitGroup
	codes := make(chan int, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := post(t, url+"/v1/completions", `{"prompt":"a","max_tokens":2}`)
			codes <- resp.StatusCode
		}()
	}
	waitFor(t, "2 running, 2 waiting", func() bool { return health(t, url) == "2 2" })
	resp, v := post(t, url+"/v1/completions", `{"prompt":"a","max_tokens":2}`)
	if got := errorOf(resp, v); got != "503 server_error server_overloaded" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("full queue: %s %v", got, resp.Header)
	}
	// Free one place: a generation of max_tokens 2 takes 2 steps, so of 3
	// steps exactly one generation finishes (two would need 4, and a
	// waiter only starts once one has finished), and a waiting request
	// takes its slot. The counts on /health lag the steps, so they are
	// waited for rather than polled between steps.
	for i := 0; i < 3; i++ {
		select {
		case b.tick <- struct{}{}:
		case <-time.After(5 * time.Second):
			t.Fatal("no generation took a step")
		}
	}
	waitFor(t, "one slot freed and taken", func() bool { return health(t, url) == "2 1" })
	// A client waiting in the queue that gives up leaves it.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(`{"prompt":"a"}`))
	errc := make(chan error, 1)
	go func() { _, err := http.DefaultClient.Do(req); errc <- err }()
	waitFor(t, "the leaver queued", func() bool { return health(t, url) == "2 2" })
	cancel()
	if err := <-errc; err == nil {
		t.Error("cancelled request returned no error")
	}
	waitFor(t, "the leaver gone", func() bool { return health(t, url) == "2 1" })
	release()
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("queued request: %d", c)
		}
	}
	if h := health(t, url); h != "0 0" {
		t.Errorf("after all: %s", h)
	}
}

func health(t *testing.T, url string) string {
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ Active, Waiting int }
	json.NewDecoder(resp.Body).Decode(&v)
	return fmt.Sprint(v.Active, " ", v.Waiting)
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	for start := time.Now(); !f(); time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestDisconnectAndDrain: a streaming client that leaves cancels its
// generation at once; cancelling Serve's context lets the request in
// flight finish, streamed to its [DONE], and refuses new connections.
func TestDisconnectAndDrain(t *testing.T) {
	b := &gateBackend{tick: make(chan struct{})}
	url, stop, done := startServer(t, b, Config{Model: "m", Parallel: 2})

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"stream":true}`))
	go func() { b.tick <- struct{}{} }() // headers go with the first text
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.Contains(line, `"role":"assistant"`) || !strings.Contains(line, "w0") {
		t.Errorf("first event %q", line)
	}
	cancel()
	waitFor(t, "the generation cancelled", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.cancelled == 1 })

	// Drain: a stream in flight when the server stops runs to its end.
	go func() { b.tick <- struct{}{} }()
	resp, err = http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a","max_tokens":3,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	first, _ := r.ReadString('\n')
	stop()
	time.Sleep(50 * time.Millisecond)
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("new connection accepted while draining")
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v before the stream ended", err)
	default:
	}
	go func() { b.tick <- struct{}{}; b.tick <- struct{}{} }()
	rest, _ := io.ReadAll(r)
	all := first + string(rest)
	if !strings.Contains(all, "w2") || !strings.HasSuffix(all, "data: [DONE]\n\n") || !strings.Contains(all, `"finish_reason":"length"`) {
		t.Errorf("drained stream:\n%s", all)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	done <- nil // for the cleanup
}

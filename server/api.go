package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/xdna-go/xdna/runtime/sample"
	"github.com/xdna-go/xdna/runtime/tokenizer"
)

// common holds the request fields that chat and completions share. Unset
// sampling fields take xdnarun's defaults (sample.DefaultParams), so that a
// request and `xdnarun -p` with the same settings sample the same text.
type common struct {
	Model               string          `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"` // extension, as llama-server
	MinP                *float64        `json:"min_p"` // extension, as llama-server
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N                *int            `json:"n"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	Logprobs         json.RawMessage `json:"logprobs"`
}

type chatRequest struct {
	common
	Messages       []chatMessage     `json:"messages"`
	Tools          []json.RawMessage `json:"tools"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type completionRequest struct {
	common
	Prompt json.RawMessage `json:"prompt"`
	Echo   bool            `json:"echo"`
	Suffix *string         `json:"suffix"`
}

// maxStops and maxStopLen bound the stop sequences, as OpenAI does (4).
const (
	maxStops   = 4
	maxStopLen = 256
)

// job is a checked request.
type job struct {
	gen          Generation
	stops        []string
	stream       bool
	includeUsage bool
}

// check validates the shared fields and fills j (defaultMax: max_tokens when unset).
func (s *Server) check(c *common, j *job, defaultMax int) *apiError {
	if c.Model != "" && c.Model != s.c.Model {
		return s.unknownModel(c.Model)
	}
	if c.N != nil && *c.N != 1 {
		return badRequest("n", "n = %d: only n = 1 is supported", *c.N)
	}
	for name, v := range map[string]*float64{"presence_penalty": c.PresencePenalty, "frequency_penalty": c.FrequencyPenalty} {
		if v != nil && *v != 0 {
			return badRequest(name, "%s is not supported (0 only)", name)
		}
	}
	if len(c.Logprobs) > 0 && !bytes.Equal(c.Logprobs, []byte("false")) && !bytes.Equal(c.Logprobs, []byte("null")) {
		return badRequest("logprobs", "logprobs are not supported")
	}
	j.gen.MaxTokens = defaultMax
	for name, v := range map[string]*int{"max_tokens": c.MaxTokens, "max_completion_tokens": c.MaxCompletionTokens} {
		if v == nil {
			continue
		}
		if *v < 1 {
			return badRequest(name, "%s = %d: must be at least 1", name, *v)
		}
		j.gen.MaxTokens = *v
	}
	p := sample.DefaultParams()
	if v := c.Temperature; v != nil {
		if math.IsNaN(*v) || *v < 0 || *v > 2 {
			return badRequest("temperature", "temperature %g: must be in [0, 2]", *v)
		}
		p.Temp = float32(*v)
	}
	if v := c.TopP; v != nil {
		if math.IsNaN(*v) || *v <= 0 || *v > 1 {
			return badRequest("top_p", "top_p %g: must be in (0, 1]", *v)
		}
		p.TopP = float32(*v)
	}
	if v := c.TopK; v != nil {
		if *v < 0 {
			return badRequest("top_k", "top_k %d: must be >= 0 (0: off)", *v)
		}
		p.TopK = *v
	}
	if v := c.MinP; v != nil {
		if math.IsNaN(*v) || *v < 0 || *v > 1 {
			return badRequest("min_p", "min_p %g: must be in [0, 1]", *v)
		}
		p.MinP = float32(*v)
	}
	if c.Seed != nil {
		p.Seed = uint64(*c.Seed)
	} else {
		p.Seed = uint64(time.Now().UnixNano())
	}
	j.gen.Params = p
	stops, err := stringOrList(c.Stop)
	if err != nil {
		return badRequest("stop", "stop: want a string or a list of strings")
	}
	if len(stops) > maxStops {
		return badRequest("stop", "%d stop sequences: at most %d", len(stops), maxStops)
	}
	for _, st := range stops {
		if st == "" || len(st) > maxStopLen {
			return badRequest("stop", "stop sequence of %d bytes: want 1..%d", len(st), maxStopLen)
		}
	}
	j.stops = stops
	j.stream = c.Stream
	if c.StreamOptions != nil {
		if !c.Stream {
			return badRequest("stream_options", "stream_options needs stream: true")
		}
		j.includeUsage = c.StreamOptions.IncludeUsage
	}
	return nil
}

// stringOrList decodes a JSON string, a list of strings, or nothing.
func stringOrList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var list []string
	err := json.Unmarshal(raw, &list)
	return list, err
}

// messageText is a message's content: a string, or a list of text parts.
func messageText(i int, raw json.RawMessage) (string, *apiError) {
	param := fmt.Sprintf("messages[%d].content", i)
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param, "%s: want a string or a list of text parts", param)
	}
	var b strings.Builder
	for k, p := range parts {
		if p.Type != "text" {
			return "", badRequest(param, "%s[%d]: part of type %q: only text is supported", param, k, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	var j job
	if e := s.check(&req.common, &j, -1); e != nil {
		writeError(w, e)
		return
	}
	if len(req.Tools) > 0 {
		writeError(w, badRequest("tools", "tools are not supported"))
		return
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		writeError(w, badRequest("response_format", "response_format %q is not supported (text only)", rf.Type))
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, badRequest("messages", "messages: at least one message is required"))
		return
	}
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		if role != "system" && role != "user" && role != "assistant" {
			writeError(w, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d]: role %q is not supported (system, developer, user, assistant)", i, m.Role))
			return
		}
		text, e := messageText(i, m.Content)
		if e != nil {
			writeError(w, e)
			return
		}
		msgs[i] = tokenizer.Message{Role: role, Content: text}
	}
	prompt, err := s.b.ChatPrompt(msgs)
	if err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "chat template: " + err.Error()})
		return
	}
	j.gen.Prompt = prompt
	s.run(w, r, &j, true)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	var j job
	if e := s.check(&req.common, &j, 16); e != nil { // 16: OpenAI's default for completions
		writeError(w, e)
		return
	}
	if req.Echo {
		writeError(w, badRequest("echo", "echo is not supported"))
		return
	}
	if req.Suffix != nil && *req.Suffix != "" {
		writeError(w, badRequest("suffix", "suffix is not supported"))
		return
	}
	prompts, err := stringOrList(req.Prompt)
	if err != nil || len(prompts) != 1 {
		writeError(w, badRequest("prompt", "prompt: want one string (or a list of one)"))
		return
	}
	j.gen.Prompt = prompts[0]
	s.run(w, r, &j, false)
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type delta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type choice struct {
	Index        int       `json:"index"`
	Message      *message  `json:"message,omitempty"` // chat, whole
	Delta        *delta    `json:"delta,omitempty"`   // chat, streamed
	Text         *string   `json:"text,omitempty"`    // completions
	FinishReason *string   `json:"finish_reason"`
	Logprobs     *struct{} `json:"logprobs"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type response struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}

// run queues j, generates, and writes the reply (whole or streamed).
func (s *Server) run(w http.ResponseWriter, r *http.Request, j *job, chat bool) {
	ctx := r.Context()
	t0 := time.Now()
	if err := s.acquire(ctx); err != nil {
		var e *apiError
		if errors.As(err, &e) {
			s.logf("%s %s: 503 busy", r.Method, r.URL.Path)
			writeError(w, e)
		}
		return // the client left while queued
	}
	defer s.release()
	waited := time.Since(t0)

	resp := response{ID: newID("cmpl-"), Object: "text_completion", Created: time.Now().Unix(), Model: s.c.Model}
	if chat {
		resp.ID, resp.Object = newID("chatcmpl-"), "chat.completion"
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sw *sse
	var text strings.Builder
	emit := func(t string) error { text.WriteString(t); return nil }
	if j.stream {
		if chat {
			resp.Object = "chat.completion.chunk"
		}
		sw = newSSE(w)
		emit = func(t string) error {
			c := choice{Text: &t}
			if chat {
				c = choice{Delta: &delta{Content: &t}}
				if !sw.started { // the first chunk names the role, as OpenAI's
					c.Delta.Role = "assistant"
				}
			}
			return sw.send(s.chunk(&resp, c))
		}
	}
	stop := &stopWriter{stops: j.stops, emit: emit, cancel: cancel}
	res, err := s.b.Generate(gctx, j.gen, stop)
	if err == nil {
		err = stop.flush()
	}
	s.done.Add(1)
	s.toks.Add(int64(res.CompletionTokens))
	if ctx.Err() != nil {
		s.logf("%s %s: client left after %d tokens (%.0f ms)", r.Method, r.URL.Path, res.CompletionTokens, ms(time.Since(t0)))
		return
	}
	if err != nil {
		e := &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
		if errors.Is(err, ErrPrompt) {
			e = withCode(badRequest("prompt", "%v", err), "context_length_exceeded")
			if chat {
				e.Param = ptr("messages")
			}
		}
		s.logf("%s %s: %d %s", r.Method, r.URL.Path, e.Status, e.Message)
		if sw != nil && sw.started {
			sw.send(struct {
				Error *apiError `json:"error"`
			}{e})
			sw.done()
			return
		}
		writeError(w, e)
		return
	}
	finish := "stop"
	if res.Length && !stop.stopped {
		finish = "length"
	}
	u := &usage{res.PromptTokens, res.CompletionTokens, res.PromptTokens + res.CompletionTokens}
	s.logf("%s %s: 200, %d+%d tokens, %s, queued %.0f ms, total %.0f ms", r.Method, r.URL.Path, u.PromptTokens, u.CompletionTokens, finish, ms(waited), ms(time.Since(t0)))
	if sw != nil {
		c := choice{Text: ptr(""), FinishReason: &finish}
		if chat {
			c = choice{Delta: &delta{}, FinishReason: &finish}
			if !sw.started {
				c.Delta.Role = "assistant"
			}
		}
		sw.send(s.chunk(&resp, c))
		if j.includeUsage {
			resp.Usage = u
			resp.Choices = []choice{}
			sw.send(&resp)
		}
		sw.done()
		return
	}
	out := text.String()
	c := choice{Text: &out, FinishReason: &finish}
	if chat {
		c = choice{Message: &message{Role: "assistant", Content: out}, FinishReason: &finish}
	}
	resp.Choices, resp.Usage = []choice{c}, u
	writeJSON(w, &resp)
}

func (s *Server) chunk(resp *response, c choice) *response {
	resp.Choices = []choice{c}
	return resp
}

func ptr[T any](v T) *T { return &v }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sse writes server-sent events, one JSON object per event.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	err     error
}

func newSSE(w http.ResponseWriter) *sse {
	return &sse{w: w, rc: http.NewResponseController(w)}
}

func (e *sse) send(v any) error {
	if e.err != nil {
		return e.err
	}
	if !e.started {
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
		e.started = true
	}
	b, err := json.Marshal(v)
	if err != nil {
		e.err = err
		return err
	}
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		e.err = err
		return err
	}
	e.err = e.rc.Flush()
	return e.err
}

func (e *sse) done() {
	if e.err == nil {
		fmt.Fprint(e.w, "data: [DONE]\n\n")
		e.rc.Flush()
	}
}

// stopWriter passes the generated text on, holding back what may be the
// start of a stop sequence; at a stop sequence it passes on the text before
// it and cancels the generation. A failed emit (the client is gone) cancels
// it too.
type stopWriter struct {
	stops   []string
	emit    func(string) error
	cancel  context.CancelFunc
	held    []byte
	stopped bool
	err     error
}

func (w *stopWriter) Write(p []byte) (int, error) {
	if w.stopped || w.err != nil {
		return len(p), nil
	}
	w.held = append(w.held, p...)
	cut, keep := len(w.held), 0
	for _, st := range w.stops {
		if i := bytes.Index(w.held, []byte(st)); i >= 0 && i < cut {
			cut = i
			w.stopped = true
		}
	}
	if w.stopped {
		w.send(string(w.held[:cut]))
		w.held = nil
		w.cancel()
		return len(p), nil
	}
	// Keep the longest tail of held that begins some stop sequence.
	for _, st := range w.stops {
		for k := min(len(st)-1, len(w.held)); k > keep; k-- {
			if bytes.HasSuffix(w.held, []byte(st[:k])) {
				keep = k
				break
			}
		}
	}
	w.send(string(w.held[:len(w.held)-keep]))
	w.held = append(w.held[:0], w.held[len(w.held)-keep:]...)
	return len(p), nil
}

func (w *stopWriter) send(t string) {
	if t == "" || w.err != nil {
		return
	}
	if err := w.emit(t); err != nil {
		w.err = err
		w.cancel()
	}
}

// flush passes on the held text at the end of a generation.
func (w *stopWriter) flush() error {
	if !w.stopped {
		w.send(string(w.held))
		w.held = nil
	}
	return w.err
}

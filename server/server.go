// Package server serves one loaded model over the OpenAI HTTP API:
// /v1/chat/completions, /v1/completions and /v1/models, with streaming as
// server-sent events, and /health. Generation itself is the Backend's: the
// server parses and checks requests, queues them, applies stop sequences,
// streams the text and counts usage.
package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdna-go/xdna/runtime/sample"
	"github.com/xdna-go/xdna/runtime/tokenizer"
)

// Backend generates text for the server. Generate must return soon after
// ctx is cancelled, with the text made so far.
type Backend interface {
	// ChatPrompt renders a conversation with the model's chat template,
	// ending with the assistant's turn.
	ChatPrompt(msgs []tokenizer.Message) (string, error)
	// Generate continues g.Prompt and writes the text to w as it is made
	// (whole UTF-8 sequences). A prompt that does not fit the context is
	// an error wrapping ErrPrompt.
	Generate(ctx context.Context, g Generation, w io.Writer) (Result, error)
}

// Generation is one request as the Backend sees it.
type Generation struct {
	Prompt    string
	MaxTokens int // -1: until the end of text or of the context
	Params    sample.Params
}

// Result is what a generation made.
type Result struct {
	PromptTokens     int
	CompletionTokens int
	// Length is true when the generation stopped at MaxTokens or at the end
	// of the context rather than at an end-of-text token or by cancellation.
	Length bool
}

// ErrPrompt marks a prompt the model cannot take (too long for the
// context, or empty once tokenised): the client's fault, status 400.
var ErrPrompt = errors.New("bad prompt")

// Config sets up a Server.
type Config struct {
	Model    string    // the id served by /v1/models; requests naming another get 404
	APIKey   string    // when set, every /v1 request needs "Authorization: Bearer KEY"
	Parallel int       // generations run at once (default 1)
	Queue    int       // requests that may wait for a slot beyond Parallel (default 16); more get 503
	MaxBody  int64     // request body limit in bytes (default 1 MiB); larger get 413
	Log      io.Writer // one line per request; nil: none
	// CORS lists the origins ("http://localhost:3000", or "*" for any)
	// whose web pages may call the server: their requests get
	// Access-Control-Allow-Origin and their preflight OPTIONS is answered.
	// Empty: no CORS header is ever sent and OPTIONS is refused, so a
	// browser refuses cross-origin calls.
	CORS []string
	// Info describes the model and where it runs, for /v1/models.
	Info ModelInfo
}

// ModelInfo is what /v1/models says about the model beside its id.
type ModelInfo struct {
	Architecture  string `json:"architecture,omitempty"`   // llama, qwen2, ...
	Parameters    int64  `json:"parameters,omitempty"`     // weights, in all
	Quantisation  string `json:"quantisation,omitempty"`   // the type most weights have: Q4_0, ...
	ContextLength int    `json:"context_length,omitempty"` // -c: the context the server gives each request
	Target        string `json:"target,omitempty"`         // the NPU the package is packed for: xdna1 or xdna2
	Device        string `json:"device,omitempty"`         // what runs the planned matrices: cpu, emu, sim or npu
}

// Stats counts the requests a Server holds.
type Stats struct {
	Active  int   // generating
	Waiting int   // queued for a slot
	Served  int64 // generations finished (completed, stopped or cancelled)
	Tokens  int64 // completion tokens made, in all
}

// Server is the HTTP API over one Backend. It is an http.Handler.
type Server struct {
	b     Backend
	c     Config
	mux   *http.ServeMux
	slots chan struct{} // one token per running generation
	held  atomic.Int64  // requests admitted: running or waiting
	act   atomic.Int64
	done  atomic.Int64
	toks  atomic.Int64
	logMu sync.Mutex
}

// New returns a Server for b.
func New(b Backend, c Config) *Server {
	if c.Parallel < 1 {
		c.Parallel = 1
	}
	if c.Queue < 0 {
		c.Queue = 0
	} else if c.Queue == 0 {
		c.Queue = 16
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 1 << 20
	}
	s := &Server{b: b, c: c, mux: http.NewServeMux(), slots: make(chan struct{}, c.Parallel)}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /v1/models", s.auth(s.models))
	s.mux.HandleFunc("GET /v1/models/{id...}", s.auth(s.model))
	s.mux.HandleFunc("POST /v1/chat/completions", s.auth(s.chat))
	s.mux.HandleFunc("POST /v1/completions", s.auth(s.completions))
	return s
}

// Stats returns the current counts.
func (s *Server) Stats() Stats {
	a := s.act.Load()
	return Stats{Active: int(a), Waiting: int(s.held.Load() - a), Served: s.done.Load(), Tokens: s.toks.Load()}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cors(w, r) {
		return
	}
	// Unknown paths and methods get the OpenAI error shape too.
	if _, pattern := s.mux.Handler(r); pattern == "" {
		status, msg := http.StatusNotFound, "unknown path "+r.URL.Path
		if r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/completions" || r.URL.Path == "/health" || strings.HasPrefix(r.URL.Path, "/v1/models") {
			status, msg = http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path
		}
		writeError(w, &apiError{Status: status, Type: "invalid_request_error", Message: msg})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Serve serves on ln until ctx is done, then calls draining (if set),
// stops accepting and waits for the requests in flight (queued ones
// included) to finish before returning.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, draining func()) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if draining != nil {
		draining()
	}
	// Shutdown closes the listener, then waits for every active connection
	// to go idle: a streaming reply runs to its end.
	if err := hs.Shutdown(context.Background()); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// apiError is an error in the OpenAI shape with its HTTP status.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: fmt.Sprintf(format, a...), Param: &param}
}

func withCode(e *apiError, code string) *apiError { e.Code = &code; return e }

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(struct {
		Error *apiError `json:"error"`
	}{e})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (s *Server) logf(format string, a ...any) {
	if s.c.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.c.Log, format+"\n", a...)
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.c.APIKey == "" {
		return h
	}
	want := []byte("Bearer " + s.c.APIKey)
	return func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			writeError(w, withCode(&apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error",
				Message: "missing or incorrect API key: send Authorization: Bearer KEY"}, "invalid_api_key"))
			return
		}
		h(w, r)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	st := s.Stats()
	writeJSON(w, map[string]any{"status": "ok", "model": s.c.Model, "active": st.Active, "waiting": st.Waiting})
}

// modelObject is OpenAI's model object with ModelInfo's fields beside:
// clients that know only OpenAI's ignore them.
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	ModelInfo
}

func (s *Server) modelObject() modelObject {
	return modelObject{ID: s.c.Model, Object: "model", Created: 0, OwnedBy: "xdna", ModelInfo: s.c.Info}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"object": "list", "data": []modelObject{s.modelObject()}})
}

func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != s.c.Model {
		writeError(w, s.unknownModel(id))
		return
	}
	writeJSON(w, s.modelObject())
}

func (s *Server) unknownModel(id string) *apiError {
	return withCode(&apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
		Message: fmt.Sprintf("model %q does not exist: this server serves %q", id, s.c.Model)}, "model_not_found")
}

// decode reads the JSON body into v under the body limit.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	r.Body = http.MaxBytesReader(w, r.Body, s.c.MaxBody)
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return withCode(&apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
				Message: fmt.Sprintf("request body larger than %d bytes", s.c.MaxBody)}, "request_too_large")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest(te.Field, "field %q: JSON %s where %s is wanted", te.Field, te.Value, te.Type)
		}
		return badRequest("", "request body is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil || !errors.As(err, new(*http.MaxBytesError)) {
			return badRequest("", "request body holds more than one JSON value")
		}
		return withCode(&apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Message: fmt.Sprintf("request body larger than %d bytes", s.c.MaxBody)}, "request_too_large")
	}
	return nil
}

var errBusy = withCode(&apiError{Status: http.StatusServiceUnavailable, Type: "server_error",
	Message: "the server is busy: every slot is generating and the queue is full; retry later"}, "server_overloaded")

// acquire admits a request and waits for a generation slot. It fails at
// once with errBusy when Parallel+Queue requests are already held, and
// with ctx's error when the client leaves while waiting.
func (s *Server) acquire(ctx context.Context) error {
	if s.held.Add(1) > int64(s.c.Parallel+s.c.Queue) {
		s.held.Add(-1)
		return errBusy
	}
	select {
	case s.slots <- struct{}{}:
		s.act.Add(1)
		return nil
	case <-ctx.Done():
		s.held.Add(-1)
		return ctx.Err()
	}
}

func (s *Server) release() {
	s.act.Add(-1)
	<-s.slots
	s.held.Add(-1)
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

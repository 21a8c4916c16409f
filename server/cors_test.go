package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func request(t *testing.T, h http.Handler, method, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	var body *strings.Reader
	if method == "POST" {
		body = strings.NewReader(`{"prompt":"a b","max_tokens":1}`)
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, path, body)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestCORS: without CORS no header is sent and a preflight is refused; with
// an origin, that origin's preflight is answered (methods, Authorization
// and Content-Type and what it asks for, max age) without the API key, and
// its requests, errors included, carry Access-Control-Allow-Origin; another
// origin gets none; "*" answers every origin with "*".
func TestCORS(t *testing.T) {
	b := &gateBackend{tick: make(chan struct{})}
	close(b.tick)
	const page = "http://localhost:5173"
	pre := []string{"Origin", page, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type,x-stainless-os"}

	off := New(b, Config{Model: "m", APIKey: "k"})
	if w := request(t, off, "OPTIONS", "/v1/chat/completions", pre...); w.Code != http.StatusMethodNotAllowed || corsHeaders(w) != "" {
		t.Errorf("no CORS: preflight %d, headers %q", w.Code, corsHeaders(w))
	}
	if w := request(t, off, "GET", "/v1/models", "Origin", page, "Authorization", "Bearer k"); w.Code != 200 || corsHeaders(w) != "" {
		t.Errorf("no CORS: GET %d, headers %q", w.Code, corsHeaders(w))
	}

	on := New(b, Config{Model: "m", APIKey: "k", CORS: []string{page}})
	w := request(t, on, "OPTIONS", "/v1/chat/completions", pre...)
	want := map[string]string{
		"Access-Control-Allow-Origin":  page,
		"Access-Control-Allow-Methods": "GET, POST, OPTIONS",
		"Access-Control-Allow-Headers": "Authorization, Content-Type, x-stainless-os",
		"Access-Control-Max-Age":       "600",
	}
	if w.Code != http.StatusNoContent {
		t.Errorf("preflight: status %d, want 204", w.Code)
	}
	for k, v := range want {
		if got := w.Header().Get(k); got != v {
			t.Errorf("preflight: %s %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(strings.Join(w.Header().Values("Vary"), ","), "Origin") {
		t.Errorf("preflight: Vary %q lacks Origin", w.Header().Values("Vary"))
	}
	t.Logf("preflight: %d %v", w.Code, w.Header())

	w = request(t, on, "POST", "/v1/completions", "Origin", page, "Authorization", "Bearer k", "Content-Type", "application/json")
	if w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != page {
		t.Errorf("POST from %s: %d, Allow-Origin %q", page, w.Code, w.Header().Get("Access-Control-Allow-Origin"))
	}
	// An error must be readable by the page too.
	w = request(t, on, "GET", "/v1/models", "Origin", page)
	if w.Code != http.StatusUnauthorized || w.Header().Get("Access-Control-Allow-Origin") != page {
		t.Errorf("401 from %s: %d, Allow-Origin %q", page, w.Code, w.Header().Get("Access-Control-Allow-Origin"))
	}
	// Another origin: no header, preflight refused with the fix.
	w = request(t, on, "OPTIONS", "/v1/models", "Origin", "http://evil.example", "Access-Control-Request-Method", "GET")
	if w.Code != http.StatusForbidden || w.Header().Get("Access-Control-Allow-Origin") != "" || !strings.Contains(w.Body.String(), "--cors http://evil.example") {
		t.Errorf("other origin's preflight: %d %q %s", w.Code, w.Header().Get("Access-Control-Allow-Origin"), w.Body)
	}
	if w := request(t, on, "GET", "/health", "Origin", "http://evil.example"); w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin's GET carries Allow-Origin")
	}
	// A preflight for a method the server does not answer, or bad header names.
	if w := request(t, on, "OPTIONS", "/v1/models", "Origin", page, "Access-Control-Request-Method", "DELETE"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE preflight: %d", w.Code)
	}
	if w := request(t, on, "OPTIONS", "/v1/models", "Origin", page, "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "a b"); w.Code != http.StatusBadRequest {
		t.Errorf("bad header name preflight: %d", w.Code)
	}
	// OPTIONS that is no preflight still gets the 405.
	if w := request(t, on, "OPTIONS", "/v1/models", "Origin", page); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("plain OPTIONS: %d", w.Code)
	}

	// Private Network Access: answered for an allowed origin that asks.
	w = request(t, on, "OPTIONS", "/v1/models", "Origin", page, "Access-Control-Request-Method", "GET", "Access-Control-Request-Private-Network", "true")
	if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Private-Network") != "true" {
		t.Errorf("private network preflight: %d %v", w.Code, w.Header())
	}
	if w := request(t, on, "OPTIONS", "/v1/models", "Origin", page, "Access-Control-Request-Method", "GET"); w.Header().Get("Access-Control-Allow-Private-Network") != "" {
		t.Errorf("Allow-Private-Network without the request")
	}

	any := New(b, Config{Model: "m", CORS: []string{"*"}})
	w = request(t, any, "OPTIONS", "/v1/models", "Origin", "http://127.0.0.1:9", "Access-Control-Request-Method", "GET")
	if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != "*" || len(w.Header().Values("Vary")) != 1 {
		t.Errorf("*: preflight %d %v", w.Code, w.Header())
	}
}

func corsHeaders(w *httptest.ResponseRecorder) string {
	var s []string
	for k := range w.Header() {
		if strings.HasPrefix(k, "Access-Control-") {
			s = append(s, k)
		}
	}
	return strings.Join(s, ",")
}

func TestCheckOrigin(t *testing.T) {
	for _, o := range []string{"*", "http://localhost:3000", "https://chat.example.org", "tauri://localhost", "http://[::1]:8000"} {
		if err := CheckOrigin(o); err != nil {
			t.Errorf("%q: %v", o, err)
		}
	}
	for _, o := range []string{"", "localhost:3000", "http://localhost:3000/", "http://localhost:3000/app", "http://u@h", "http://h?q", "null", "**"} {
		if err := CheckOrigin(o); err == nil {
			t.Errorf("%q: no error", o)
		} else {
			t.Logf("%q: %v", o, err)
		}
	}
}

// TestModelsInfo: /v1/models carries what the model is and where it runs.
func TestModelsInfo(t *testing.T) {
	info := ModelInfo{Architecture: "llama", Parameters: 260000, Quantisation: "Q4_0", ContextLength: 512, Target: "xdna2", Device: "emu"}
	s := New(&gateBackend{}, Config{Model: "m", Info: info})
	w := request(t, s, "GET", "/v1/models")
	var v struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || len(v.Data) != 1 {
		t.Fatalf("%v %s", err, w.Body)
	}
	m := v.Data[0]
	if m["id"] != "m" || m["object"] != "model" || m["device"] != "emu" || m["target"] != "xdna2" || m["architecture"] != "llama" || m["quantisation"] != "Q4_0" || m["parameters"] != 260000.0 || m["context_length"] != 512.0 {
		t.Errorf("models: %s", w.Body)
	}
	t.Logf("%s", strings.TrimSpace(w.Body.String()))
}

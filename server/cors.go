package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The CORS answers. Authorization and Content-Type are always allowed;
// the other headers a preflight asks for (the OpenAI JavaScript SDK sends
// X-Stainless-*) are allowed by echoing them when they are valid names.
const (
	corsMethods = "GET, POST, OPTIONS"
	corsMaxAge  = "600" // seconds a browser may cache a preflight
)

// CheckOrigin reports whether o is an origin --cors takes: "*", or
// scheme://host[:port] with nothing after it ("http://localhost:3000").
func CheckOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	switch {
	case err != nil:
		return fmt.Errorf("origin %q: %v", o, err)
	case u.Scheme == "" || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("origin %q: want SCHEME://HOST[:PORT], as a browser sends it (e.g. http://localhost:3000), or *", o)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "/"):
		return fmt.Errorf("origin %q: an origin has no path, query, user or trailing slash (e.g. %s://%s)", o, u.Scheme, u.Host)
	}
	return nil
}

// allowedOrigin returns the Access-Control-Allow-Origin value for a
// request from origin, or "" when the origin is not allowed.
func (s *Server) allowedOrigin(origin string) string {
	if origin == "" || len(s.c.CORS) == 0 {
		return ""
	}
	if slices.Contains(s.c.CORS, "*") {
		return "*"
	}
	for _, o := range s.c.CORS {
		if strings.EqualFold(o, origin) {
			return origin
		}
	}
	return ""
}

// cors adds the CORS headers a request from an allowed origin gets and
// answers a preflight. It reports whether it answered the request.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	if len(s.c.CORS) == 0 {
		return false // no header, and OPTIONS goes on to its 405
	}
	origin := r.Header.Get("Origin")
	allow := s.allowedOrigin(origin)
	h := w.Header()
	if !slices.Contains(s.c.CORS, "*") {
		h.Add("Vary", "Origin") // the answer depends on the origin: caches must not share it
	}
	if allow != "" {
		h.Set("Access-Control-Allow-Origin", allow)
		h.Set("Access-Control-Expose-Headers", "Retry-After")
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	// A preflight: answered here, before authentication (a browser never
	// sends credentials on one).
	if allow == "" {
		s.logf("OPTIONS %s: preflight from %s: 403 (not a --cors origin)", r.URL.Path, origin)
		writeError(w, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error",
			Message: fmt.Sprintf("origin %q may not call this server: start it with --cors %s", origin, cmpOr(origin, "ORIGIN"))})
		return true
	}
	if m := r.Header.Get("Access-Control-Request-Method"); m != http.MethodGet && m != http.MethodPost && m != http.MethodHead {
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: fmt.Sprintf("method %s: this server answers %s", m, corsMethods)})
		return true
	}
	headers, err := requestedHeaders(r.Header.Values("Access-Control-Request-Headers"))
	if err != nil {
		writeError(w, badRequest("", "preflight: %v", err))
		return true
	}
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", strings.Join(headers, ", "))
	h.Set("Access-Control-Max-Age", corsMaxAge)
	// Chromium's Private Network Access: a page of a public origin calling
	// this loopback server asks first; an allowed origin may.
	if strings.EqualFold(r.Header.Get("Access-Control-Request-Private-Network"), "true") {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
	w.WriteHeader(http.StatusNoContent)
	s.logf("OPTIONS %s: preflight from %s for %s: 204", r.URL.Path, origin, r.Header.Get("Access-Control-Request-Method"))
	return true
}

// requestedHeaders returns Authorization, Content-Type and the headers a
// preflight asks for, each once, refusing names that are not HTTP tokens.
func requestedHeaders(vals []string) ([]string, error) {
	out := []string{"Authorization", "Content-Type"}
	for _, v := range vals {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if !isToken(name) || len(name) > 128 {
				return nil, errors.New("Access-Control-Request-Headers holds an invalid header name")
			}
			if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, name) }) {
				if len(out) >= 64 {
					return nil, errors.New("Access-Control-Request-Headers asks for more than 64 headers")
				}
				out = append(out, name)
			}
		}
	}
	return out, nil
}

func isToken(s string) bool {
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

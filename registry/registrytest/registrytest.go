// Package registrytest starts a real CNCF distribution registry (the
// Debian package docker-registry) on a free loopback port for tests.
package registrytest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Registry is a running registry.
type Registry struct {
	Host string // 127.0.0.1:PORT
	Dir  string // its storage root
	Log  string // its log file
}

// BlobPath returns the file the registry stores a blob in (sha256 hex).
func (r *Registry) BlobPath(hex string) string {
	return filepath.Join(r.Dir, "docker/registry/v2/blobs/sha256", hex[:2], hex, "data")
}

// Binary returns the registry program's path, or "" and why not.
func Binary() (string, string) {
	for _, name := range []string{"docker-registry", "/usr/bin/docker-registry"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, ""
		}
	}
	return "", "docker-registry is not installed (apt-get install docker-registry; .ci/run does)"
}

// Start runs a registry for the test, stopped at its end. With user and
// password set, it requires them (htpasswd). Without the program the test
// is skipped with the reason logged, except under CI, where .ci/run
// installs it and its absence is a failure.
func Start(t testing.TB, user, password string) *Registry {
	t.Helper()
	bin, why := Binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: %s", why)
		}
		t.Skipf("SKIP (not run): %s", why)
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close()
	auth := ""
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: xdna-test\n    path: %s\n", htpasswd)
	}
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
%s`, filepath.Join(dir, "storage"), host, auth)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "registry.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 || resp.StatusCode == 401 {
				break
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("docker-registry exited: %s", strings.TrimSpace(string(b)))
		default:
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("docker-registry on %s not ready after 15 s: %v", host, err)
		}
	}
	return &Registry{Host: host, Dir: filepath.Join(dir, "storage"), Log: logPath}
}

// FreeHost returns a loopback address where nothing listens.
func FreeHost(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Proxy forwards TCP connections to a registry and can cut them off after
// a number of response bytes, as a network that fails mid-download would.
type Proxy struct {
	Host   string // 127.0.0.1:PORT to use in place of the registry's
	target string
	mu     sync.Mutex
	budget int64 // response bytes left before the cut; < 0: no cut
	cuts   int
}

// StartProxy forwards to target until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Host: ln.Addr().String(), target: target, budget: -1}
	var wg sync.WaitGroup
	var conns []net.Conn
	var cmu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			cmu.Lock()
			conns = append(conns, c, s)
			cmu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(s, c); s.Close() }()
			go func() { defer wg.Done(); p.relay(c, s); c.Close(); s.Close() }()
		}
	}()
	return p
}

// CutAfter makes the proxy close the connection once n more response bytes
// have passed; n < 0 forwards everything.
func (p *Proxy) CutAfter(n int64) {
	p.mu.Lock()
	p.budget = n
	p.mu.Unlock()
}

// Cuts returns how many connections the proxy has cut.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

func (p *Proxy) relay(dst io.Writer, src io.Reader) {
	buf := make([]byte, 16<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := false
			if p.budget >= 0 {
				if int64(n) > p.budget {
					n, cut = int(p.budget), true
					p.budget = -1
					p.cuts++
				} else {
					p.budget -= int64(n)
				}
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil || cut {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

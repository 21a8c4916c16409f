// Package registrytest starts a real CNCF distribution registry (the
// Debian package docker-registry) on a free loopback port for tests.
package registrytest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

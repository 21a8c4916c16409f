package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// corsPage is the front-end: it calls the server from its own origin with
// a request that needs a preflight (Authorization, JSON), then GET
// /v1/models, and posts what happened back to its origin.
const corsPage = `<!doctype html><title>cors</title><script>
const server = %q;
async function main() {
  const out = [];
  try {
    const r = await fetch(server + "/v1/chat/completions", {method: "POST",
      headers: {"Authorization": "Bearer sk-test", "Content-Type": "application/json"},
      body: JSON.stringify({messages: [{role: "user", content: "Hi"}], max_tokens: 4, temperature: 0})});
    const j = await r.json();
    out.push("chat " + r.status + " " + JSON.stringify(j.choices[0].message.content));
  } catch (e) { out.push("chat refused: " + e); }
  try {
    const r = await fetch(server + "/v1/models", {headers: {"Authorization": "Bearer sk-test"}});
    const j = await r.json();
    out.push("models " + r.status + " device=" + j.data[0].device + " target=" + j.data[0].target);
  } catch (e) { out.push("models refused: " + e); }
  await fetch("/result", {method: "POST", body: out.join("\n")});
}
main();
</script>`

// TestServeCORSChromium runs headless Chromium on a page of one loopback
// origin that fetch()es xdnarun serve on another port: with --cors naming
// the page's origin the preflight is answered and the page reads the
// replies; without it, Chromium refuses both.
func TestServeCORSChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium in PATH (Debian: apt-get install chromium; .ci/run installs it): the browser half of the CORS test is not run")
	}
	x := packFixture(t, "stories260K-q4_0")
	for _, withFlag := range []bool{true, false} {
		t.Run(fmt.Sprintf("cors=%v", withFlag), func(t *testing.T) {
			results := make(chan string, 1)
			var serverURL string
			page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/":
					w.Header().Set("Content-Type", "text/html")
					fmt.Fprintf(w, corsPage, serverURL)
				case "/result":
					b, _ := io.ReadAll(r.Body)
					select {
					case results <- string(b):
					default:
					}
				default:
					http.NotFound(w, r)
				}
			}))
			defer page.Close()
			ts := startServe(t, x, func(o *serveOptions) {
				o.apiKey = "sk-test"
				if withFlag {
					o.cors = []string{page.URL}
				}
			})
			serverURL = ts.url
			t.Logf("page %s calls the server %s", page.URL, ts.url)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
				"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), page.URL+"/")
			var logb strings.Builder
			cmd.Stdout, cmd.Stderr = &logb, &logb
			// Its own process group, so that ending it ends its renderers
			// and zygotes too, and nothing else.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); cmd.Wait() }()
			var got string
			select {
			case got = <-results:
			case <-time.After(90 * time.Second): // a safety net, not a measurement
				t.Fatalf("no result from the page in 90 s; chromium said:\n%s", logb.String())
			}
			t.Logf("the page saw:\n%s", got)
			log := ts.log.String()
			t.Logf("server log:\n%s", log)
			if withFlag {
				if !strings.Contains(got, "chat 200 ") || !strings.Contains(got, "models 200 device=cpu target=xdna2") {
					t.Errorf("with --cors %s: the page saw\n%s", page.URL, got)
				}
				if !strings.Contains(log, "OPTIONS /v1/chat/completions: preflight from "+page.URL+" for POST: 204") {
					t.Errorf("no answered preflight in the server log")
				}
			} else if !strings.Contains(got, "chat refused: TypeError") || !strings.Contains(got, "models refused: TypeError") {
				t.Errorf("without --cors: the page saw\n%s", got)
			}
		})
	}
}

// TestServeCORSFlag: --cors takes origins only, and * without --api-key
// warns.
func TestServeCORSFlag(t *testing.T) {
	x := packFixture(t, "stories260K-q4_0")
	if _, _, err := run(t, "", "serve", x, "--cors", "http://localhost:3000/app"); err == nil || !strings.Contains(err.Error(), "--cors: origin") {
		t.Errorf("--cors with a path: %v", err)
	}
	ts := startServe(t, x, func(o *serveOptions) { o.cors = []string{"*"} })
	ts.stop()
	if !strings.Contains(ts.log.String(), "--cors * without --api-key") {
		t.Errorf("no warning for * without a key:\n%s", ts.log)
	}
	ts = startServe(t, x, func(o *serveOptions) { o.cors = []string{"*"}; o.apiKey = "k" })
	ts.stop()
	if strings.Contains(ts.log.String(), "without --api-key") {
		t.Errorf("a warning with a key:\n%s", ts.log)
	}
}

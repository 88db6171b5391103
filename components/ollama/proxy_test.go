package ollama_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/natron/gpu-node-pools/components/ollama"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/headers"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
)

// upstream stands in for Ollama: it records what reaches it.
type upstream struct {
	mu   sync.Mutex
	seen []*http.Request
	body []string
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen, u.body = append(u.seen, r.Clone(r.Context())), append(u.body, string(b))
	u.mu.Unlock()
	if r.URL.Path == "/" {
		fmt.Fprint(w, "Ollama is running")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"ok":true}`)
}

func (u *upstream) requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.seen...)
}

// startProxy runs the program's Caddyfile in Caddy's own engine (the
// release the proxy image ships), in front of up, with key as the API key
// the pod's Secret would give it.
func startProxy(t *testing.T, up http.Handler, key string) string {
	t.Helper()
	t.Setenv(ollama.ProxyKeyEnv, key)
	backend := httptest.NewServer(up)
	t.Cleanup(backend.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	file := ollama.ProxyCaddyfile(port, strings.TrimPrefix(backend.URL, "http://"))
	cfg, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(file), nil)
	if err != nil {
		t.Fatalf("Caddy refuses the Caddyfile: %v\n%s", err, file)
	}
	if len(warnings) > 0 {
		t.Fatalf("Caddy warns about the Caddyfile: %v", warnings)
	}
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatalf("Caddy does not start: %v", err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

type call struct {
	name, method, path, auth string
	want                     int
	reaches                  bool
}

func runCalls(t *testing.T, base string, up *upstream, calls []call) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	for _, c := range calls {
		before := len(up.requests())
		req, err := http.NewRequest(c.method, base+c.path, strings.NewReader(`{"model":"llama-dev","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
		seen := up.requests()
		if reached := len(seen) > before; reached != c.reaches {
			t.Errorf("%s: reached Ollama %v, want %v", c.name, reached, c.reaches)
			continue
		}
		if c.reaches {
			got := seen[len(seen)-1]
			if got.URL.Path != c.path || got.Method != c.method {
				t.Errorf("%s: Ollama got %s %s, want %s %s", c.name, got.Method, got.URL.Path, c.method, c.path)
			}
			if a := got.Header.Get("Authorization"); a != "" {
				t.Errorf("%s: the key reached Ollama (%q)", c.name, a)
			}
		}
		if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%s: 401 without WWW-Authenticate: Bearer", c.name)
		}
	}
}

// The proxy in front of Ollama, run by Caddy itself: only the key opens
// the API, exactly (no prefix, no suffix), the probes' path stays open,
// and the key never reaches Ollama. Not parallel: Caddy runs one config
// per process.
func TestOllamaProxyEnforcesTheAPIKey(t *testing.T) {
	const key = "k3yFromTheSecret0123456789abcdef"
	up := &upstream{}
	base := startProxy(t, up, key)
	runCalls(t, base, up, []call{
		{"probe", "GET", "/", "", 200, true},
		{"probe HEAD", "HEAD", "/", "", 200, true},
		{"no key", "POST", "/v1/chat/completions", "", 401, false},
		{"wrong key", "POST", "/v1/chat/completions", "Bearer nope", 401, false},
		{"key as prefix", "POST", "/v1/chat/completions", "Bearer " + key + "x", 401, false},
		{"key cut short", "POST", "/v1/chat/completions", "Bearer " + key[:len(key)-1], 401, false},
		{"no scheme", "POST", "/v1/chat/completions", key, 401, false},
		{"native API without key", "POST", "/api/generate", "", 401, false},
		{"POST / without key", "POST", "/", "", 401, false},
		{"openai API", "POST", "/v1/chat/completions", "Bearer " + key, 200, true},
		{"models list", "GET", "/v1/models", "Bearer " + key, 200, true},
		{"native API", "POST", "/api/generate", "Bearer " + key, 200, true},
	})
	if bodies := up.body; len(bodies) == 0 || !strings.Contains(bodies[len(bodies)-1], "llama-dev") {
		t.Errorf("the request body did not reach Ollama: %q", bodies)
	}
}

// A missing key admits nobody: "Bearer " alone is not a key.
func TestOllamaProxyWithoutKeyAdmitsNobody(t *testing.T) {
	up := &upstream{}
	base := startProxy(t, up, "")
	runCalls(t, base, up, []call{
		{"probe", "GET", "/", "", 200, true},
		{"empty bearer", "POST", "/v1/chat/completions", "Bearer ", 401, false},
		{"bare scheme", "POST", "/v1/chat/completions", "Bearer", 401, false},
		{"no header", "POST", "/v1/chat/completions", "", 401, false},
	})
}

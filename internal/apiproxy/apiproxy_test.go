package apiproxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/natron/gpu-node-pools/internal/apiproxy"
	"github.com/natron/gpu-node-pools/internal/testkit/netsim"
)

func TestMain(m *testing.M) { netsim.Main(m) }

// upstream records what reaches it: path, Host and Authorization.
type upstream struct {
	mu   sync.Mutex
	seen []*http.Request
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.seen = append(u.seen, r.Clone(r.Context()))
	u.mu.Unlock()
	_, _ = w.Write([]byte("upstream"))
}

func (u *upstream) last() *http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		return nil
	}
	return u.seen[len(u.seen)-1]
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.seen)
}

type try struct {
	name, method, host, path, auth string
	want                           int
	reaches                        bool
}

func run(t *testing.T, base string, up *upstream, tries []try) {
	t.Helper()
	for _, c := range tries {
		before := up.count()
		req, _ := http.NewRequest(c.method, "http://"+base+c.path, strings.NewReader("{}"))
		if c.host != "" {
			req.Host = c.host
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %s %s: %d, want %d", c.name, c.method, c.path, resp.StatusCode, c.want)
		}
		if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%s: a 401 without WWW-Authenticate: Bearer", c.name)
		}
		if got := up.count() - before; got != map[bool]int{true: 1}[c.reaches] {
			t.Errorf("%s: reached the upstream %d times, want reaches=%v", c.name, got, c.reaches)
		}
	}
}

// sidecar runs a sidecar's Caddyfile in Caddy in front of up, with its
// key variable set to key.
func sidecar(t *testing.T, s apiproxy.Sidecar, up *upstream, key string) map[int]string {
	t.Helper()
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	s.Upstream = strings.TrimPrefix(srv.URL, "http://")
	return netsim.RunCaddyfile(t, s.Caddyfile(), s.KeyEnv+"="+key)
}

// The sidecar in Caddy's own engine: the offered OpenAI paths with the
// key, exactly (method, case, one id segment, no dot segment), the
// health path without it, the metrics on their port alone; a 401 for
// anything else without the key, a 404 with it.
func TestSidecarAdmitsOnlyOfferedPathsWithTheKey(t *testing.T) {
	up := &upstream{}
	s := apiproxy.Sidecar{Port: 8000, KeyEnv: "API_KEY", Health: apiproxy.Health{Path: "/health", Methods: []string{"GET"}},
		KeepAuthorization: true, MetricsPort: 8002, MetricsPath: "/metrics"}
	addrs := sidecar(t, s, up, "k3y")
	api, metrics := addrs[8000], addrs[8002]
	run(t, api, up, []try{
		{"no key", "POST", "", "/v1/chat/completions", "", 401, false},
		{"wrong key", "POST", "", "/v1/chat/completions", "Bearer nope", 401, false},
		{"key without Bearer", "POST", "", "/v1/chat/completions", "k3y", 401, false},
		{"unguarded path without key", "POST", "", "/invocations", "", 401, false},
		{"chat", "POST", "", "/v1/chat/completions", "Bearer k3y", 200, true},
		{"completions", "POST", "", "/v1/completions", "Bearer k3y", 200, true},
		{"models", "GET", "", "/v1/models", "Bearer k3y", 200, true},
		{"one model", "GET", "", "/v1/models/llama3-8b", "Bearer k3y", 200, true},
		{"below one model", "GET", "", "/v1/models/a/b", "Bearer k3y", 404, false},
		{"dot segment", "GET", "", "/v1/models/..", "Bearer k3y", 404, false},
		{"wrong method", "GET", "", "/v1/chat/completions", "Bearer k3y", 404, false},
		{"wrong case", "POST", "", "/V1/chat/completions", "Bearer k3y", 404, false},
		{"invocations with the key", "POST", "", "/invocations", "Bearer k3y", 404, false},
		{"lora with the key", "POST", "", "/v1/load_lora_adapter", "Bearer k3y", 404, false},
		{"metrics on the API port", "GET", "", "/metrics", "Bearer k3y", 404, false},
		{"health", "GET", "", "/health", "", 200, true},
		{"health by POST", "POST", "", "/health", "", 401, false},
	})
	if got := up.last().Header.Get("Authorization"); got != "" {
		t.Errorf("health passed an Authorization header %q", got)
	}
	run(t, api, up, []try{{"chat again", "POST", "", "/v1/chat/completions", "Bearer k3y", 200, true}})
	if got := up.last().Header.Get("Authorization"); got != "Bearer k3y" {
		t.Errorf("KeepAuthorization: upstream saw %q", got)
	}
	run(t, metrics, up, []try{
		{"metrics", "GET", "", "/metrics", "", 200, true},
		{"chat on the metrics port", "POST", "", "/v1/chat/completions", "Bearer k3y", 404, false},
		{"health on the metrics port", "GET", "", "/health", "", 404, false},
	})
}

// An empty key admits nobody, not even "Authorization: Bearer " (an
// HTTP server trims the blank it ends with); without KeepAuthorization
// the key does not travel on.
func TestSidecarWithoutKeyAdmitsNobody(t *testing.T) {
	up := &upstream{}
	s := apiproxy.Sidecar{Port: 8080, KeyEnv: "K", Health: apiproxy.Health{Path: "/", Methods: []string{"GET", "HEAD"}}}
	addrs := sidecar(t, s, up, "")
	run(t, addrs[8080], up, []try{
		{"empty bearer", "POST", "", "/v1/chat/completions", "Bearer ", 401, false},
		{"no header", "POST", "", "/v1/chat/completions", "", 401, false},
		{"health", "HEAD", "", "/", "", 200, true},
	})
	up2 := &upstream{}
	addrs = sidecar(t, s, up2, "secret")
	run(t, addrs[8080], up2, []try{{"chat", "POST", "", "/v1/chat/completions", "Bearer secret", 200, true}})
	if got := up2.last().Header.Get("Authorization"); got != "" {
		t.Errorf("the key travelled on: %q", got)
	}
}

// The gateway forwards a model's request only with that model's key, by
// the names the model is called by, keeping the Host header the
// interceptor routes by; an unknown name or another model's key is 401.
func TestGatewayChecksEachModelsKey(t *testing.T) {
	up := &upstream{}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	g := apiproxy.Gateway{Port: 8080, HealthPort: 8081, HealthPath: "/healthz", Upstream: strings.TrimPrefix(srv.URL, "http://"),
		Routes: []apiproxy.Route{{Hosts: []string{"a.example.com", "model-a.models.svc"}, KeyEnv: "KEY_A"}, {Hosts: []string{"model-b"}, KeyEnv: "KEY_B"}}}
	addrs := netsim.RunCaddyfile(t, g.Caddyfile(), "KEY_A=ka", "KEY_B=kb")
	run(t, addrs[8080], up, []try{
		{"a without key", "POST", "a.example.com", "/v1/chat/completions", "", 401, false},
		{"a with b's key", "POST", "a.example.com", "/v1/chat/completions", "Bearer kb", 401, false},
		{"unknown host with a's key", "POST", "c.example.com", "/v1/chat/completions", "Bearer ka", 401, false},
		{"a, not offered", "POST", "a.example.com", "/invocations", "Bearer ka", 404, false},
		{"a", "POST", "a.example.com", "/v1/chat/completions", "Bearer ka", 200, true},
	})
	if h := up.last().Host; h != "a.example.com" {
		t.Errorf("the interceptor would route by %q, want a.example.com", h)
	}
	run(t, addrs[8080], up, []try{
		{"a by its Service name and port", "POST", "model-a.models.svc:8080", "/v1/chat/completions", "Bearer ka", 200, true},
		{"b", "GET", "model-b", "/v1/models", "Bearer kb", 200, true},
	})
	if h := up.last().Host; h != "model-b" {
		t.Errorf("Host %q, want model-b", h)
	}
	run(t, addrs[8081], up, []try{{"health", "GET", "", "/healthz", "", 200, false}, {"else", "GET", "", "/x", "", 404, false}})
}

// The Ingress paths route every offered endpoint and nothing else of an
// engine, by networking/v1's matching.
func TestIngressPathsRouteOnlyTheOfferedEndpoints(t *testing.T) {
	routed := func(path string) bool {
		for _, p := range apiproxy.IngressPaths() {
			if netsim.IngressMatches(p.Type, p.Path, path) {
				return true
			}
		}
		return false
	}
	for _, p := range []string{"/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/models/llama3-8b"} {
		if !routed(p) {
			t.Errorf("%s is offered but not routed", p)
		}
	}
	for _, p := range []string{"/", "/invocations", "/tokenize", "/pooling", "/health", "/metrics", "/v1/embeddings", "/v1/modelsx",
		"/v1/chat/completions/batch", "/v1/load_lora_adapter", "/inference/v1/generate", "/pause"} {
		if routed(p) {
			t.Errorf("%s is routed to the model", p)
		}
	}
}

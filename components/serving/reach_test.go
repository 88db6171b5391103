package serving_test

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/ollama"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/netsim"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

func TestMain(m *testing.M) { netsim.Main(m) }

// Keys of the reach test: the stack's shared key, and the scaled-to-zero
// model's own.
const (
	sharedKey = "shared-key-0123456789abcdef0123456789"
	ownKey    = "sleepy-own-key-fedcba9876543210fedcba"
)

// reachStack is a serving plan with every way in: a model that always
// runs with a public hostname, one that scales from zero with its own
// key and a hostname, and an Ollama model on CPU nodes with a hostname;
// a client namespace; KEDA and its HTTP add-on installed by the program.
func reachStack(t *testing.T) serving.Resolved {
	t.Helper()
	pool := pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts
	o := serving.Options{ClientNamespaces: []string{"rag-app"}}.Defaults("cephfs", serving.Cilium)
	engine := func(name, host string, min int, key secret.Secret) serving.Engine {
		m := serving.ModelSpec{Name: name, Pool: "infer", Source: "s3://models/" + name, ParametersB: 8, Dtype: "bfloat16", TensorParallel: 1,
			MaxModelLen: 8192, GPUMemoryUtilization: 0.9, MinReplicas: &min, MaxReplicas: 2, QueueDepthTarget: 5, Hostname: host, APIKey: key}
		return serving.NewEngine(m, pool, o, nil, "")
	}
	tiny, _ := serving.NewOllamaServer(serving.ModelSpec{Name: "tiny", Runtime: serving.Ollama, Source: "llama3.2:3b", Hostname: "tiny.example.com"}, nil, o, "")
	return serving.Resolved{Options: o, Storage: &serving.Storage{Kind: serving.S3, Endpoint: "https://s3.example.com"},
		Engines:   []serving.Engine{engine("chat", "chat.example.com", 1, ""), engine("sleepy", "sleepy.example.com", 0, ownKey)},
		Ollamas:   []ollama.Server{tiny},
		ModelKeys: map[string]secret.Secret{"sleepy": ownKey}}
}

// reachObjects are the objects the program makes of the plan, as the
// cluster gets them: its own, and its charts rendered from the real
// archives with their values and patches; the HTTP add-on's chart with
// the program's values; the namespaces of the callers.
func reachObjects(t *testing.T, p serving.Resolved) []map[string]any {
	t.Helper()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	ns := p.Options.Namespace
	var objs []map[string]any
	for _, n := range []string{ns, serving.KEDANamespace, "ingress-nginx", "rag-app", "monitoring", "attacker"} {
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": n, "labels": kube.AnyMap(podsecurity.Labels(podsecurity.Restricted))}})
	}
	objs = append(objs, p.NetworkPolicies()...)
	cm := func(name string, data map[string]string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}, "data": kube.AnyMap(data)}
	}
	for _, e := range p.Engines {
		rel := serving.EngineRelease(helm.Source{}, e, serving.VLLMStackChart)
		objs = append(objs, rel.Apply(helmtest.RenderRelease(t, charts, rel, ns))...)
		objs = append(objs, cm(serving.ProxyConfigMap(e.Name), map[string]string{"Caddyfile": serving.EngineProxy().Caddyfile()}),
			serving.NetworkPolicy(ns, e, p.Options))
		if e.Hostname != "" {
			objs = append(objs, serving.Ingress(ns, e, p.Options))
		}
		if e.ScalesFromZero() {
			objs = append(objs, serving.InterceptorRoute(ns, e), serving.WakeService(ns, e))
		}
	}
	objs = append(objs, serving.GatewayDeployment(ns, p.Engines, p.Options.ProxyImage), cm(serving.GatewayName, serving.GatewayConfig(ns, p.Engines)),
		serving.GatewayNetworkPolicy(ns, p.Options), serving.InterceptorNetworkPolicy(ns))
	for _, o := range helmtest.RenderChart(t, serving.HTTPAddOnChart.Archive(charts), "keda-add-ons-http", serving.KEDANamespace, serving.HTTPAddOnValues(), false) {
		if o["metadata"].(map[string]any)["namespace"] == nil {
			o["metadata"].(map[string]any)["namespace"] = serving.KEDANamespace
		}
		objs = append(objs, o)
	}
	for _, srv := range p.Ollamas {
		rel := serving.OllamaRelease(helm.Source{}, srv, serving.OllamaChart)
		for _, o := range rel.Apply(helmtest.RenderRelease(t, charts, rel, ns)) {
			o["metadata"].(map[string]any)["namespace"] = ns
			objs = append(objs, o)
		}
		objs = append(objs, cm(srv.Release()+"-proxy", ollama.ProxyConfig()), serving.OllamaNetworkPolicy(ns, srv, p.Options),
			serving.OllamaEgress(ns, srv), serving.OllamaIngress(ns, srv, p.Options))
	}
	return objs
}

// call is one request and what must come of it.
type call struct {
	name         string
	method, path string
	key          string
	// want is the status, or 0 for a connection the network refuses.
	want int
	// reaches is whether the model server sees it.
	reaches bool
}

func request(t *testing.T, c call, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(c.method, url+c.path, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	return req
}

// seenBy counts the requests for path a stand-in saw.
func seenBy(seen []netsim.Seen, path string) int {
	n := 0
	for _, s := range seen {
		if s.Path == path {
			n++
		}
	}
	return n
}

// check sends each call and holds it to what it must come to, and the
// model server to having seen exactly the calls that reach it.
func check(t *testing.T, calls []call, send func(*http.Request) (*http.Response, error), url string, seen func() []netsim.Seen) {
	t.Helper()
	for _, c := range calls {
		before := seenBy(seen(), c.path)
		resp, err := send(request(t, c, url))
		switch {
		case c.want == 0:
			if !errors.Is(err, netsim.ErrDenied) {
				t.Errorf("%s: %s %s%s: %v (status %v), want the network policies to deny it", c.name, c.method, url, c.path, err, status(resp))
			}
		case err != nil:
			t.Errorf("%s: %s %s%s: %v, want %d", c.name, c.method, url, c.path, err, c.want)
		case resp.StatusCode != c.want:
			t.Errorf("%s: %s %s%s: %d, want %d", c.name, c.method, url, c.path, resp.StatusCode, c.want)
		}
		if resp != nil {
			resp.Body.Close()
		}
		if got := seenBy(seen(), c.path) - before; got != map[bool]int{true: 1}[c.reaches] {
			t.Errorf("%s: %s %s%s reached the model server %d times, want reaches=%v", c.name, c.method, url, c.path, got, c.reaches)
		}
	}
}

func status(r *http.Response) any {
	if r == nil {
		return nil
	}
	return r.StatusCode
}

// Every way into a model, tried with and without the key, from the
// internet (through the Ingress), from a client namespace, from another
// namespace and from Prometheus, on the objects the program makes, the
// network policies judged by cyclonus and every proxy run in Caddy with
// its container's environment, the models stood in for as lax as vLLM
// (--api-key guards /v1 alone) and Ollama (no key at all) are.
func TestNoWayIntoAModelWithoutItsKey(t *testing.T) {
	p := reachStack(t)
	ns := p.Options.Namespace
	c := netsim.New(t, reachObjects(t, p), map[string]map[string]string{
		ns + "/" + serving.APIKeySecret: {serving.APIKeyField: sharedKey, "api-key-sleepy": ownKey},
	})
	engine := func(model string) func() []netsim.Seen {
		return func() []netsim.Seen {
			c.Pod(ns, serving.DeploymentName(model))
			return c.VLLMs[ns+"/"+serving.DeploymentName(model)].Seen()
		}
	}
	viaIngress := func(r *http.Request) (*http.Response, error) { return c.ViaIngress("ingress-nginx", r) }
	from := func(peer netsim.Peer) func(*http.Request) (*http.Response, error) {
		return func(r *http.Request) (*http.Response, error) { return c.Do(peer, r) }
	}
	client := netsim.Peer{Namespace: "rag-app", Labels: map[string]string{"app": "rag"}}
	attacker := netsim.Peer{Namespace: "attacker", Labels: map[string]string{"app": "x"}}
	prometheus := netsim.Peer{Namespace: "monitoring", Labels: map[string]string{"app.kubernetes.io/name": "prometheus"}}

	t.Run("internet/always-on", func(t *testing.T) {
		check(t, []call{
			{"vLLM's unguarded inference is not routed", "POST", "/invocations", "", 404, false},
			{"nor with a key", "POST", "/invocations", sharedKey, 404, false},
			{"tokenize", "POST", "/tokenize", "", 404, false},
			{"pooling", "POST", "/pooling", sharedKey, 404, false},
			{"health", "GET", "/health", "", 404, false},
			{"metrics", "GET", "/metrics", "", 404, false},
			{"chat without a key", "POST", "/v1/chat/completions", "", 401, false},
			{"chat with a wrong key", "POST", "/v1/chat/completions", "nope", 401, false},
			{"chat with another model's key", "POST", "/v1/chat/completions", ownKey, 401, false},
			{"chat with the key", "POST", "/v1/chat/completions", sharedKey, 200, true},
			{"models with the key", "GET", "/v1/models", sharedKey, 200, true},
		}, viaIngress, "https://chat.example.com", engine("chat"))
	})
	t.Run("internet/scale-from-zero", func(t *testing.T) {
		check(t, []call{
			{"without a key nothing wakes it", "POST", "/v1/chat/completions", "", 401, false},
			{"the shared key is not its key", "POST", "/v1/chat/completions", sharedKey, 401, false},
			{"invocations", "POST", "/invocations", ownKey, 404, false},
			{"its own key", "POST", "/v1/chat/completions", ownKey, 200, true},
		}, viaIngress, "https://sleepy.example.com", engine("sleepy"))
	})
	t.Run("client namespace", func(t *testing.T) {
		svc := "http://" + serving.ServiceName("chat") + "." + ns + ".svc"
		check(t, []call{
			{"invocations without a key", "POST", "/invocations", "", 401, false},
			{"tokenize without a key", "POST", "/tokenize", "", 401, false},
			{"pooling without a key", "POST", "/pooling", "", 401, false},
			{"pause without a key", "POST", "/pause", "", 401, false},
			{"chat without a key", "POST", "/v1/chat/completions", "", 401, false},
			{"invocations with the key: not offered", "POST", "/invocations", sharedKey, 404, false},
			{"update_weights with the key: not offered", "POST", "/update_weights", sharedKey, 404, false},
			{"a dot segment past the prefix", "GET", "/v1/models/../../invocations", sharedKey, 404, false},
			{"chat with the key", "POST", "/v1/chat/completions", sharedKey, 200, true},
			{"completions with the key", "POST", "/v1/completions", sharedKey, 200, true},
		}, from(client), svc, engine("chat"))
		wake := "http://" + serving.RouteName("sleepy") + "." + ns + ".svc:8080"
		check(t, []call{
			{"wake without a key", "POST", "/v1/chat/completions", "", 401, false},
			{"wake with its key", "POST", "/v1/chat/completions", ownKey, 200, true},
		}, from(client), wake, engine("sleepy"))
		check(t, []call{
			{"the interceptor directly", "POST", "/v1/chat/completions", ownKey, 0, false},
		}, from(client), "http://keda-add-ons-http-interceptor-proxy.keda.svc:8080", engine("sleepy"))
		check(t, []call{
			{"a scaled-to-zero engine directly", "POST", "/v1/chat/completions", ownKey, 0, false},
		}, from(client), "http://"+serving.ServiceName("sleepy")+"."+ns+".svc", engine("sleepy"))
	})
	t.Run("another namespace", func(t *testing.T) {
		for _, url := range []string{
			"http://" + serving.ServiceName("chat") + "." + ns + ".svc",
			"http://" + serving.RouteName("sleepy") + "." + ns + ".svc:8080",
			"http://keda-add-ons-http-interceptor-proxy.keda.svc:8080",
			"http://" + serving.ServiceName("sleepy") + "." + ns + ".svc",
		} {
			check(t, []call{
				{"invocations", "POST", "/invocations", "", 0, false},
				{"chat", "POST", "/v1/chat/completions", "", 0, false},
			}, from(attacker), url, engine("chat"))
		}
	})
	t.Run("prometheus", func(t *testing.T) {
		svc := "http://" + serving.ServiceName("chat") + "." + ns + ".svc"
		check(t, []call{{"metrics", "GET", "/metrics", "", 200, true}, {"chat", "POST", "/v1/chat/completions", "", 404, false}},
			from(prometheus), svc+":8002", engine("chat"))
		check(t, []call{{"the API port", "POST", "/v1/chat/completions", sharedKey, 0, false}}, from(prometheus), svc, engine("chat"))
		check(t, []call{{"the metrics port from a client", "GET", "/metrics", "", 0, false}}, from(client), svc+":8002", engine("chat"))
	})
	t.Run("ollama", func(t *testing.T) {
		ollamaSeen := func() []netsim.Seen {
			c.Pod(ns, "ollama-tiny")
			return c.Ollamas[ns+"/ollama-tiny"].Seen()
		}
		check(t, []call{
			{"chat without a key", "POST", "/v1/chat/completions", "", 401, false},
			{"pull, routed nowhere", "POST", "/api/pull", sharedKey, 404, false},
			{"chat with the key", "POST", "/v1/chat/completions", sharedKey, 200, true},
		}, viaIngress, "https://tiny.example.com", ollamaSeen)
		svc := "http://ollama-tiny." + ns + ".svc"
		check(t, []call{
			{"its own API without a key", "POST", "/api/generate", "", 401, false},
			{"pull with the key: not offered", "POST", "/api/pull", sharedKey, 404, false},
			{"delete with the key: not offered", "DELETE", "/api/delete", sharedKey, 404, false},
			{"health", "GET", "/", "", 200, true},
			{"chat with the key", "POST", "/v1/chat/completions", sharedKey, 200, true},
		}, from(client), svc, ollamaSeen)
		check(t, []call{{"another namespace", "POST", "/v1/chat/completions", sharedKey, 0, false}}, from(attacker), svc, ollamaSeen)
		// the server reaches nothing outside; its pull Job, the registry
		server := c.Pod(ns, "ollama-tiny")
		pull := netsim.Peer{Namespace: ns, Labels: map[string]string{}}
		for k, v := range serving.OllamaPullPods(p.Ollamas[0]) {
			pull.Labels[k] = v.(string)
		}
		if c.AllowedOut(server, "104.18.1.1", 443) {
			t.Error("the Ollama server may reach the internet: only its pull needs to")
		}
		if !c.AllowedOut(pull, "104.18.1.1", 443) || c.AllowedOut(pull, "10.0.0.5", 443) {
			t.Errorf("the pull Job reaches the registry: %v; the cluster's addresses: %v", c.AllowedOut(pull, "104.18.1.1", 443), c.AllowedOut(pull, "10.0.0.5", 443))
		}
		for _, s := range ollamaSeen() {
			if s.Authorization != "" {
				t.Errorf("Ollama saw the key on %s %s", s.Method, s.Path)
			}
		}
	})
}

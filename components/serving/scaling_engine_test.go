package serving_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
)

// kedaScale is what KEDA does with a model's ScaledObject triggers in one
// polling cycle, given what each trigger's source reports:
//   - prometheus: the query runs in Prometheus (here its own engine); an
//     empty result is 0 (ignoreNullValues, default true), and the trigger is
//     active above activationThreshold, default 0 (KEDA
//     pkg/scalers/prometheus_scaler.go at v2.20.2);
//   - external-push with interceptorRoute: the HTTP add-on's scaler reports
//     the interceptor's in-flight requests for the route, the held ones
//     included, as the concurrency metric, and the trigger is active when
//     any metric value is above 0 (scaler/handlers.go, IsActive and
//     GetMetrics, at http-add-on v0.15.0; interceptor/proxy.go puts the
//     counting middleware before the wait for a ready endpoint);
//   - from zero, any active trigger scales to max(minReplicas, 1); above
//     zero, the HPA takes the largest ceil(value / target) over the
//     triggers, within the bounds.
func kedaScale(t *testing.T, so map[string]any, queue promql.Vector, held map[string]int, replicas int) int {
	t.Helper()
	keda := so["spec"].(map[string]any)
	active, desired := false, 0
	for _, raw := range keda["triggers"].([]any) {
		tr := raw.(map[string]any)
		md := tr["metadata"].(map[string]any)
		var value, target float64
		switch tr["type"] {
		case "prometheus":
			for _, s := range queue {
				value += s.F
			}
			fmt.Sscan(md["threshold"].(string), &target)
		case "external-push":
			if md["scalerAddress"] != serving.ScalerAddress {
				t.Fatalf("external-push trigger asks %v, the add-on's scaler is %s", md["scalerAddress"], serving.ScalerAddress)
			}
			value, target = float64(held[md["interceptorRoute"].(string)]), serving.WakeConcurrency
		default:
			t.Fatalf("trigger type %v", tr["type"])
		}
		active = active || value > 0
		desired = max(desired, int(math.Ceil(value/target)))
	}
	lo, hi := toInt(keda["minReplicaCount"]), toInt(keda["maxReplicaCount"])
	switch {
	case replicas == 0 && !active:
		return max(lo, 0)
	case replicas == 0:
		return max(lo, 1)
	case !active && lo == 0:
		return 0 // after the cooldown
	}
	return min(max(desired, lo, 1), hi)
}

func toInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case float64:
		return int(x)
	}
	return -1
}

// queueDepth runs a model's scale-out query in Prometheus's own engine over
// synthetic series at minute 10.
func queueDepth(t *testing.T, model, series string) promql.Vector {
	t.Helper()
	storage := promqltest.LoadedStorage(t, "load 1m\n"+series)
	t.Cleanup(func() { _ = storage.Close() })
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	q, err := engine.NewInstantQuery(context.Background(), storage, nil, serving.QueueDepthQuery(model), time.Unix(600, 0))
	if err != nil {
		t.Fatal(err)
	}
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	v, err := res.Vector()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A model with minReplicas 0 wakes on its first request and stays asleep
// without traffic; scale-out stays on queue depth.
func TestScaleFromZero(t *testing.T) {
	t.Parallel()
	pool := pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts
	o := serving.Options{}.Defaults("cephfs", serving.Cilium)
	m := serving.ModelSpec{Name: "llama3-8b", Pool: "infer", Source: "s3://m/l", ParametersB: 8, Dtype: "bfloat16", TensorParallel: 1,
		MaxModelLen: 8192, GPUMemoryUtilization: 0.9, MinReplicas: new(0), MaxReplicas: 6, QueueDepthTarget: 5}
	e := serving.NewEngine(m, pool, o, nil, "nvidia")
	keda := serving.ScaledObject("models", e)
	route := serving.RouteName(m.Name)

	// No engine pod: only other series exist. The queue-depth query
	// finds nothing, which KEDA reads as 0.
	asleep := `up{job="node-exporter"} 1x20`
	if v := queueDepth(t, m.Name, asleep); len(v) != 0 {
		t.Fatalf("with no engine pod the queue-depth query returned %v", v)
	}
	if got := kedaScale(t, keda, queueDepth(t, m.Name, asleep), map[string]int{route: 1}, 0); got != 1 {
		t.Errorf("one request held by the interceptor at zero replicas: KEDA scales to %d, want 1", got)
	}
	if got := kedaScale(t, keda, queueDepth(t, m.Name, asleep), map[string]int{}, 0); got != 0 {
		t.Errorf("no traffic at zero replicas: KEDA scales to %d, want 0", got)
	}
	// Another model's held requests do not wake this one.
	if got := kedaScale(t, keda, queueDepth(t, m.Name, asleep), map[string]int{"model-other": 3}, 0); got != 0 {
		t.Errorf("another route's requests woke %s: %d replicas", m.Name, got)
	}

	// vLLM labels its metrics with the served model name, the model's
	// config name (--served-model-name; labelnames model_name from
	// model_config.served_model_name, vllm/v1/metrics/loggers.py at v0.11.0).
	// Awake, two replicas with 23 requests waiting in all: queue depth
	// (target 5 per replica) asks for 5; the interceptor's 40 in flight
	// would ask for 1.
	busy := fmt.Sprintf(`vllm:num_requests_waiting{model_name="%[1]s",pod="a"} 0+1x10
vllm:num_requests_waiting{model_name="%[1]s",pod="b"} 13x20
vllm:num_requests_waiting{model_name="other",pod="c"} 100x20`, m.Name)
	v := queueDepth(t, m.Name, busy)
	if len(v) != 1 || v[0].F != 23 {
		t.Fatalf("queue depth %v, want 23 waiting for %s", v, m.Name)
	}
	if got := kedaScale(t, keda, v, map[string]int{route: 40}, 2); got != 5 {
		t.Errorf("23 waiting on 2 replicas: KEDA scales to %d, want 5", got)
	}
	// Bounded by maxReplicas.
	flood := fmt.Sprintf(`vllm:num_requests_waiting{model_name="%s",pod="a"} 500x20`, m.Name)
	if got := kedaScale(t, keda, queueDepth(t, m.Name, flood), map[string]int{route: 900}, 2); got != 6 {
		t.Errorf("a flood scales to %d, want maxReplicas 6", got)
	}
}

// The interceptor holds a request for as long as a cold start may take
// (its readiness timeout per route, InterceptorRoute spec.timeouts at
// v0.15.0), so the request that wakes a model is served, not dropped; and
// it routes by the Host header, so every name a client uses must be listed.
func TestWakeRouteHoldsTheFirstRequest(t *testing.T) {
	t.Parallel()
	pool := pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts
	m := serving.ModelSpec{Name: "llama3-70b", Pool: "infer", Source: "s3://m/l", ParametersB: 70, Dtype: "bfloat16", TensorParallel: 2,
		MaxModelLen: 8192, GPUMemoryUtilization: 0.9, MinReplicas: new(0), MaxReplicas: 2, QueueDepthTarget: 5, Hostname: "llama.acme.example"}
	e := serving.NewEngine(m, pool, serving.Options{}.Defaults("cephfs", serving.Cilium), nil, "nvidia")
	route := serving.InterceptorRoute("models", e)
	readiness, err := time.ParseDuration(get(route, "spec", "timeouts", "readiness").(string))
	if err != nil {
		t.Fatal(err)
	}
	startup := time.Duration(fit.StartupBudgetSeconds(e.Weights(), 200)) * time.Second
	if readiness < startup+30*time.Minute {
		t.Errorf("the interceptor gives up after %v, a cold start (node, image, weights, %v of loading) takes longer", readiness, startup)
	}
	// The interceptor routes on the request's Host header with its port
	// stripped (net.SplitHostPort), matched exactly against the route's
	// hosts (pkg/routing/table.go Route, key.go stripPort and
	// tablememory.go Route at v0.15.0). A client of the in-cluster
	// endpoint sends that URL's host; the Ingress passes the public name.
	var hosts []string
	for _, h := range get(route, "spec", "rules").([]any)[0].(map[string]any)["hosts"].([]any) {
		hosts = append(hosts, h.(string))
	}
	endpoint := serving.Endpoint("models", e)
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	routed := u.Host
	if h, _, err := net.SplitHostPort(u.Host); err == nil {
		routed = h
	}
	for _, h := range []string{"llama.acme.example", routed} {
		if !slices.Contains(hosts, h) {
			t.Errorf("the interceptor routes no request with Host %s to the model: route hosts %v", h, hosts)
		}
	}
	if endpoint != "http://model-llama3-70b.models.svc:8080/v1" {
		t.Errorf("in-cluster endpoint %s does not go through the wake Service", endpoint)
	}
	ing := serving.Ingress("models", e, serving.Options{}.Defaults("cephfs", serving.Cilium))
	backend := fmt.Sprint(get(ing, "spec", "rules").([]any)[0])
	if !containsWord(backend, "name:model-llama3-70b") || !containsWord(backend, "number:8080") {
		t.Errorf("the Ingress does not send to the interceptor: %s", backend)
	}
	if to := get(ing, "metadata", "annotations", "nginx.ingress.kubernetes.io/proxy-read-timeout"); to != fmt.Sprint(int(readiness.Seconds())) {
		t.Errorf("nginx waits %v s for the interceptor, which holds requests %v", to, readiness)
	}
}

func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w && (i+len(w) == len(s) || s[i+len(w)] == ' ' || s[i+len(w)] == ']' || s[i+len(w)] == '}') {
			return true
		}
	}
	return false
}

// A long non-streaming completion sends its response headers only when it
// is done: the interceptor in front of a scale-from-zero model must wait
// for them as long as the ingress waits for a warm model's reply. Unset,
// the route's responseHeader timeout is the interceptor's global default,
// 300 s (keda-add-ons-http v0.15.0: interceptor/config/timeouts.go, and
// the InterceptorRoute CRD's spec.timeouts.responseHeader description),
// which cut such completions off after five minutes.
func TestInterceptorWaitsAsLongAsTheIngress(t *testing.T) {
	t.Parallel()
	pool := pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts
	m := serving.ModelSpec{Name: "llama3-8b", Pool: "infer", Source: "s3://m/l", ParametersB: 8, Dtype: "bfloat16", TensorParallel: 1,
		MaxModelLen: 8192, GPUMemoryUtilization: 0.9, MinReplicas: new(0), MaxReplicas: 2, QueueDepthTarget: 5, Hostname: "llama.acme.example"}
	o := serving.Options{}.Defaults("cephfs", serving.Cilium)
	cold := serving.NewEngine(m, pool, o, nil, "nvidia")
	m.MinReplicas = new(1)
	warm := serving.NewEngine(m, pool, o, nil, "nvidia")
	const interceptorDefault = 300 * time.Second
	header := interceptorDefault
	if v, ok := get(serving.InterceptorRoute("models", cold), "spec", "timeouts", "responseHeader").(string); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		header = d
	}
	ingress, err := strconv.Atoi(get(serving.Ingress("models", warm, o), "metadata", "annotations", "nginx.ingress.kubernetes.io/proxy-read-timeout").(string))
	if err != nil {
		t.Fatal(err)
	}
	if header < time.Duration(ingress)*time.Second {
		t.Errorf("the interceptor waits %v for response headers, the ingress %ds: a completion between the two fails only when the model scales from zero", header, ingress)
	}
}

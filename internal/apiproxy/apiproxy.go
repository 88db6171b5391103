// Package apiproxy is the API-key proxy in front of every model: what it
// admits (the OpenAI paths the product offers, with the model's key; the
// probes' health path without one), as Caddyfiles for Caddy, the proxy's
// image, in three shapes: a sidecar in the engine's pod (vLLM, Ollama),
// its metrics site for Prometheus, and the gateway that checks the key
// before a scaled-to-zero model is woken. A model server's own key check
// is not enough: vLLM's --api-key guards only /v1 (vLLM
// docs/usage/security.md, "API Key Authentication Limitations"), and
// Ollama has none.
package apiproxy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Endpoint is one method and path a model offers its clients. A path
// ending in "/" offers one path segment below it (an id).
type Endpoint struct{ Method, Path string }

// OpenAI are the OpenAI API's paths the product offers on every runtime:
// chat and text completions, and the model list with one model's entry.
// Nothing else of an engine is reachable with a key, let alone without.
var OpenAI = []Endpoint{
	{"POST", "/v1/chat/completions"},
	{"POST", "/v1/completions"},
	{"GET", "/v1/models"},
	{"GET", "/v1/models/"},
}

// IngressPath is one path rule of an Ingress (networking.k8s.io/v1).
type IngressPath struct{ Path, Type string }

// IngressPaths route the OpenAI endpoints: each path exactly, and a path
// with ids below it as a Prefix, which matches it and what lies below it
// by whole path elements (networking/v1 HTTPIngressPath, pathType Prefix).
func IngressPaths() []IngressPath {
	var out []IngressPath
	for _, e := range OpenAI {
		if strings.HasSuffix(e.Path, "/") {
			continue
		}
		typ := "Exact"
		for _, sub := range OpenAI {
			if sub.Path == e.Path+"/" {
				typ = "Prefix"
			}
		}
		if !slices.Contains(out, IngressPath{e.Path, typ}) {
			out = append(out, IngressPath{e.Path, typ})
		}
	}
	return out
}

// idSegment is what one id segment may be: no "/", and no dot segment
// ("." or ".."), so that no path reaches past its prefix upstream.
const idSegment = `[A-Za-z0-9_:-][A-Za-z0-9._:-]*`

// offered is the CEL condition for the endpoints, on the request's
// decoded path (Caddy's {path}); paths compare exactly, case included.
func offered(eps []Endpoint) string {
	var or []string
	for _, e := range eps {
		cond := fmt.Sprintf(`{path} == %q`, e.Path)
		if strings.HasSuffix(e.Path, "/") {
			cond = fmt.Sprintf(`{path}.matches(%q)`, "^"+regexp.QuoteMeta(e.Path)+idSegment+"$")
		}
		or = append(or, fmt.Sprintf(`({method} == %q && %s)`, e.Method, cond))
	}
	return "(" + strings.Join(or, " || ") + ")"
}

// keyed is the CEL condition that the request carries the key in env:
// "Authorization: Bearer <key>", the header vLLM's --api-key checks, so
// clients switch runtimes by endpoint only. An empty key admits nobody
// (an HTTP server trims the blank a "Bearer " header would end with).
func keyed(env string) string {
	return fmt.Sprintf(`{http.request.header.Authorization} == "Bearer " + {env.%[1]s} && {env.%[1]s} != ""`, env)
}

// Health is a path the kubelet's probes read without a key.
type Health struct {
	Path string
	// Methods are the methods it answers.
	Methods []string
}

// Sidecar is the proxy in a model server's pod: the only listener on
// the pod's address, the server itself on loopback.
type Sidecar struct {
	// Port is where clients (the Service) reach the proxy.
	Port int
	// Upstream is the server, host:port on loopback.
	Upstream string
	// KeyEnv is the environment variable holding the model's key.
	KeyEnv string
	// Health is passed through without a key, for the probes.
	Health Health
	// KeepAuthorization passes the key on (vLLM checks it again); Ollama
	// has no use for it.
	KeepAuthorization bool
	// MetricsPort, when set, serves the server's MetricsPath there, and
	// nothing else: the network policy admits Prometheus to it alone.
	MetricsPort int
	MetricsPath string
	// Endpoints are what a valid key reaches (default: OpenAI).
	Endpoints []Endpoint
}

const global = `{
	admin off
	persist_config off
	auto_https off
}
`

// denied answers a request without a valid key; unoffered a keyed
// request for anything the product does not offer.
const (
	denied = `	handle {
		header WWW-Authenticate "Bearer"
		respond "missing or wrong API key" 401
	}
`
	unoffered = `respond "not offered" 404`
)

// Caddyfile is the sidecar's configuration. The site is plain HTTP on
// the port (the ingress terminates TLS); the order of the handle blocks
// is the order Caddy tries them in.
func (s Sidecar) Caddyfile() string {
	eps := s.Endpoints
	if eps == nil {
		eps = OpenAI
	}
	var b strings.Builder
	b.WriteString(global)
	fmt.Fprintf(&b, "\nhttp://:%d {\n", s.Port)
	fmt.Fprintf(&b, "\t@health {\n\t\tmethod %s\n\t\tpath %s\n\t}\n", strings.Join(s.Health.Methods, " "), s.Health.Path)
	fmt.Fprintf(&b, "\thandle @health {\n\t\treverse_proxy %s\n\t}\n", s.Upstream)
	fmt.Fprintf(&b, "\t@offered expression `%s && %s`\n", keyed(s.KeyEnv), offered(eps))
	fmt.Fprintf(&b, "\thandle @offered {\n\t\treverse_proxy %s {\n", s.Upstream)
	if !s.KeepAuthorization {
		b.WriteString("\t\t\theader_up -Authorization\n")
	}
	// stream tokens as they come
	b.WriteString("\t\t\tflush_interval -1\n\t\t}\n\t}\n")
	fmt.Fprintf(&b, "\t@keyed expression `%s`\n\thandle @keyed {\n\t\t%s\n\t}\n", keyed(s.KeyEnv), unoffered)
	b.WriteString(denied + "}\n")
	if s.MetricsPort > 0 {
		fmt.Fprintf(&b, "\nhttp://:%d {\n\t@metrics {\n\t\tmethod GET\n\t\tpath %s\n\t}\n", s.MetricsPort, s.MetricsPath)
		fmt.Fprintf(&b, "\thandle @metrics {\n\t\treverse_proxy %s\n\t}\n\thandle {\n\t\trespond 404\n\t}\n}\n", s.Upstream)
	}
	return b.String()
}

// Route is one model behind the gateway: the Host names it is called by
// and the environment variable holding its key.
type Route struct {
	Hosts  []string
	KeyEnv string
}

// Gateway checks a scaled-to-zero model's key before the HTTP add-on's
// interceptor wakes the model: a request without the model's key never
// reaches the interceptor, so no anonymous caller starts GPU nodes. It
// keeps the Host header, by which the interceptor routes.
type Gateway struct {
	// Port is where clients and the ingress controller reach it;
	// HealthPort answers the probes at HealthPath.
	Port, HealthPort int
	HealthPath       string
	// Upstream is the interceptor, host:port.
	Upstream string
	Routes   []Route
}

// Caddyfile is the gateway's configuration.
func (g Gateway) Caddyfile() string {
	var b strings.Builder
	b.WriteString(global)
	fmt.Fprintf(&b, "\nhttp://:%d {\n", g.Port)
	for i, r := range g.Routes {
		hosts := strings.Join(r.Hosts, " ")
		fmt.Fprintf(&b, "\t@offered%d {\n\t\thost %s\n\t\texpression `%s && %s`\n\t}\n", i, hosts, keyed(r.KeyEnv), offered(OpenAI))
		// the interceptor holds a request through a cold start; the reply
		// may then stream for as long as the ingress waits
		fmt.Fprintf(&b, "\thandle @offered%d {\n\t\treverse_proxy %s {\n\t\t\tflush_interval -1\n\t\t}\n\t}\n", i, g.Upstream)
		fmt.Fprintf(&b, "\t@keyed%d {\n\t\thost %s\n\t\texpression `%s`\n\t}\n\thandle @keyed%d {\n\t\t%s\n\t}\n", i, hosts, keyed(r.KeyEnv), i, unoffered)
	}
	b.WriteString(denied + "}\n")
	fmt.Fprintf(&b, "\nhttp://:%d {\n\thandle %s {\n\t\trespond \"ok\" 200\n\t}\n\thandle {\n\t\trespond 404\n\t}\n}\n", g.HealthPort, g.HealthPath)
	return b.String()
}

// KeyEnv names the environment variable of a model's key in a proxy
// that holds several.
func KeyEnv(model string) string {
	return "API_KEY_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(model))
}

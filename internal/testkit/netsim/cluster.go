// Package netsim follows an HTTP request through a stack's rendered
// objects as a cluster would: an Ingress's rules (networking/v1 path
// matching), a Service's port to its pods (ExternalName followed), the
// NetworkPolicies' verdict on every hop, judged by cyclonus's matcher (an
// implementation of the NetworkPolicy semantics built for conformance
// testing), and then whatever listens in the pod on that port, where the
// pod's processes bind it: the real Caddy for every proxy container, in a
// process of its own with the container's environment, and stand-ins for
// vLLM, Ollama and the HTTP add-on's interceptor that are as lax as the
// real ones. A pod runs only what its objects say, and listens only where
// its containers bind: a process on loopback is reachable from its own pod
// alone.
package netsim

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mattfenwick/cyclonus/pkg/matcher"

	"github.com/natron/gpu-node-pools/internal/plain"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Peer is where a connection comes from: a pod's namespace and labels.
type Peer struct {
	Namespace string
	Labels    map[string]string
}

// IngressController is the ingress controller's pod (ingress-nginx's
// chart labels), in namespace ns.
func IngressController(ns string) Peer {
	return Peer{Namespace: ns, Labels: map[string]string{"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller"}}
}

// Cluster is a stack's objects, as a network.
type Cluster struct {
	t        *testing.T
	objs     []map[string]any
	secrets  map[string]map[string]string
	nsLabels map[string]map[string]string
	policy   *matcher.Policy

	mu   sync.Mutex
	pods map[string]*pod
	// VLLMs and Ollamas are the stand-ins started, by "namespace/Deployment".
	VLLMs   map[string]*VLLM
	Ollamas map[string]*Ollama
}

// pod is one running pod of a Deployment.
type pod struct {
	ns, name string
	labels   map[string]string
	ip       string
	spec     map[string]any
	// public are the ports bound on the pod's address (and loopback),
	// loopback those bound on loopback only: port -> local address.
	public, loopback map[int]string
}

// New is a cluster of objs (plain objects, as rendered) with the Secrets'
// values (by "namespace/name", each field's value), which the containers'
// environment reads.
func New(t *testing.T, objs []map[string]any, secrets map[string]map[string]string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, objs: objs, secrets: secrets, nsLabels: map[string]map[string]string{},
		pods: map[string]*pod{}, VLLMs: map[string]*VLLM{}, Ollamas: map[string]*Ollama{}}
	var pols []*networkingv1.NetworkPolicy
	for _, o := range objs {
		switch o["kind"] {
		case "NetworkPolicy":
			var np networkingv1.NetworkPolicy
			b, _ := json.Marshal(o)
			if err := json.Unmarshal(b, &np); err != nil {
				t.Fatalf("NetworkPolicy %v: %v", meta(o, "name"), err)
			}
			pols = append(pols, &np)
		case "Namespace":
			labels := map[string]string{}
			if l, ok := dig(o, "metadata", "labels").(map[string]any); ok {
				for k, v := range l {
					labels[k] = fmt.Sprint(v)
				}
			}
			c.nsLabels[meta(o, "name")] = labels
		}
	}
	c.policy = matcher.BuildNetworkPolicies(true, pols)
	return c
}

func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func meta(o map[string]any, key string) string {
	s, _ := dig(o, "metadata", key).(string)
	return s
}

func (c *Cluster) namespaceLabels(ns string) map[string]string {
	out := map[string]string{"kubernetes.io/metadata.name": ns}
	for k, v := range c.nsLabels[ns] {
		out[k] = v
	}
	return out
}

// Allowed is the NetworkPolicies' verdict on a TCP connection from a peer
// to a pod's port.
func (c *Cluster) Allowed(from Peer, to Peer, port int, portName string) bool {
	peer := func(p Peer, ip string) *matcher.TrafficPeer {
		return &matcher.TrafficPeer{IP: ip, Internal: &matcher.InternalPeer{Namespace: p.Namespace, PodLabels: p.Labels, NamespaceLabels: c.namespaceLabels(p.Namespace)}}
	}
	return c.policy.IsTrafficAllowed(&matcher.Traffic{
		Source: peer(from, "10.244.1.1"), Destination: peer(to, "10.244.2.2"),
		ResolvedPort: port, ResolvedPortName: portName, Protocol: corev1.ProtocolTCP,
	}).IsAllowed()
}

// AllowedOut is the NetworkPolicies' verdict on a pod's TCP connection to
// an address outside the cluster.
func (c *Cluster) AllowedOut(from Peer, ip string, port int) bool {
	return c.policy.IsTrafficAllowed(&matcher.Traffic{
		Source:      &matcher.TrafficPeer{IP: "10.244.1.1", Internal: &matcher.InternalPeer{Namespace: from.Namespace, PodLabels: from.Labels, NamespaceLabels: c.namespaceLabels(from.Namespace)}},
		Destination: &matcher.TrafficPeer{IP: ip}, ResolvedPort: port, Protocol: corev1.ProtocolTCP,
	}).IsAllowed()
}

// Do sends req from a pod: to a Service by its cluster name
// (<name>.<namespace>.svc[.cluster.local]), the only names in-cluster
// clients use here.
func (c *Cluster) Do(from Peer, req *http.Request) (*http.Response, error) {
	ns, name, port, err := serviceName(req.URL.Host)
	if err != nil {
		return nil, err
	}
	return c.toService(from, ns, name, port, req)
}

// serviceName splits host:port of a Service's cluster name.
func serviceName(hostport string) (ns, name string, port int, err error) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		host, p = hostport, "80"
	}
	port, _ = strconv.Atoi(p)
	parts := strings.Split(strings.TrimSuffix(host, ".cluster.local"), ".")
	if len(parts) != 3 || parts[2] != "svc" {
		return "", "", 0, fmt.Errorf("%s is no Service's cluster name", hostport)
	}
	return parts[1], parts[0], port, nil
}

// ViaIngress sends an external client's request through the Ingress
// that routes its host and path: the ingress controller answers 404
// itself when no path matches, and otherwise connects to the backend
// Service from its own pod.
func (c *Cluster) ViaIngress(controllerNS string, req *http.Request) (*http.Response, error) {
	host := req.URL.Hostname()
	var best map[string]any
	bestNS, bestLen := "", -1
	for _, o := range c.objs {
		if o["kind"] != "Ingress" {
			continue
		}
		rules, _ := dig(o, "spec", "rules").([]any)
		for _, r := range rules {
			if dig(r, "host") != host {
				continue
			}
			paths, _ := dig(r, "http", "paths").([]any)
			for _, p := range paths {
				pm := p.(map[string]any)
				path, _ := pm["path"].(string)
				if IngressMatches(fmt.Sprint(pm["pathType"]), path, req.URL.Path) && len(path) > bestLen {
					best, bestNS, bestLen = pm, meta(o, "namespace"), len(path)
				}
			}
		}
	}
	if best == nil {
		rec := httptest.NewRecorder()
		http.Error(rec, "default backend - 404", http.StatusNotFound)
		return rec.Result(), nil
	}
	svc, _ := dig(best, "backend", "service", "name").(string)
	port := toInt(dig(best, "backend", "service", "port", "number"))
	return c.toService(IngressController(controllerNS), bestNS, svc, port, req)
}

// IngressMatches is networking/v1's path matching (HTTPIngressPath):
// Exact matches the URL path exactly, case-sensitive; Prefix by whole
// path elements split on "/" ("/foo" matches "/foo" and "/foo/bar", not
// "/foobar"), a trailing "/" ignored.
func IngressMatches(pathType, path, urlPath string) bool {
	switch pathType {
	case "Exact":
		return urlPath == path
	case "Prefix":
		p := strings.TrimSuffix(path, "/")
		return p == "" || urlPath == p || strings.HasPrefix(urlPath, p+"/")
	}
	return false
}

func toInt(v any) int { return plain.Int(v) }

func (c *Cluster) object(kind, ns, name string) map[string]any {
	for _, o := range c.objs {
		if o["kind"] == kind && meta(o, "name") == name && (ns == "" || meta(o, "namespace") == ns) {
			return o
		}
	}
	return nil
}

// toService connects from a peer to a Service's port: its pod, the
// container port its targetPort names, the policies' verdict, then what
// listens there on the pod's address.
func (c *Cluster) toService(from Peer, ns, name string, port int, req *http.Request) (*http.Response, error) {
	svc := c.object("Service", ns, name)
	if svc == nil {
		return nil, fmt.Errorf("no Service %s/%s", ns, name)
	}
	if ext, _ := dig(svc, "spec", "externalName").(string); ext != "" {
		ens, ename, _, err := serviceName(ext)
		if err != nil {
			return nil, err
		}
		return c.toService(from, ens, ename, port, req)
	}
	var target any
	ports, _ := dig(svc, "spec", "ports").([]any)
	for _, p := range ports {
		if toInt(dig(p, "port")) == port {
			target = dig(p, "targetPort")
			if target == nil {
				target = port
			}
		}
	}
	if target == nil {
		return nil, fmt.Errorf("Service %s/%s has no port %d", ns, name, port)
	}
	p, err := c.podFor(ns, dig(svc, "spec", "selector"))
	if err != nil {
		return nil, fmt.Errorf("Service %s/%s: %w", ns, name, err)
	}
	podPort, portName := p.resolve(target)
	if podPort == 0 {
		return nil, fmt.Errorf("Service %s/%s: no container port %v in pod %s", ns, name, target, p.name)
	}
	if !c.Allowed(from, Peer{p.ns, p.labels}, podPort, portName) {
		return nil, fmt.Errorf("%w: %s %v -> pod %s/%s port %d", ErrDenied, from.Namespace, from.Labels, p.ns, p.name, podPort)
	}
	addr, ok := p.public[podPort]
	if !ok {
		return nil, fmt.Errorf("%w: nothing listens on pod %s/%s's address at port %d", ErrRefused, p.ns, p.name, podPort)
	}
	out := req.Clone(req.Context())
	if out.Host == "" {
		out.Host = req.URL.Host
	}
	out.URL.Scheme, out.URL.Host, out.RequestURI = "http", addr, ""
	return noKeepAlive.RoundTrip(out)
}

var noKeepAlive = &http.Transport{DisableKeepAlives: true}

// Errors of a connection.
var (
	ErrDenied  = fmt.Errorf("the network policies deny the connection")
	ErrRefused = fmt.Errorf("connection refused")
)

// resolve is the pod port a Service's targetPort names: a number, or a
// container port's name (any of its containers', sidecars' included).
func (p *pod) resolve(target any) (int, string) {
	if n := toInt(target); n > 0 {
		for _, c := range p.containers() {
			for _, cp := range anyList(c["ports"]) {
				if toInt(dig(cp, "containerPort")) == n {
					name, _ := dig(cp, "name").(string)
					return n, name
				}
			}
		}
		return n, ""
	}
	for _, c := range p.containers() {
		for _, cp := range anyList(c["ports"]) {
			if dig(cp, "name") == target {
				return toInt(dig(cp, "containerPort")), fmt.Sprint(target)
			}
		}
	}
	return 0, ""
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

// containers are what runs for the pod's lifetime: its containers and
// its native sidecars (init containers that restart always).
func (p *pod) containers() []map[string]any {
	var out []map[string]any
	for _, c := range anyList(p.spec["initContainers"]) {
		if cm := c.(map[string]any); cm["restartPolicy"] == "Always" {
			out = append(out, cm)
		}
	}
	for _, c := range anyList(p.spec["containers"]) {
		out = append(out, c.(map[string]any))
	}
	return out
}

// podFor is the running pod of the Deployment the selector picks.
func (c *Cluster) podFor(ns string, selector any) (*pod, error) {
	sel, _ := selector.(map[string]any)
	if len(sel) == 0 {
		return nil, fmt.Errorf("no selector")
	}
	for _, o := range c.objs {
		if o["kind"] != "Deployment" || meta(o, "namespace") != ns {
			continue
		}
		labels, _ := dig(o, "spec", "template", "metadata", "labels").(map[string]any)
		match := true
		for k, v := range sel {
			if fmt.Sprint(labels[k]) != fmt.Sprint(v) {
				match = false
			}
		}
		if match {
			return c.start(o)
		}
	}
	return nil, fmt.Errorf("no Deployment's pods match %v", sel)
}

// Pod starts (once) and is a Deployment's pod, for peers.
func (c *Cluster) Pod(ns, deployment string) Peer {
	o := c.object("Deployment", ns, deployment)
	if o == nil {
		c.t.Fatalf("no Deployment %s/%s", ns, deployment)
	}
	p, err := c.start(o)
	if err != nil {
		c.t.Fatal(err)
	}
	return Peer{p.ns, p.labels}
}

func (c *Cluster) start(o map[string]any) (*pod, error) {
	key := meta(o, "namespace") + "/" + meta(o, "name")
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pods[key]; ok {
		return p, nil
	}
	p := &pod{ns: meta(o, "namespace"), name: meta(o, "name"), ip: fmt.Sprintf("10.244.0.%d", len(c.pods)+2),
		labels: map[string]string{}, public: map[int]string{}, loopback: map[int]string{}}
	p.spec, _ = dig(o, "spec", "template", "spec").(map[string]any)
	if l, ok := dig(o, "spec", "template", "metadata", "labels").(map[string]any); ok {
		for k, v := range l {
			p.labels[k] = fmt.Sprint(v)
		}
	}
	if err := c.run(p); err != nil {
		return nil, fmt.Errorf("pod %s: %w", key, err)
	}
	c.pods[key] = p
	return p, nil
}

// imageIs reports whether a container's image is repo's.
func imageIs(ctr map[string]any, repo string) bool {
	img, _ := ctr["image"].(string)
	img = strings.TrimPrefix(strings.TrimPrefix(img, "docker.io/"), "library/")
	return strings.HasPrefix(img, repo+":") || strings.HasPrefix(img, repo+"@") || img == repo
}

// env is a container's environment as the kubelet gives it, Secrets
// resolved; a missing Secret or field fails like the kubelet's
// CreateContainerConfigError.
func (c *Cluster) env(ns string, ctr map[string]any) ([]string, error) {
	var out []string
	for _, e := range anyList(ctr["env"]) {
		name := fmt.Sprint(dig(e, "name"))
		if v, ok := dig(e, "value").(string); ok {
			out = append(out, name+"="+v)
			continue
		}
		if ref, ok := dig(e, "valueFrom", "secretKeyRef").(map[string]any); ok {
			data, ok := c.secrets[ns+"/"+fmt.Sprint(ref["name"])]
			v, has := data[fmt.Sprint(ref["key"])]
			if !ok || !has {
				return nil, fmt.Errorf("container %v: secret %v key %v not found", ctr["name"], ref["name"], ref["key"])
			}
			out = append(out, name+"="+v)
		}
	}
	return out, nil
}

func lookup(env []string, name string) (string, bool) {
	for _, e := range slices.Backward(env) {
		if k, v, _ := strings.Cut(e, "="); k == name {
			return v, true
		}
	}
	return "", false
}

package serving

import (
	"net/url"

	"github.com/natron/gpu-node-pools/internal/kube"

	"slices"
	"strconv"
)

// Network exposure of the serving namespace: nothing in or out unless a
// policy here admits it (DefaultDeny), DNS for every pod, the model
// servers reachable only from their callers, the download Jobs reaching
// only the weights store, and cert-manager's HTTP-01 solver reachable from
// the ingress controller.

// DNS is where pods resolve names: the cluster DNS pods, in kube-system
// with the k8s-app=kube-dns label on AKS and kubeadm clusters alike.
var DNS = struct {
	Namespace string
	Labels    map[string]any
}{"kube-system", map[string]any{"k8s-app": "kube-dns"}}

// IdentityHost is Entra ID's login endpoint, where a download Job with
// workload identity trades its service account token for a storage token
// (the AZURE_AUTHORITY_HOST the workload identity webhook injects).
const IdentityHost = "login.microsoftonline.com"

// ACMESolverPort is where cert-manager's HTTP-01 solver pod listens
// (pkg/issuer/acme/http/pod.go, acmeSolverListenPort, cert-manager v1.x).
const ACMESolverPort = 8089

// ACMESolverLabel marks cert-manager's HTTP-01 solver pods.
const ACMESolverLabel = "acme.cert-manager.io/http01-solver"

// HostPort is a host and TCP port a pod may reach.
type HostPort struct {
	Host string
	Port int
}

// Endpoints are what a download Job reaches besides DNS: the weights
// store and, with workload identity, the login endpoint.
func (s *Storage) Endpoints() []HostPort {
	var out []HostPort
	switch s.Kind {
	case AzureBlob:
		out = append(out, HostPort{s.Account + ".blob.core.windows.net", 443})
	case S3:
		if u, err := url.Parse(s.Endpoint); err == nil && u.Hostname() != "" {
			port := 443
			if u.Scheme == "http" {
				port = 80
			}
			if p, err := strconv.Atoi(u.Port()); err == nil {
				port = p
			}
			out = append(out, HostPort{u.Hostname(), port})
		}
	}
	if s.ClientID != "" {
		out = append(out, HostPort{IdentityHost, 443})
	}
	return out
}

func netpol(ns, name string, spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}
}

func fromNamespace(namespace string) map[string]any {
	return map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": namespace}}}
}

func withPods(peer, labels map[string]any) map[string]any {
	peer["podSelector"] = map[string]any{"matchLabels": labels}
	return peer
}

func tcp(port int) map[string]any { return map[string]any{"protocol": "TCP", "port": port} }

// DefaultDeny selects every pod of a namespace for both directions with
// no rule: what the other policies admit is all that passes.
func DefaultDeny(ns string) map[string]any {
	return netpol(ns, "default-deny", map[string]any{"podSelector": map[string]any{}, "policyTypes": []any{"Ingress", "Egress"}})
}

// DenyIngress admits nothing into a namespace's pods (the batch jobs serve
// nothing); their egress is the jobs' own business.
func DenyIngress(ns string) map[string]any {
	return netpol(ns, "default-deny-ingress", map[string]any{"podSelector": map[string]any{}, "policyTypes": []any{"Ingress"}})
}

// AllowDNS lets every pod of the namespace resolve names.
func AllowDNS(ns string) map[string]any {
	return netpol(ns, "allow-dns", map[string]any{
		"podSelector": map[string]any{},
		"policyTypes": []any{"Egress"},
		"egress": []any{map[string]any{
			"to":    []any{withPods(fromNamespace(DNS.Namespace), DNS.Labels)},
			"ports": []any{map[string]any{"protocol": "UDP", "port": 53}, tcp(53)},
		}},
	})
}

// NetworkPolicy admits a model's callers to its engine's API-key proxy
// and Prometheus to its metrics port, nothing else of the pod: the
// ingress controller and the client namespaces for a model that always
// runs; for one that scales from zero, only the HTTP add-on's
// interceptor, which the gateway's key check guards (the ingress and the
// clients reach the model through the gateway). Its egress is DNS alone
// (AllowDNS): the weights are local.
func NetworkPolicy(ns string, e Engine, o Options) map[string]any {
	var callers []any
	if e.ScalesFromZero() {
		callers = []any{withPods(fromNamespace(KEDANamespace), kube.AnyMap(InterceptorPods))}
	} else {
		callers = []any{fromNamespace(o.IngressNamespace)}
		for _, c := range o.ClientNamespaces {
			callers = append(callers, fromNamespace(c))
		}
	}
	return netpol(ns, "model-"+e.Name, map[string]any{
		"podSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": e.Name}},
		"policyTypes": []any{"Ingress"},
		"ingress": []any{
			map[string]any{"from": callers, "ports": []any{tcp(ProxyPort)}},
			map[string]any{"from": []any{fromNamespace(o.PrometheusNamespace)}, "ports": []any{tcp(MetricsPort)}},
		},
	})
}

// ACMESolver lets the ingress controller reach cert-manager's HTTP-01
// solver pods, which cert-manager runs in the namespace of each model's
// Ingress while it proves the hostname.
func ACMESolver(ns string, o Options) map[string]any {
	return netpol(ns, "acme-http01-solver", map[string]any{
		"podSelector": map[string]any{"matchLabels": map[string]any{ACMESolverLabel: "true"}},
		"policyTypes": []any{"Ingress"},
		"ingress":     []any{map[string]any{"from": []any{fromNamespace(o.IngressNamespace)}, "ports": []any{tcp(ACMESolverPort)}}},
	})
}

var downloadPods = map[string]any{ComponentLabel: DownloadComponent}

// DownloadEgress lets the download Jobs reach the weights store: by name
// with Cilium (toFQDNs, which needs Cilium's DNS proxy to see the lookups:
// hence the DNS rule), else by the configured address ranges.
func DownloadEgress(ns string, o Options, st Storage) map[string]any {
	eps := st.Endpoints()
	var ports []int // each once, in the endpoints' order
	for _, e := range eps {
		if !slices.Contains(ports, e.Port) {
			ports = append(ports, e.Port)
		}
	}
	if o.NetworkPolicy == Cilium {
		var fqdns, toPorts []any
		for _, e := range eps {
			fqdns = append(fqdns, map[string]any{"matchName": e.Host})
		}
		for _, p := range ports {
			toPorts = append(toPorts, map[string]any{"port": strconv.Itoa(p), "protocol": "TCP"})
		}
		return map[string]any{
			"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
			"metadata": map[string]any{"name": DownloadComponent, "namespace": ns},
			"spec": map[string]any{
				"endpointSelector": map[string]any{"matchLabels": downloadPods},
				"egress": []any{
					map[string]any{
						"toEndpoints": []any{map[string]any{"matchLabels": map[string]any{
							"k8s:io.kubernetes.pod.namespace": DNS.Namespace, "k8s:k8s-app": DNS.Labels["k8s-app"],
						}}},
						"toPorts": []any{map[string]any{
							"ports": []any{map[string]any{"port": "53", "protocol": "ANY"}},
							"rules": map[string]any{"dns": []any{map[string]any{"matchPattern": "*"}}},
						}},
					},
					map[string]any{"toFQDNs": fqdns, "toPorts": []any{map[string]any{"ports": toPorts}}},
				},
			},
		}
	}
	var to, tcpPorts []any
	for _, c := range o.DownloadCIDRs {
		to = append(to, map[string]any{"ipBlock": map[string]any{"cidr": c}})
	}
	for _, p := range ports {
		tcpPorts = append(tcpPorts, tcp(p))
	}
	return netpol(ns, DownloadComponent, map[string]any{
		"podSelector": map[string]any{"matchLabels": downloadPods},
		"policyTypes": []any{"Egress"},
		"egress":      []any{map[string]any{"to": to, "ports": tcpPorts}},
	})
}

// NetworkPolicies are the policies of the serving namespace besides each
// model's own (NetworkPolicy).
func (p Resolved) NetworkPolicies() []map[string]any {
	o := p.Options
	ns := o.Namespace
	out := []map[string]any{DefaultDeny(ns), AllowDNS(ns), ACMESolver(ns, o)}
	if len(p.Engines) > 0 {
		out = append(out, DownloadEgress(ns, o, *p.Storage))
	}
	return out
}

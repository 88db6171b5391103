package serving

import (
	"fmt"

	"github.com/natron/gpu-node-pools/components/ollama"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/plain"
)

// serveOllama registers one Ollama model: its store, the proxy's
// configuration, the chart (its Service pointed at the proxy), the
// network policies and, with a hostname, the TLS ingress.
func (ms *ModelServing) serveOllama(ctx *pulumi.Context, name string, plan Resolved, srv ollama.Server, child, inNS []pulumi.ResourceOption) (ModelEndpoint, error) {
	o := plan.Options
	ns := o.Namespace
	prefix := name + "-" + srv.Name
	// ReadWriteOnce suffices: one replica, the chart's Recreate strategy
	claim, err := corev1.NewPersistentVolumeClaim(ctx, prefix+"-store", modelClaim(srv.Claim(), ns, "ReadWriteOnce", srv.StorageClass, srv.ClaimGi()), inNS...)
	if err != nil {
		return ModelEndpoint{}, fmt.Errorf("model store: %w", err)
	}
	proxy, err := corev1.NewConfigMap(ctx, prefix+"-proxy", &corev1.ConfigMapArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(srv.Release() + "-proxy"), Namespace: pulumi.String(ns)},
		Data:     pulumi.ToStringMap(ollama.ProxyConfig()),
	}, inNS...)
	if err != nil {
		return ModelEndpoint{}, fmt.Errorf("proxy config: %w", err)
	}
	rel := plan.Source.Release(srv.Release(), o.Charts.Ollama, ollama.Values(srv, OllamaPod))
	if _, err := helm.Install(ctx, prefix, rel, ns, plan.Source,
		append(inNS, pulumi.DependsOn([]pulumi.Resource{claim, proxy}), pulumi.Transforms([]pulumi.ResourceTransform{ollama.ThroughProxy}))...); err != nil {
		return ModelEndpoint{}, fmt.Errorf("chart: %w", err)
	}
	for _, np := range []struct {
		suffix string
		obj    map[string]any
	}{{"-netpol", OllamaNetworkPolicy(ns, srv, o)}, {"-pull-netpol", OllamaEgress(ns, srv)}} {
		if _, err := plain.Object(ctx, prefix+np.suffix, np.obj, inNS...); err != nil {
			return ModelEndpoint{}, fmt.Errorf("network policy: %w", err)
		}
	}
	ep := ModelEndpoint{Internal: ollama.Endpoint(ns, srv), Model: srv.Name, Sizing: srv.Sizing()}
	if srv.Pool != nil {
		ep.Pool = srv.Pool.Name
	}
	if srv.Hostname != "" {
		ing := OllamaIngress(ns, srv, o)
		if plan.Source.SkipAwait {
			ing["metadata"].(map[string]any)["annotations"].(map[string]any)["pulumi.com/skipAwait"] = "true"
		}
		if _, err := plain.Object(ctx, prefix+"-ingress", ing, inNS...); err != nil {
			return ModelEndpoint{}, fmt.Errorf("ingress: %w", err)
		}
		ep.Public = "https://" + srv.Hostname + "/v1"
	}
	return ep, nil
}

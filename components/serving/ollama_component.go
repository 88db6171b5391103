package serving

import (
	"fmt"

	"github.com/natron/gpu-node-pools/components/ollama"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// serveOllama registers one Ollama model: its store, the pull Job that
// fills it, the proxy's configuration, the chart (Ollama on loopback
// behind the proxy, its pods rolled when its key changes), the network
// policies and, with a hostname, the TLS ingress.
func (ms *ModelServing) serveOllama(r *registrar, srv ollama.Server) (ModelEndpoint, error) {
	ctx, name, plan, inNS := r.ctx, r.name, r.plan, r.inNS
	o := plan.Options
	ns := o.Namespace
	prefix := name + "-" + srv.Name
	// ReadWriteMany: the pull Job fills it, the server reads it
	claim, err := corev1.NewPersistentVolumeClaim(ctx, prefix+"-store", modelClaim(srv.Claim(), ns, "ReadWriteMany", srv.StorageClass, srv.ClaimGi()), inNS...)
	if err != nil {
		return ModelEndpoint{}, fmt.Errorf("model store: %w", err)
	}
	if err := r.object("-"+srv.Name+"-pull", "pull job", ollama.PullJob(ns, srv, OllamaPod, OllamaPullPods(srv)), r.after(r.namespaces[podsecurity.Serving], claim)); err != nil {
		return ModelEndpoint{}, err
	}
	proxy, err := corev1.NewConfigMap(ctx, prefix+"-proxy", &corev1.ConfigMapArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(srv.Release() + "-proxy"), Namespace: pulumi.String(ns)},
		Data:     pulumi.ToStringMap(ollama.ProxyConfig()),
	}, inNS...)
	if err != nil {
		return ModelEndpoint{}, fmt.Errorf("proxy config: %w", err)
	}
	rel := OllamaRelease(plan.Source, srv, o.Charts.Ollama)
	if _, err := helm.Install(ctx, prefix, rel, ns, plan.Source,
		append(inNS, pulumi.DependsOn([]pulumi.Resource{claim, proxy}),
			pulumi.Transforms([]pulumi.ResourceTransform{RollOnKeyChange(KeyHash(r.keys[srv.APIKeyField]))}))...); err != nil {
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
		ing := kube.Unawaited(OllamaIngress(ns, srv, o), plan.Source.SkipAwait)
		if _, err := plain.Object(ctx, prefix+"-ingress", ing, inNS...); err != nil {
			return ModelEndpoint{}, fmt.Errorf("ingress: %w", err)
		}
		ep.Public = "https://" + srv.Hostname + "/v1"
	}
	return ep, nil
}

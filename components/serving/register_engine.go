package serving

import (
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// registerEngines registers each vLLM model: its weights cache and
// download, its engine, its scaling and its exposure.
func (r *registrar) registerEngines() error {
	for _, m := range r.plan.Engines {
		claim, err := r.registerCache(m)
		if err != nil {
			return err
		}
		chart, err := r.registerEngine(m, claim)
		if err != nil {
			return err
		}
		if err := r.registerScaling(m, chart); err != nil {
			return err
		}
		ep, err := r.registerExposure(m)
		if err != nil {
			return err
		}
		r.ms.Endpoints[m.Name] = ep
	}
	return nil
}

// registerCache: the ReadWriteMany claim the weights are downloaded into
// once, and the Job that downloads them.
func (r *registrar) registerCache(m Engine) (pulumi.Resource, error) {
	o := r.plan.Options
	claim, err := corev1.NewPersistentVolumeClaim(r.ctx, r.name+"-"+m.Name+"-weights",
		modelClaim(WeightsClaim(m.Name), r.ns, "ReadWriteMany", o.StorageClass, WeightsClaimGi(m.Weights())), r.inNS...)
	if err != nil {
		return nil, fmt.Errorf("weights claim %s: %w", m.Name, err)
	}
	opts := append(r.after(r.namespaces[podsecurity.Serving], claim), pulumi.DependsOn(r.downloadDeps))
	if err := r.object("-"+m.Name+"-download", "download job "+m.Name, DownloadJob(r.ns, m, *r.plan.Storage, r.plan.Identity), opts); err != nil {
		return nil, err
	}
	return claim, nil
}

// registerEngine: the proxy's configuration and the vllm-stack chart of
// one model, whose replicas KEDA owns, its engine behind the proxy, its
// pods rolled when its key changes.
func (r *registrar) registerEngine(m Engine, claim pulumi.Resource) (pulumi.Resource, error) {
	proxy, err := corev1.NewConfigMap(r.ctx, r.name+"-"+m.Name+"-proxy", &corev1.ConfigMapArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(ProxyConfigMap(m.Name)), Namespace: pulumi.String(r.ns)},
		Data:     pulumi.StringMap{"Caddyfile": pulumi.String(EngineProxy().Caddyfile())},
	}, r.inNS...)
	if err != nil {
		return nil, fmt.Errorf("proxy config %s: %w", m.Name, err)
	}
	rel := EngineRelease(r.plan.Source, m, r.plan.Options.Charts.VLLMStack)
	chart, err := helm.Install(r.ctx, r.name+"-"+m.Name, rel, r.ns, r.plan.Source,
		append(r.after(r.namespaces[podsecurity.Serving], claim, proxy), pulumi.Transforms([]pulumi.ResourceTransform{
			LeaveReplicasToKEDA, ProgressDeadline(m), RollOnKeyChange(KeyHash(r.keys[m.APIKeyField]))}))...)
	if err != nil {
		return nil, fmt.Errorf("vllm-stack %s: %w", m.Name, err)
	}
	return chart, nil
}

// registerGateway: for models that scale from zero, the gateway that
// checks their keys before the interceptor wakes them (its pods rolled
// when a key changes), its network policy, and the interceptor's of a
// KEDA the program installs.
func (r *registrar) registerGateway() error {
	waking := wakingEngines(r.plan.Engines)
	if len(waking) == 0 {
		return nil
	}
	cm, err := corev1.NewConfigMap(r.ctx, r.name+"-gateway-config", &corev1.ConfigMapArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(GatewayName), Namespace: pulumi.String(r.ns)},
		Data:     pulumi.ToStringMap(GatewayConfig(r.ns, waking)),
	}, r.inNS...)
	if err != nil {
		return fmt.Errorf("gateway config: %w", err)
	}
	var keys []pulumi.StringOutput
	for _, e := range waking {
		keys = append(keys, r.keys[e.APIKeyField])
	}
	dep := GatewayDeployment(r.ns, waking, r.plan.Options.ProxyImage)
	tmpl := dep["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)
	tmpl["annotations"] = map[string]any{KeyHashAnnotation: KeyHash(keys...)}
	if err := r.object("-gateway", "gateway", kube.Unawaited(dep, r.plan.Source.SkipAwait), r.after(r.namespaces[podsecurity.Serving], cm)); err != nil {
		return err
	}
	if err := r.object("-gateway-netpol", "gateway network policy", GatewayNetworkPolicy(r.ns, r.plan.Options), r.inNS); err != nil {
		return err
	}
	if !r.plan.InstallsHTTPAddOn() {
		return nil
	}
	return r.object("-interceptor-netpol", "interceptor network policy", InterceptorNetworkPolicy(r.ns), r.after(r.namespaces[podsecurity.KEDA]))
}

// registerScaling: the ScaledObject on queue depth and, for a model that
// scales from zero, the HTTP add-on's route and the Service it wakes on.
func (r *registrar) registerScaling(m Engine, chart pulumi.Resource) error {
	if err := r.object("-"+m.Name+"-scaling", "scaled object "+m.Name, ScaledObject(r.ns, m), r.after(append([]pulumi.Resource{chart}, r.keda...)...)); err != nil {
		return err
	}
	if !m.ScalesFromZero() {
		return nil
	}
	if err := r.object("-"+m.Name+"-route", "interceptor route "+m.Name, InterceptorRoute(r.ns, m),
		r.after(append([]pulumi.Resource{r.namespaces[podsecurity.Serving]}, r.keda...)...)); err != nil {
		return err
	}
	// Pulumi would wait for the gateway's pods as the Service's endpoints
	wake := kube.Unawaited(WakeService(r.ns, m), r.plan.Source.SkipAwait)
	if _, err := corev1.NewService(r.ctx, r.name+"-"+m.Name+"-wake", plain.ServiceArgs(wake), r.inNS...); err != nil {
		return fmt.Errorf("wake service %s: %w", m.Name, err)
	}
	return nil
}

// registerExposure: the engine's metrics, its network policy and, with a
// hostname, its Ingress; the endpoint the stack exports.
func (r *registrar) registerExposure(m Engine) (ModelEndpoint, error) {
	o := r.plan.Options
	if err := r.object("-"+m.Name+"-servicemonitor", "service monitor "+m.Name, EngineServiceMonitor(r.ns, m), r.inNS); err != nil {
		return ModelEndpoint{}, err
	}
	if err := r.object("-"+m.Name+"-netpol", "network policy "+m.Name, NetworkPolicy(r.ns, m, o), r.inNS); err != nil {
		return ModelEndpoint{}, err
	}
	ep := ModelEndpoint{Pool: m.Pool.Name, Internal: Endpoint(r.ns, m), Model: m.Name, Sizing: m.Sizing()}
	if m.Hostname == "" {
		return ep, nil
	}
	// the address comes from the ingress controller, later
	ing := kube.Unawaited(Ingress(r.ns, m, o), r.plan.Source.SkipAwait)
	if err := r.object("-"+m.Name+"-ingress", "ingress "+m.Name, ing, r.inNS); err != nil {
		return ModelEndpoint{}, err
	}
	ep.Public = "https://" + m.Hostname + "/v1"
	return ep, nil
}

// registerOllamas registers the models Ollama serves.
func (r *registrar) registerOllamas() error {
	for _, srv := range r.plan.Ollamas {
		ep, err := r.ms.serveOllama(r, srv)
		if err != nil {
			return fmt.Errorf("ollama %s: %w", srv.Name, err)
		}
		r.ms.Endpoints[srv.Name] = ep
	}
	return nil
}

// registerBatch: the batch namespace's ingress lockdown and the CronJobs.
func (r *registrar) registerBatch() error {
	inBatch := r.after(r.namespaces[podsecurity.Batch])
	if len(r.plan.Jobs) > 0 {
		if err := r.object("-batch-netpol", "batch network policy", DenyIngress(r.plan.Options.BatchNamespace), inBatch); err != nil {
			return err
		}
	}
	for _, j := range r.plan.Jobs {
		if err := r.object("-batch-"+j.Name, "batch job "+j.Name, CronJob(r.plan.Options.BatchNamespace, j), inBatch); err != nil {
			return err
		}
	}
	return nil
}

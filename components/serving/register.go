package serving

import (
	"fmt"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	schedulingv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/scheduling/v1"
	"github.com/pulumi/pulumi-random/sdk/v4/go/random"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// registrar registers one ModelServing's children, one concern per
// method: what the methods share is here, decided once.
type registrar struct {
	ctx  *pulumi.Context
	name string
	ms   *ModelServing
	plan Resolved
	ns   string
	// child are every child's options; inNS adds the serving namespace.
	child, inNS []pulumi.ResourceOption
	namespaces  map[string]pulumi.Resource
	// downloadDeps must exist before a download Job; keda before a
	// ScaledObject or an InterceptorRoute.
	downloadDeps, keda []pulumi.Resource
	// keys are the API keys by their field in the API-key Secret.
	keys map[string]pulumi.StringOutput
}

// after is the children's options with dependencies added.
func (r *registrar) after(deps ...pulumi.Resource) []pulumi.ResourceOption {
	return append(append([]pulumi.ResourceOption{}, r.child...), pulumi.DependsOn(deps))
}

// object registers a plain object in the serving namespace.
func (r *registrar) object(suffix, what string, obj map[string]any, opts []pulumi.ResourceOption) error {
	if _, err := plain.Object(r.ctx, r.name+suffix, obj, opts...); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (r *registrar) registerNamespaces() error {
	r.namespaces = map[string]pulumi.Resource{}
	for _, n := range r.plan.Namespaces() {
		res, err := corev1.NewNamespace(r.ctx, r.name+n.Suffix, podsecurity.Namespace(n.Name, n.Level), r.child...)
		if err != nil {
			return fmt.Errorf("%s namespace: %w", n.Role, err)
		}
		r.namespaces[n.Role] = res
	}
	r.inNS = r.after(r.namespaces[podsecurity.Serving])
	return nil
}

// registerPriorityClasses: real-time inference always wins over batch
// work for GPUs.
func (r *registrar) registerPriorityClasses() error {
	for _, pc := range PriorityClasses {
		if _, err := schedulingv1.NewPriorityClass(r.ctx, r.name+"-"+pc.Name, &schedulingv1.PriorityClassArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(pc.Name)},
			Value:    pulumi.Int(pc.Value), Description: pulumi.String(pc.Description), PreemptionPolicy: pulumi.String(pc.Preemption),
		}, r.child...); err != nil {
			return fmt.Errorf("priority class: %w", err)
		}
	}
	return nil
}

// registerSecrets: the API key (the config's, or a generated one) and the
// weights store's credentials, as Secrets or, rendering, ExternalSecrets.
func (r *registrar) registerSecrets() error {
	keys := pulumi.StringMap{}
	r.keys = map[string]pulumi.StringOutput{}
	if r.plan.needsSharedKey() {
		var key pulumi.StringInput
		if r.plan.Options.APIKey != "" {
			key = r.plan.Options.APIKey.Output()
		} else {
			pw, err := random.NewRandomPassword(r.ctx, r.name+"-api-key", &random.RandomPasswordArgs{Length: pulumi.Int(48), Special: pulumi.Bool(false)}, pulumi.Parent(r.ms))
			if err != nil {
				return fmt.Errorf("api key: %w", err)
			}
			key = pw.Result
		}
		r.ms.APIKey = pulumi.ToSecret(key.ToStringOutput()).(pulumi.StringOutput)
		keys[APIKeyField], r.keys[APIKeyField] = r.ms.APIKey, r.ms.APIKey
	}
	for _, model := range plain.SortedKeys(r.plan.ModelKeys) {
		k := r.plan.ModelKeys[model].Output()
		field := ModelSpec{Name: model, APIKey: r.plan.ModelKeys[model]}.KeyField()
		keys[field], r.keys[field], r.ms.ModelKeys[model] = k, k, k
	}
	secrets := []struct {
		name, resource string
		data           func() pulumi.StringMap
		needed         bool
	}{
		{APIKeySecret, "-api-key-secret", func() pulumi.StringMap { return keys }, true},
		{StorageSecret, "-storage-secret", func() pulumi.StringMap { return r.plan.Storage.Env() }, len(r.plan.Engines) > 0},
	}
	for _, sec := range secrets {
		if !sec.needed {
			continue
		}
		_, ext, err := secret.Place(r.ctx, r.name+sec.resource, r.ns, sec.name, "", sec.data(), r.plan.Source.Rendering, r.inNS...)
		if err != nil {
			return fmt.Errorf("secret %s: %w", sec.name, err)
		}
		if ext != nil {
			r.ms.ExternalSecrets = append(r.ms.ExternalSecrets, *ext)
		}
	}
	return nil
}

// registerAccounts: the download Jobs' service account (with the workload
// identity, if any) and the model servers', which holds no token.
func (r *registrar) registerAccounts() error {
	if len(r.plan.Engines) > 0 {
		sa := &corev1.ServiceAccountArgs{Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(DownloadServiceAccount), Namespace: pulumi.String(r.ns)}}
		if ann := r.plan.Identity.ServiceAccountAnnotations; len(ann) > 0 {
			sa.Metadata.(*metav1.ObjectMetaArgs).Annotations = pulumi.ToStringMap(ann)
		}
		saRes, err := corev1.NewServiceAccount(r.ctx, r.name+"-download-sa", sa, r.inNS...)
		if err != nil {
			return fmt.Errorf("download service account: %w", err)
		}
		r.downloadDeps = append(r.downloadDeps, saRes)
	}
	if len(r.plan.Engines)+len(r.plan.Ollamas) > 0 {
		if _, err := corev1.NewServiceAccount(r.ctx, r.name+"-model-server-sa", &corev1.ServiceAccountArgs{
			Metadata:                     &metav1.ObjectMetaArgs{Name: pulumi.String(ModelServerAccount), Namespace: pulumi.String(r.ns)},
			AutomountServiceAccountToken: pulumi.Bool(false),
		}, r.inNS...); err != nil {
			return fmt.Errorf("model server service account: %w", err)
		}
	}
	return nil
}

// registerNamespacePolicies: the serving namespace's own network policies.
func (r *registrar) registerNamespacePolicies() error {
	for _, np := range r.plan.NetworkPolicies() {
		npName := np["metadata"].(map[string]any)["name"].(string)
		if err := r.object("-netpol-"+npName, "network policy "+npName, np, r.inNS); err != nil {
			return err
		}
	}
	return nil
}

// registerKEDA: KEDA and its HTTP add-on bring the CRDs of the engines'
// ScaledObjects and InterceptorRoutes, which stay when they go: the
// cluster's own objects of those kinds may use them.
func (r *registrar) registerKEDA() error {
	if !r.plan.InstallsKEDA() {
		return nil
	}
	o := r.plan.Options
	rel := r.plan.Source.Release("keda", o.Charts.KEDA, map[string]any{})
	k, err := helm.Install(r.ctx, r.name+"-keda", rel, KEDANamespace, r.plan.Source, append(r.after(r.namespaces[podsecurity.KEDA]), helm.KeepCRDs())...)
	if err != nil {
		return fmt.Errorf("keda: %w", err)
	}
	r.keda = append(r.keda, k)
	if r.plan.InstallsHTTPAddOn() {
		rel := r.plan.Source.Release("keda-add-ons-http", o.Charts.HTTPAddOn, HTTPAddOnValues())
		h, err := helm.Install(r.ctx, r.name+"-keda-http", rel, KEDANamespace, r.plan.Source, append(r.after(k), helm.KeepCRDs())...)
		if err != nil {
			return fmt.Errorf("keda http add-on: %w", err)
		}
		r.keda = append(r.keda, h)
	}
	return nil
}

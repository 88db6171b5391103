package platform

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/component"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// GPUPlatformType is the component's type token.
const GPUPlatformType = kube.Project + ":platform:GPUPlatform"

// Args configures the platform layer.
type Args struct {
	// Spec is the defaulted layer from the stack's plan.
	Spec Spec
	// Pools are the facts of every GPU pool of the stack.
	Pools []gpupool.Facts
	// Source is the stack's chart source.
	Source helm.Source
	// Workload is the provider of the cluster the GPUs join.
	Workload *kubernetes.Provider
}

// GPUPlatform is the GPU plumbing, alerts and dashboards of a cluster.
type GPUPlatform struct {
	pulumi.ResourceState

	// Namespace holds the GPU DaemonSets.
	Namespace pulumi.StringOutput
}

// Releases are the Helm releases of a defaulted spec, with their values,
// from the stack's chart source.
func Releases(s Spec, pools []gpupool.Facts, src helm.Source) []helm.Release {
	values := map[string]func(Spec, []gpupool.Facts) map[string]any{
		GPUOperatorChart.Name:  GPUOperatorValues,
		DevicePluginChart.Name: DevicePluginValues,
		DCGMExporterChart.Name: DCGMExporterValues,
	}
	var out []helm.Release
	for _, c := range s.Installed() {
		out = append(out, src.Release(c.Name, c, values[c.Name](s, pools)))
	}
	return out
}

// NamespaceLabels carry the Pod Security level the GPU DaemonSets need:
// they mount host paths (device plugin and pod-resources sockets, /sys)
// and, with the operator, the driver and toolkit run privileged. Nothing
// else runs in this namespace.
func NamespaceLabels() map[string]string { return podsecurity.Labels(podsecurity.Privileged) }

// NewGPUPlatform registers the platform layer in the workload cluster.
func NewGPUPlatform(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*GPUPlatform, error) {
	p := &GPUPlatform{}
	child, err := component.Start(ctx, GPUPlatformType, name, p, args != nil && args.Workload != nil, "a workload provider",
		func() pulumi.ProviderResource { return args.Workload }, opts...)
	if err != nil {
		return nil, err
	}
	s := args.Spec

	ns, err := corev1.NewNamespace(ctx, name+"-namespace", &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(s.Namespace), Labels: pulumi.ToStringMap(NamespaceLabels())},
	}, child...)
	if err != nil {
		return nil, fmt.Errorf("gpu platform %s: namespace: %w", name, err)
	}
	inNS := append(child, pulumi.DependsOn([]pulumi.Resource{ns}))

	for _, r := range Releases(s, args.Pools, args.Source) {
		if _, err := helm.Install(ctx, name+"-"+r.Name, r, s.Namespace, args.Source, inNS...); err != nil {
			return nil, fmt.Errorf("gpu platform %s: chart %s: %w", name, r.Name, err)
		}
	}

	if s.GPUStack == DevicePlugin { // the operator brings its own
		if _, err := plain.Object(ctx, name+"-dcgm-servicemonitor", DCGMExporterServiceMonitor(s), inNS...); err != nil {
			return nil, fmt.Errorf("gpu platform %s: service monitor: %w", name, err)
		}
	}

	if _, err := plain.Object(ctx, name+"-alerts", PrometheusRule(s, "gpu-node-pools-gpu"), inNS...); err != nil {
		return nil, fmt.Errorf("gpu platform %s: alert rules: %w", name, err)
	}

	for _, d := range Dashboards() {
		if _, err := corev1.NewConfigMap(ctx, name+"-dashboard-"+d.UID, &corev1.ConfigMapArgs{
			Metadata: &metav1.ObjectMetaArgs{
				Name:        pulumi.String("gpu-node-pools-" + d.UID),
				Namespace:   pulumi.String(s.Namespace),
				Labels:      pulumi.StringMap{DashboardLabel: pulumi.String(DashboardLabelValue)},
				Annotations: pulumi.StringMap{FolderAnnotation: pulumi.String(s.Monitoring.GrafanaFolder)},
			},
			Data: pulumi.StringMap{d.File: pulumi.String(d.JSON())},
		}, inNS...); err != nil {
			return nil, fmt.Errorf("gpu platform %s: dashboard %s: %w", name, d.UID, err)
		}
	}

	p.Namespace = ns.Metadata.Name().Elem()
	if err := ctx.RegisterResourceOutputs(p, pulumi.Map{"namespace": p.Namespace}); err != nil {
		return nil, fmt.Errorf("gpu platform %s: outputs: %w", name, err)
	}
	return p, nil
}

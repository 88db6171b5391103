package platform

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
)

// Each MIG pool's nodes select a config of their own with the single
// strategy, whatever the other pools' profiles; time-slicing pools share
// their GPUs; everything else runs the default.
func TestDevicePluginConfigs(t *testing.T) {
	t.Parallel()
	p := func(name, profile string, slicing int) gpupool.Facts {
		f := gpupool.Facts{Name: name, MIGProfile: catalog.MIGProfile(profile), TimeSlicing: slicing}
		if profile != "" || slicing > 1 {
			f.DevicePluginConfig = name
		}
		return f
	}
	got := devicePluginConfigs([]gpupool.Facts{p("plain", "", 0), p("mig3", "MIG3g", 0), p("mig1", "MIG1g", 0), p("shared", "", 4)})
	want := map[string]string{
		"default": "flags:\n  migStrategy: none\nversion: v1\n",
		"mig3":    "flags:\n  migStrategy: single\nversion: v1\n",
		"mig1":    "flags:\n  migStrategy: single\nversion: v1\n",
		"shared": "flags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n" +
			"      replicas: 4\nversion: v1\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("device plugin configs (-want +got):\n%s", diff)
	}
}

func TestDevicePluginValues(t *testing.T) {
	t.Parallel()
	pools := []gpupool.Facts{
		// as the plan resolves a spot pool on a target with a spot taint
		{Name: "spot", Spot: true, Tolerations: []gpupool.Toleration{gpupool.GPUToleration,
			{Key: "kubernetes.azure.com/scalesetpriority", Operator: "Equal", Value: "spot", Effect: "NoSchedule"}}},
		{Name: "mig", MIGProfile: "MIG2g", DevicePluginConfig: "mig"},
		{Name: "shared", TimeSlicing: 4, DevicePluginConfig: "shared"},
	}
	s := Spec{Values: ExtraValues{DevicePlugin: map[string]any{
		"priorityClassName": "gpu-critical",
		"resources":         map[string]any{"limits": map[string]any{"memory": "512Mi"}},
	}}}.Defaults(DevicePlugin)
	want := map[string]any{
		"nodeSelector": map[string]any{"nvidia.com/gpu.present": "true"},
		"tolerations": []any{
			map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
			map[string]any{"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"},
		},
		// the escape hatch merges into typed values key by key
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "50m", "memory": "64Mi"},
			"limits":   map[string]any{"cpu": "500m", "memory": "512Mi"},
		},
		"priorityClassName": "gpu-critical",
		"config": map[string]any{
			"default": "default",
			"map": map[string]any{
				"default": "flags:\n  migStrategy: none\nversion: v1\n",
				"mig":     "flags:\n  migStrategy: single\nversion: v1\n",
				"shared": "flags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n" +
					"      replicas: 4\nversion: v1\n",
			},
		},
	}
	if diff := cmp.Diff(want, DevicePluginValues(s, pools)); diff != "" {
		t.Errorf("DevicePluginValues mismatch (-want +got):\n%s", diff)
	}
}

func TestDCGMExporterValues(t *testing.T) {
	t.Parallel()
	s := Spec{Monitoring: Monitoring{ServiceMonitorLabels: map[string]string{"prometheus": "platform"}, ScrapeInterval: "30s"}}.Defaults(DevicePlugin)
	want := map[string]any{
		"nodeSelector": map[string]any{"nvidia.com/gpu.present": "true"},
		"tolerations":  []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
			"limits":   map[string]any{"cpu": "1", "memory": "1Gi"},
		},
		// the program writes its own ServiceMonitor (it renders offline)
		"serviceMonitor": map[string]any{"enabled": false},
		// the metrics file with the XID count the XID alert reads
		"customMetrics": DCGMMetrics,
	}
	if diff := cmp.Diff(want, DCGMExporterValues(s, []gpupool.Facts{{Name: "a"}})); diff != "" {
		t.Errorf("DCGMExporterValues mismatch (-want +got):\n%s", diff)
	}
	sm := DCGMExporterServiceMonitor(s)
	if diff := cmp.Diff(map[string]any{"prometheus": "platform"}, sm["metadata"].(map[string]any)["labels"]); diff != "" {
		t.Errorf("ServiceMonitor labels: %s", diff)
	}
	if ep := sm["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any); ep["interval"] != "30s" {
		t.Errorf("ServiceMonitor interval %v", ep["interval"])
	}
	if s.Monitoring.RuleLabels["prometheus"] != "platform" {
		t.Errorf("rule labels default to the ServiceMonitor labels, got %v", s.Monitoring.RuleLabels)
	}
}

func TestReleasesFollowTheGPUStack(t *testing.T) {
	t.Parallel()
	names := func(rs []helm.Release) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name+"@"+r.Chart.Version)
		}
		return out
	}
	if diff := cmp.Diff([]string{"nvidia-device-plugin@0.20.0", "dcgm-exporter@4.8.2"}, names(Releases(Spec{}.Defaults(DevicePlugin), nil, helm.Source{}))); diff != "" {
		t.Errorf("AKS releases: %s", diff)
	}
	if diff := cmp.Diff([]string{"gpu-operator@v26.7.0"}, names(Releases(Spec{}.Defaults(GPUOperator), nil, helm.Source{}))); diff != "" {
		t.Errorf("bare-metal releases: %s", diff)
	}
	local := Releases(Spec{}.Defaults(DevicePlugin), nil, helm.Source{Dir: "/charts"})[1]
	if got := local.Chart.Archive(local.Dir); got != "/charts/dcgm-exporter-4.8.2.tgz" {
		t.Errorf("local chart archive = %s", got)
	}
}

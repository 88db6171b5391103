package tests

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/program"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
)

const (
	agentPoolType  = "azure-native:containerservice:AgentPool"
	federationType = "azure-native:managedidentity:FederatedIdentityCredential"
	aksPoolType    = "gpu-node-pools:pools:AKSPool"
	metalPoolType  = "gpu-node-pools:pools:BareMetalPool"
	k8sProvider    = "pulumi:providers:kubernetes"
	mdType         = "kubernetes:cluster.x-k8s.io/v1beta2:MachineDeployment"
	kctType        = "kubernetes:bootstrap.cluster.x-k8s.io/v1beta2:KubeadmConfigTemplate"
	m3mtType       = "kubernetes:infrastructure.cluster.x-k8s.io/v1beta2:Metal3MachineTemplate"
	gpuTaint       = "nvidia.com/gpu=present:NoSchedule"
	poolLabel      = "gpu.natron.cloud/pool"
	gpuPresent     = "nvidia.com/gpu.present"
	minSizeAnnot   = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	maxSizeAnnot   = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
	capacityPrefix = "capacity.cluster-autoscaler.kubernetes.io/"
	platformType   = "gpu-node-pools:platform:GPUPlatform"
	chartType      = "kubernetes:helm.sh/v4:Chart"
	namespaceType  = "kubernetes:core/v1:Namespace"
	configMapType  = "kubernetes:core/v1:ConfigMap"
	ruleType       = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
)

// servingResources are model serving's resources: per model and batch job,
// with a generated API key when the stack brings none; egress is the
// network policy mode (serving.Cilium or serving.CIDR).
// ollamaResources are what each Ollama model with a hostname registers.
func ollamaResources(models ...string) []string {
	var out []string
	for _, m := range models {
		p := "serving-" + m
		out = append(out, "kubernetes:core/v1:PersistentVolumeClaim::"+p+"-store", "kubernetes:batch/v1:Job::"+p+"-pull", "kubernetes:core/v1:ConfigMap::"+p+"-proxy",
			chartType+"::"+p, "kubernetes:networking.k8s.io/v1:NetworkPolicy::"+p+"-netpol",
			"kubernetes:networking.k8s.io/v1:NetworkPolicy::"+p+"-pull-netpol", "kubernetes:networking.k8s.io/v1:Ingress::"+p+"-ingress")
	}
	return out
}

func servingResources(models, fromZero, public, batch []string, generatedKey, rendering bool, egress string) []string {
	const netpol = "kubernetes:networking.k8s.io/v1:NetworkPolicy::serving-"
	out := []string{
		"gpu-node-pools:serving:ModelServing::serving",
		namespaceType + "::serving-namespace",
		"kubernetes:scheduling.k8s.io/v1:PriorityClass::serving-gpu-serving",
		"kubernetes:scheduling.k8s.io/v1:PriorityClass::serving-gpu-batch",
		netpol + "netpol-default-deny", netpol + "netpol-allow-dns", netpol + "netpol-acme-http01-solver",
	}
	if !rendering { // rendered files never hold secret values
		out = append(out, "kubernetes:core/v1:Secret::serving-api-key-secret")
		if len(models) > 0 {
			out = append(out, "kubernetes:core/v1:Secret::serving-storage-secret")
		}
	}
	if generatedKey {
		out = append(out, "random:index/randomPassword:RandomPassword::serving-api-key")
	}
	if len(models) > 0 {
		out = append(out, "kubernetes:core/v1:ServiceAccount::serving-download-sa", "kubernetes:core/v1:ServiceAccount::serving-model-server-sa")
		if egress == serving.Cilium {
			out = append(out, "kubernetes:cilium.io/v2:CiliumNetworkPolicy::serving-netpol-weights-download")
		} else {
			out = append(out, netpol+"netpol-weights-download")
		}
		if !rendering {
			out = append(out, namespaceType+"::serving-keda-namespace", chartType+"::serving-keda")
			if len(fromZero) > 0 {
				out = append(out, chartType+"::serving-keda-http")
			}
		}
	}
	for _, m := range fromZero {
		out = append(out, "kubernetes:http.keda.sh/v1beta1:InterceptorRoute::serving-"+m+"-route", "kubernetes:core/v1:Service::serving-"+m+"-wake")
	}
	if len(fromZero) > 0 { // the gateway that checks their keys
		out = append(out, "kubernetes:core/v1:ConfigMap::serving-gateway-config", "kubernetes:apps/v1:Deployment::serving-gateway",
			"kubernetes:networking.k8s.io/v1:NetworkPolicy::serving-gateway-netpol")
		if !rendering { // the interceptor of the KEDA the program installs
			out = append(out, "kubernetes:networking.k8s.io/v1:NetworkPolicy::serving-interceptor-netpol")
		}
	}
	for _, m := range models {
		out = append(out, "kubernetes:core/v1:ConfigMap::serving-"+m+"-proxy",
			"kubernetes:core/v1:PersistentVolumeClaim::serving-"+m+"-weights", "kubernetes:batch/v1:Job::serving-"+m+"-download",
			"kubernetes:keda.sh/v1alpha1:ScaledObject::serving-"+m+"-scaling",
			"kubernetes:monitoring.coreos.com/v1:ServiceMonitor::serving-"+m+"-servicemonitor",
			chartType+"::serving-"+m, "kubernetes:networking.k8s.io/v1:NetworkPolicy::serving-"+m+"-netpol")
	}
	for _, m := range public {
		out = append(out, "kubernetes:networking.k8s.io/v1:Ingress::serving-"+m+"-ingress")
	}
	if len(batch) > 0 {
		out = append(out, namespaceType+"::serving-batch-namespace", netpol+"batch-netpol")
	}
	for _, b := range batch {
		out = append(out, "kubernetes:batch/v1:CronJob::serving-batch-"+b)
	}
	return out
}

// platformResources are the platform layer's resources for a GPU stack.
func platformResources(charts ...string) []string {
	out := []string{
		platformType + "::gpu",
		namespaceType + "::gpu-namespace",
		ruleType + "::gpu-alerts",
		configMapType + "::gpu-dashboard-gnp-gpu-fleet",
		configMapType + "::gpu-dashboard-gnp-model-serving",
	}
	for _, c := range charts {
		out = append(out, chartType+"::gpu-"+c)
		if c == "dcgm-exporter" {
			out = append(out, "kubernetes:monitoring.coreos.com/v1:ServiceMonitor::gpu-dcgm-servicemonitor")
		}
	}
	return out
}

// policyResources are the Kyverno policies' resources.
func policyResources() []string {
	out := []string{"gpu-node-pools:policy:GPUPolicies::policies"}
	for _, n := range []string{"gpu-require-resources", "gpu-allowed-registries", "gpu-disallow-privileged", "gpu-toleration", "gpu-taint"} {
		out = append(out, "kubernetes:kyverno.io/v1:ClusterPolicy::policies-"+n)
	}
	return out
}

// loggingResources are what logging.install registers: the component, its
// namespace and the Grafana Alloy chart.
func loggingResources() []string {
	return []string{"gpu-node-pools:logging:LogCollector::logging", "kubernetes:core/v1:Namespace::logging-namespace", chartType + "::logging-alloy"}
}

// backupResources are what the stacks' backup blocks register: the
// component, the weights' resource policy, the location and the Schedule
// (dev renders and prod signs in with Entra ID: no credentials Secret).
func backupResources() []string {
	return []string{"gpu-node-pools:backup:Backups::backup", "kubernetes:core/v1:ConfigMap::backup-policy",
		"kubernetes:velero.io/v1:BackupStorageLocation::backup-location", "kubernetes:velero.io/v1:Schedule::backup-schedule"}
}

// gitopsResources are what the dev stack's gitops block registers: the
// render provider of gitops/, the component, an Argo CD Application per
// tree and an ExternalSecret per Secret the render leaves out.
func gitopsResources() []string {
	const es = "kubernetes:external-secrets.io/v1:ExternalSecret::gitops-"
	return []string{k8sProvider + "::gitops", "gpu-node-pools:gitops:Delivery::gitops",
		"kubernetes:argoproj.io/v1alpha1:Application::gitops-dev-gpu-management", "kubernetes:argoproj.io/v1alpha1:Application::gitops-dev-gpu-workload",
		es + "models-gpu-node-pools-api-key", es + "models-gpu-node-pools-storage", es + "velero-gpu-node-pools-backup-credentials",
		es + "models-rag-credentials", es + "rag-app-rag-credentials", es + "vector-dbs-rag-backup-store", es + "vector-dbs-rag-credentials"}
}

// vectorResources are what the dev stack's pgvector database registers:
// the component, its namespace, the CloudNativePG Cluster and its nightly
// backup, its NetworkPolicy, PodMonitor and alerts, and the policy that
// keeps GPUs out of its namespace (a render: the credentials are
// ExternalSecrets).
func vectorResources() []string {
	return []string{"gpu-node-pools:vectordb:VectorDBs::vectordb", "kubernetes:core/v1:Namespace::vectordb-vector-dbs",
		"kubernetes:postgresql.cnpg.io/v1:Cluster::vectordb-rag", "kubernetes:postgresql.cnpg.io/v1:ScheduledBackup::vectordb-rag-nightly",
		"kubernetes:networking.k8s.io/v1:NetworkPolicy::vectordb-rag-network-policy", "kubernetes:kyverno.io/v1:ClusterPolicy::policies-gpu-free-namespaces",
		"kubernetes:monitoring.coreos.com/v1:PodMonitor::vectordb-rag-metrics", ruleType + "::vectordb-rag-alerts"}
}

// poolConfig is a pool as written in the stack file.
type poolConfig struct {
	Name       string            `json:"name"`
	SKU        string            `json:"sku"`
	MinNodes   int               `json:"minNodes"`
	MaxNodes   int               `json:"maxNodes"`
	Spot       bool              `json:"spot"`
	MIGProfile string            `json:"migProfile"`
	Labels     map[string]string `json:"labels"`
	// AKS are the AKS pool block's keys
	AKS struct {
		SpotMaxPrice *float64 `json:"spotMaxPrice"`
		Zones        []string `json:"zones"`
		OSDiskSizeGB int      `json:"osDiskSizeGB"`
	} `json:"aks"`
}

// runStack runs the program under mocks on a real stack file.
func runStack(t *testing.T, stack string) (*pulumitest.Mocks, []poolConfig) {
	t.Helper()
	cfg, secrets, err := pulumitest.StackConfig(stack)
	if err != nil {
		t.Fatal(err)
	}
	var pools []poolConfig
	if err := json.Unmarshal([]byte(cfg["gpu-node-pools:pools"]), &pools); err != nil || len(pools) == 0 {
		t.Fatalf("Pulumi.%s.yaml pools: %v", stack, err)
	}
	m, err := pulumitest.Run(program.Program, "gpu-node-pools", stack, cfg, secrets)
	if err != nil {
		t.Fatalf("program on Pulumi.%s.yaml: %v", stack, err)
	}
	return m, pools
}

func names(m *pulumitest.Mocks) []string {
	var out []string
	for _, r := range m.Resources() {
		out = append(out, r.Type+"::"+r.Name)
	}
	sort.Strings(out)
	return out
}

func str(pm resource.PropertyMap, path ...string) string {
	v := dig(pm, path...)
	if v.IsSecret() {
		v = v.SecretValue().Element
	}
	if v.IsString() {
		return v.StringValue()
	}
	return ""
}

func dig(pm resource.PropertyMap, path ...string) resource.PropertyValue {
	v := resource.NewObjectProperty(pm)
	for _, p := range path {
		if !v.IsObject() {
			return resource.NewNullProperty()
		}
		v = v.ObjectValue()[resource.PropertyKey(p)]
	}
	return v
}

func TestProdStackUnderMocks(t *testing.T) {
	t.Parallel()
	m, pools := runStack(t, "prod")

	want := append([]string{k8sProvider + "::workload"}, platformResources("nvidia-device-plugin", "dcgm-exporter")...)
	want = append(want, servingResources([]string{"llama3-8b", "llama3-70b"}, []string{"llama3-8b"}, []string{"llama3-8b", "llama3-70b"}, []string{"embed-nightly"}, true, false, serving.CIDR)...)
	want = append(want, policyResources()...)
	want = append(want, backupResources()...) // Blob with Entra ID: no credentials Secret
	for _, p := range pools {
		want = append(want, aksPoolType+"::"+p.Name, agentPoolType+"::"+p.Name+"-agentpool")
	}
	want = append(want, federationType+"::weights-download-federation")
	sort.Strings(want)
	if diff := cmp.Diff(want, names(m)); diff != "" {
		t.Fatalf("resources (-want +got):\n%s", diff)
	}
	if len(pools) < 3 || !pools[1].Spot || !strings.HasPrefix(pools[2].SKU, "Standard_ND") {
		t.Fatalf("prod stack should have an on-demand A100, a spot H100 and an ND-series pool, has %+v", pools)
	}

	for _, p := range pools {
		r, ok := m.ByName(agentPoolType, p.Name+"-agentpool")
		if !ok {
			t.Fatalf("no agent pool for pool %s", p.Name)
		}
		in := r.Inputs
		t.Run(p.Name, func(t *testing.T) {
			if got := dig(in, "nodeTaints").Mappable(); !reflect.DeepEqual(got, []any{gpuTaint}) {
				t.Errorf("nodeTaints = %v, want [%s]", got, gpuTaint)
			}
			if !dig(in, "enableAutoScaling").BoolValue() ||
				dig(in, "minCount").NumberValue() != float64(p.MinNodes) ||
				dig(in, "maxCount").NumberValue() != float64(p.MaxNodes) {
				t.Errorf("autoscaling = %v %v..%v, want on %d..%d", dig(in, "enableAutoScaling"), dig(in, "minCount"), dig(in, "maxCount"), p.MinNodes, p.MaxNodes)
			}
			if str(in, "mode") != "User" || str(in, "osType") != "Linux" || str(in, "vmSize") != p.SKU ||
				str(in, "agentPoolName") != p.Name || str(in, "resourceGroupName") != "rg-acme-prod" || str(in, "resourceName") != "aks-acme-prod" {
				t.Errorf("pool identity: %v", in.Mappable())
			}
			if str(in, "nodeLabels", gpuPresent) != "true" || str(in, "nodeLabels", poolLabel) != p.Name {
				t.Errorf("nodeLabels = %v", dig(in, "nodeLabels").Mappable())
			}
			for k, v := range p.Labels {
				if str(in, "nodeLabels", k) != v {
					t.Errorf("extra label %s=%s missing", k, v)
				}
			}
			if p.Spot {
				if str(in, "scaleSetPriority") != "Spot" || str(in, "scaleSetEvictionPolicy") != "Delete" || dig(in, "spotMaxPrice").NumberValue() != *p.AKS.SpotMaxPrice {
					t.Errorf("spot settings: %v %v %v", dig(in, "scaleSetPriority"), dig(in, "scaleSetEvictionPolicy"), dig(in, "spotMaxPrice"))
				}
			} else if !dig(in, "scaleSetPriority").IsNull() || !dig(in, "spotMaxPrice").IsNull() {
				t.Errorf("on-demand pool has spot settings: %v", in.Mappable())
			}
			if got := str(in, "gpuInstanceProfile"); got != p.MIGProfile {
				t.Errorf("gpuInstanceProfile = %q, want %q", got, p.MIGProfile)
			}
			wantDisk := p.AKS.OSDiskSizeGB
			if wantDisk == 0 {
				wantDisk = 256
			}
			if dig(in, "osDiskSizeGB").NumberValue() != float64(wantDisk) {
				t.Errorf("osDiskSizeGB = %v, want %d", dig(in, "osDiskSizeGB"), wantDisk)
			}
			if got := dig(in, "availabilityZones").Mappable(); len(p.AKS.Zones) > 0 && !reflect.DeepEqual(got, toAny(p.AKS.Zones)) {
				t.Errorf("zones = %v, want %v", got, p.AKS.Zones)
			}
			if !r.Protect {
				t.Error("prod pools must be protected")
			}
			if !slices.Contains(r.IgnoreChanges, "count") || !r.DeleteBeforeReplace || !slices.Contains(r.ReplaceOnChanges, "vmSize") {
				t.Errorf("lifecycle: ignore %v, replaceOn %v, deleteBeforeReplace %v", r.IgnoreChanges, r.ReplaceOnChanges, r.DeleteBeforeReplace)
			}
			parent, _ := m.ByName(aksPoolType, p.Name)
			if !strings.HasSuffix(r.Parent, "::"+parent.Name) {
				t.Errorf("parent = %s, want the %s component", r.Parent, p.Name)
			}
		})
	}

	// The workload provider's kubeconfig comes from Azure, signs in with
	// aks.login instead of a device code, and stays secret.
	prov, _ := m.ByName(k8sProvider, "workload")
	kc := dig(prov.Inputs, "kubeconfig")
	if !kc.IsSecret() {
		t.Errorf("workload kubeconfig must be a secret, got %v", kc)
	} else if args := fmt.Sprint(execArgs(t, kc.SecretValue().Element.StringValue())); args != "[get-token --login azurecli --server-id 6dae42f8-4368-4678-94ff-3960e28e3630]" {
		t.Errorf("workload kubeconfig signs in with %s, want kubelogin with the Azure CLI (aks.login: azurecli)", args)
	}
	var lookups []string
	for _, c := range m.Calls() {
		lookups = append(lookups, c.Token+" "+c.Args["resourceGroupName"].StringValue()+"/"+c.Args["resourceName"].StringValue())
	}
	sort.Strings(lookups)
	if diff := cmp.Diff([]string{
		"azure-native:containerservice:getManagedCluster rg-acme-prod/aks-acme-prod",
		"azure-native:containerservice:listManagedClusterUserCredentials rg-acme-prod/aks-acme-prod",
	}, lookups); diff != "" {
		t.Errorf("Azure lookups (-want +got):\n%s", diff)
	}

	// The weight download's service account is trusted by the managed
	// identity, for the cluster's issuer, on the stack's one plugin.
	fic, ok := m.ByName(federationType, "weights-download-federation")
	if !ok {
		t.Fatal("no federated identity credential")
	}
	if got := fic.Inputs.Mappable(); !reflect.DeepEqual(got, map[string]any{
		"resourceGroupName": "rg-acme-prod", "resourceName": "acme-models-reader",
		"federatedIdentityCredentialResourceName": "aks-acme-prod-models-weights-download",
		"issuer": pulumitest.AKSIssuer, "subject": "system:serviceaccount:models:weights-download",
		"audiences": []any{"api://AzureADTokenExchange"},
	}) {
		t.Errorf("federated identity credential %v", got)
	}
	if fic.Version != aks.AzureNativeVersion {
		t.Errorf("federated identity credential on azure-native %q, the stack's agent pools on %s", fic.Version, aks.AzureNativeVersion)
	}
}

// execArgs reads the exec args of a kubeconfig's only user.
func execArgs(t *testing.T, kubeconfig string) []any {
	t.Helper()
	var kc struct {
		Users []struct {
			User struct {
				Exec struct {
					Args []any `json:"args"`
				} `json:"exec"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal([]byte(kubeconfig), &kc); err != nil || len(kc.Users) != 1 {
		t.Fatalf("kubeconfig: %v: %s", err, kubeconfig)
	}
	return kc.Users[0].User.Exec.Args
}

// A cluster without an OIDC issuer or workload identity stops the program
// before anything is registered, saying what to enable.
func TestProdStackNeedsWorkloadIdentity(t *testing.T) {
	t.Parallel()
	cfg, secrets, err := pulumitest.StackConfig("prod")
	if err != nil {
		t.Fatal(err)
	}
	m := &pulumitest.Mocks{AKSCluster: map[string]any{"name": "aks-acme-prod", "oidcIssuerProfile": map[string]any{"enabled": false}}}
	_, err = m.Run(program.Program, "gpu-node-pools", "prod", cfg, secrets)
	want := "az aks update -g rg-acme-prod -n aks-acme-prod --enable-oidc-issuer --enable-workload-identity"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "gpu-node-pools:storage.clientId") {
		t.Fatalf("error %v, want one naming storage.clientId and %q", err, want)
	}
	if rs := m.Resources(); len(rs) != 0 {
		t.Errorf("registered %d resources before failing, first %s", len(rs), rs[0].Type)
	}
}

func TestDevStackUnderMocks(t *testing.T) {
	t.Parallel()
	m, pools := runStack(t, "dev")

	want := append([]string{k8sProvider + "::management", k8sProvider + "::workload"}, platformResources("gpu-operator")...)
	want = append(want, servingResources([]string{"llama3-8b"}, []string{"llama3-8b"}, nil, []string{"finetune-nightly"}, false, true, serving.Cilium)...)
	want = append(want, ollamaResources("llama-dev")...)
	want = append(want, policyResources()...)
	want = append(want, loggingResources()...)
	want = append(want, backupResources()...)
	want = append(want, gitopsResources()...)
	want = append(want, vectorResources()...)
	for _, p := range pools {
		want = append(want, metalPoolType+"::"+p.Name, mdType+"::"+p.Name+"-deployment",
			kctType+"::"+p.Name+"-bootstrap", m3mtType+"::"+p.Name+"-machines")
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, names(m)); diff != "" {
		t.Fatalf("resources (-want +got):\n%s", diff)
	}
	for name, dir := range map[string]string{"workload": "rendered/workload", "management": "rendered/management"} {
		prov, _ := m.ByName(k8sProvider, name)
		if got := str(prov.Inputs, "renderYamlToDirectory"); got != dir {
			t.Errorf("%s provider renders to %q, want %q", name, got, dir)
		}
	}
	mgmt, _ := m.ByName(k8sProvider, "management")

	for _, p := range pools {
		md, okMD := m.ByName(mdType, p.Name+"-deployment")
		kct, okKCT := m.ByName(kctType, p.Name+"-bootstrap")
		m3, okM3 := m.ByName(m3mtType, p.Name+"-machines")
		if !okMD || !okKCT || !okM3 {
			t.Fatalf("pool %s: machine deployment %v, bootstrap template %v, machine template %v", p.Name, okMD, okKCT, okM3)
		}
		t.Run(p.Name, func(t *testing.T) {
			ann := func(k string) string { return str(md.Inputs, "metadata", "annotations", k) }
			if ann(minSizeAnnot) != itoa(p.MinNodes) || ann(maxSizeAnnot) != itoa(p.MaxNodes) {
				t.Errorf("autoscaler bounds %q..%q, want %d..%d", ann(minSizeAnnot), ann(maxSizeAnnot), p.MinNodes, p.MaxNodes)
			}
			if ann(capacityPrefix+"taints") != gpuTaint || ann(capacityPrefix+"gpu-type") != "nvidia.com/gpu" ||
				!strings.Contains(ann(capacityPrefix+"labels"), poolLabel+"="+p.Name) {
				t.Errorf("scale-from-zero annotations: %v", dig(md.Inputs, "metadata", "annotations").Mappable())
			}
			if !dig(md.Inputs, "spec", "replicas").IsNull() {
				t.Error("replicas belong to the autoscaler")
			}
			if str(md.Inputs, "apiVersion") != "cluster.x-k8s.io/v1beta2" || str(md.Inputs, "metadata", "namespace") != "capi-acme" ||
				str(md.Inputs, "spec", "clusterName") != "acme" {
				t.Errorf("machine deployment identity: %v", md.Inputs.Mappable())
			}
			if got, want := str(md.Inputs, "spec", "template", "spec", "bootstrap", "configRef", "name"), str(kct.Inputs, "metadata", "name"); got != want || got == "" {
				t.Errorf("bootstrap ref %q, template %q", got, want)
			}
			if got, want := str(md.Inputs, "spec", "template", "spec", "infrastructureRef", "name"), str(m3.Inputs, "metadata", "name"); got != want || got == "" {
				t.Errorf("infrastructure ref %q, template %q", got, want)
			}
			reg := dig(kct.Inputs, "spec", "template", "spec", "joinConfiguration", "nodeRegistration")
			taints := reg.ObjectValue()["taints"].Mappable()
			if !reflect.DeepEqual(taints, []any{map[string]any{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}}) {
				t.Errorf("node registration taints = %v", taints)
			}
			args := reg.ObjectValue()["kubeletExtraArgs"].Mappable().([]any)
			nodeLabels := args[0].(map[string]any)["value"].(string)
			for _, l := range []string{gpuPresent + "=true", poolLabel + "=" + p.Name} {
				if !strings.Contains(nodeLabels, l) {
					t.Errorf("node labels %q lack %s", nodeLabels, l)
				}
			}
			for k, v := range p.Labels {
				if !strings.Contains(nodeLabels, k+"="+v) {
					t.Errorf("node labels %q lack %s=%s", nodeLabels, k, v)
				}
			}
			if p.MIGProfile != "" && !strings.Contains(nodeLabels, "nvidia.com/mig.config=all-") {
				t.Errorf("MIG pool without a MIG layout label: %q", nodeLabels)
			}
			if got := str(m3.Inputs, "spec", "template", "spec", "hostSelector", "matchLabels", "gpu.natron.cloud/hardware-profile"); got != p.SKU {
				t.Errorf("host selector %q, want %q", got, p.SKU)
			}
			for _, r := range []pulumitest.Resource{md, kct, m3} {
				if r.Provider == "" || !strings.HasPrefix(r.Provider, mgmt.Name) && !strings.Contains(r.Provider, "::management::") {
					t.Errorf("%s uses provider %q, want the management provider", r.Name, r.Provider)
				}
				if r.Protect {
					t.Errorf("%s is protected in dev", r.Name)
				}
			}
		})
	}
}

// A second evaluation of the same config asks for exactly the same inputs:
// no diff on the next preview from map order or hashing.
func TestSecondEvaluationIsIdentical(t *testing.T) {
	t.Parallel()
	for _, stack := range []string{"dev", "prod"} {
		first, _ := runStack(t, stack)
		second, _ := runStack(t, stack)
		a, b := first.Resources(), second.Resources()
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("%s: %d vs %d resources", stack, len(a), len(b))
		}
		for i := range a {
			if a[i].Name != b[i].Name || !a[i].Inputs.DeepEquals(b[i].Inputs) {
				t.Errorf("%s: %s differs between runs:\n%s", stack, a[i].Name, cmp.Diff(a[i].Inputs.Mappable(), b[i].Inputs.Mappable()))
			}
		}
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

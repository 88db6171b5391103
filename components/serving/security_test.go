package serving_test

import (
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
)

// Where vLLM v0.11.0 writes, relative to HOME or absolute, from its
// sources (cited in security.go): VLLM_CACHE_ROOT and torch.compile's
// cache below it, VLLM_CONFIG_ROOT, Triton's and FlashInfer's caches, the
// engine's IPC sockets and torch inductor's cache in tempfile.gettempdir().
var vllmWrites = []string{"~/.cache/vllm/torch_compile_cache", "~/.config/vllm", "~/.triton/cache", "~/.cache/flashinfer", "/tmp/torchinductor_vllm", "/tmp"}

// The engine pod, rendered by the real chart, meets "restricted" as Pod
// Security admission's own library judges it, and every path vLLM writes
// lands on a writable emptyDir under its read-only root filesystem.
func TestEngineRunsRestrictedAndWritesOnlyToScratch(t *testing.T) {
	t.Parallel()
	m := serving.ModelSpec{Name: "llama3-8b", Pool: "infer", Source: "s3://models/llama3-8b", ParametersB: 8, Dtype: "bfloat16",
		TensorParallel: 2, MaxModelLen: 8192, GPUMemoryUtilization: 0.9, MinReplicas: new(1), MaxReplicas: 2, QueueDepthTarget: 5}
	pool := pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts
	e := serving.NewEngine(m, pool, serving.Options{}.Defaults("cephfs", serving.Cilium), nil, "nvidia")
	var pod map[string]any
	for _, o := range renderEngine(t, e) {
		if o["kind"] == "Deployment" {
			pod = get(o, "spec", "template", "spec").(map[string]any)
		}
	}
	if pod == nil {
		t.Fatal("no engine Deployment rendered")
	}
	if level, err := podsecurity.Needs(pod); err != nil || level != podsecurity.Restricted {
		v, _ := podsecurity.Violations(podsecurity.Restricted, pod)
		t.Fatalf("engine pod needs %s (%v), want restricted: %v", level, err, v)
	}
	if pod["serviceAccountName"] != serving.ModelServerAccount {
		t.Errorf("engine runs as %v, want the token-less %s", pod["serviceAccountName"], serving.ModelServerAccount)
	}
	emptyDirs := map[string]bool{}
	for _, v := range pod["volumes"].([]any) {
		v := v.(map[string]any)
		if v["emptyDir"] != nil {
			emptyDirs[v["name"].(string)] = true
		}
	}
	containers := append(pod["initContainers"].([]any), pod["containers"].([]any)...)
	for _, c := range containers {
		c := c.(map[string]any)
		if get(c, "securityContext", "readOnlyRootFilesystem") != true {
			t.Errorf("container %s: root filesystem not read-only", c["name"])
		}
	}
	engine := pod["containers"].([]any)[0].(map[string]any)
	env := map[string]string{}
	for _, v := range engine["env"].([]any) {
		v := v.(map[string]any)
		if s, ok := v["value"].(string); ok {
			env[v["name"].(string)] = s
		}
	}
	home := env["HOME"]
	if home == "" || env["HF_HOME"] == "" {
		t.Fatalf("engine env sets no HOME or HF_HOME: %v", env)
	}
	writable := func(p string) bool {
		for _, mt := range engine["volumeMounts"].([]any) {
			mt := mt.(map[string]any)
			dir := mt["mountPath"].(string)
			if (p == dir || strings.HasPrefix(p, dir+"/")) && emptyDirs[mt["name"].(string)] && mt["readOnly"] != true {
				return true
			}
		}
		return false
	}
	for _, w := range append(vllmWrites, env["HF_HOME"]) {
		p := path.Clean(strings.Replace(w, "~", home, 1))
		if !writable(p) {
			t.Errorf("vLLM writes %s (%s), which no writable emptyDir holds", p, w)
		}
	}
	if writable("/usr/local/lib/python3.12/dist-packages/vllm") {
		t.Error("the image's own files are writable: the check above proves nothing")
	}
}

// A batch job's declared needs cost the Pod Security level the admission
// library says they do.
func TestJobSecurityNeededLevel(t *testing.T) {
	t.Parallel()
	root := int64(0)
	tests := []struct {
		name string
		sec  serving.JobSecurity
		want string
		why  string
	}{
		{"defaults", serving.JobSecurity{}, podsecurity.Restricted, ""},
		{"writable root", serving.JobSecurity{WritableRootFilesystem: true}, podsecurity.Restricted, ""},
		{"root", serving.JobSecurity{RunAsUser: &root}, podsecurity.Baseline, "runAsUser=0"},
		{"CHOWN", serving.JobSecurity{Capabilities: []string{"CHOWN"}}, podsecurity.Baseline, `unrestricted capabilities`},
		{"SYS_ADMIN", serving.JobSecurity{Capabilities: []string{"SYS_ADMIN"}}, podsecurity.Privileged, "non-default capabilities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why, err := tt.sec.NeededLevel("job")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || !strings.Contains(strings.Join(why, ";"), tt.why) {
				t.Errorf("needs %s (%v), want %s (%q)", got, why, tt.want, tt.why)
			}
		})
	}
}

// Egress of the download Jobs, both ways of expressing it.
func TestDownloadEgress(t *testing.T) {
	t.Parallel()
	blob := serving.Storage{Kind: serving.AzureBlob, Account: "acmemodels", ClientID: "c"}
	s3 := serving.Storage{Kind: serving.S3, Endpoint: "https://s3.natron-cloud.example:8443"}
	if diff := cmp.Diff([]serving.HostPort{{Host: "acmemodels.blob.core.windows.net", Port: 443}, {Host: serving.IdentityHost, Port: 443}}, blob.Endpoints()); diff != "" {
		t.Errorf("azureBlob endpoints (-want +got):\n%s", diff)
	}
	o := serving.Options{}.Defaults("cephfs", serving.Cilium)
	cnp := serving.DownloadEgress("models", o, s3)
	want := []any{
		map[string]any{
			"toEndpoints": []any{map[string]any{"matchLabels": map[string]any{"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}},
			"toPorts": []any{map[string]any{
				"ports": []any{map[string]any{"port": "53", "protocol": "ANY"}},
				"rules": map[string]any{"dns": []any{map[string]any{"matchPattern": "*"}}},
			}},
		},
		map[string]any{
			"toFQDNs": []any{map[string]any{"matchName": "s3.natron-cloud.example"}},
			"toPorts": []any{map[string]any{"ports": []any{map[string]any{"port": "8443", "protocol": "TCP"}}}},
		},
	}
	if cnp["kind"] != "CiliumNetworkPolicy" {
		t.Fatalf("cilium: %v", cnp["kind"])
	}
	if diff := cmp.Diff(want, get(cnp, "spec", "egress")); diff != "" {
		t.Errorf("CiliumNetworkPolicy egress (-want +got):\n%s", diff)
	}
	o = serving.Options{DownloadCIDRs: []string{"10.40.8.0/24", "20.190.128.0/18"}}.Defaults("azurefile-csi-premium", serving.CIDR)
	np := serving.DownloadEgress("models", o, blob)
	wantNP := []any{map[string]any{
		"to":    []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.40.8.0/24"}}, map[string]any{"ipBlock": map[string]any{"cidr": "20.190.128.0/18"}}},
		"ports": []any{map[string]any{"protocol": "TCP", "port": 443}},
	}}
	if diff := cmp.Diff(wantNP, get(np, "spec", "egress")); diff != "" {
		t.Errorf("NetworkPolicy egress (-want +got):\n%s", diff)
	}
}

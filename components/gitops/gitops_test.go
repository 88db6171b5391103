package gitops_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/fieldtest"
)

func argo() gitops.Spec {
	return gitops.Spec{RepoURL: "https://git.example/platform/acme.git", AllowedHosts: []string{"git.example"}, Path: "clusters/acme/gpu/"}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	flux := argo()
	flux.Tool, flux.Interval, flux.Timeout, flux.WorkloadCluster = gitops.Flux, "5 minutes", "10m", "acme-kubeconfig"
	for _, tc := range []struct {
		name      string
		spec      gitops.Spec
		rendering bool
		want      []string
	}{
		{"without renderDir", argo(), false, []string{`gitops: Forbidden: GitOps delivery syncs the rendered files: set renderDir too`}},
		{"unknown tool, no repo, absolute path", gitops.Spec{Tool: "jenkins", Path: "/clusters"}, true, []string{
			`gitops.tool: Unsupported value: "jenkins"`, `gitops.repoURL: Invalid value: ""`, `gitops.path: Invalid value: "/clusters"`}},
		{"flux duration", flux, true, []string{`gitops.interval: Invalid value: "5 minutes": must be a Flux duration`}},
		{"flux keys with argo", func() gitops.Spec { s := argo(); s.Interval = "5m"; return s }(), true, []string{`gitops.interval: Forbidden: read with tool flux only`}},
		{"argo cluster neither name nor url", func() gitops.Spec { s := argo(); s.WorkloadCluster = "http://x"; return s }(), true,
			[]string{`gitops.workloadCluster: Invalid value: "http://x": must be an Argo CD cluster's name or an https:// API server URL`}},
		{"store missing, bad kind", func() gitops.Spec {
			s := argo()
			s.ExternalSecrets = &gitops.ExternalSecrets{StoreKind: "Vault"}
			return s
		}(), true, []string{`gitops.externalSecrets.store: Invalid value: ""`, `gitops.externalSecrets.storeKind: Unsupported value: "Vault"`}},
		{"flux over ssh without credentials", func() gitops.Spec {
			s := flux
			s.Interval, s.RepoURL = "", "ssh://git@git.example/platform/acme.git"
			return s
		}(), true, []string{`gitops.credentialsSecret: Required value: an ssh:// repository needs the Secret with Flux's SSH key`}},
		{"argo over ssh keeps its own credentials", func() gitops.Spec { s := argo(); s.RepoURL = "ssh://git@git.example/platform/acme.git"; return s }(), true, nil},
		{"valid argo", argo(), true, nil},
		// where the publish step's token goes
		{"plain http", func() gitops.Spec { s := argo(); s.RepoURL = "http://git.example/platform/acme.git"; return s }(), true,
			[]string{`gitops.repoURL: Invalid value: "http://git.example/platform/acme.git": must be https://<host>/<owner>/<repo> or ssh://`}},
		{"a host not allowed", func() gitops.Spec { s := argo(); s.RepoURL = "https://evil.example/platform/acme.git"; return s }(), true,
			[]string{`gitops.repoURL: Invalid value: "https://evil.example/platform/acme.git": must be on an allowed host (gitops.allowedHosts): git.example`}},
		{"the default host only", func() gitops.Spec { s := argo(); s.AllowedHosts = nil; return s }(), true,
			[]string{`gitops.repoURL: Invalid value: "https://git.example/platform/acme.git": must be on an allowed host (gitops.allowedHosts): github.com`}},
		{"a token in the URL", func() gitops.Spec {
			s := argo()
			s.RepoURL = "https://x-access-token:ghp_1234@git.example/platform/acme.git"
			return s
		}(), true,
			[]string{`gitops.repoURL: Invalid value: "(a URL with credentials)": must not carry credentials`}},
		{"a host that is no name", func() gitops.Spec { s := argo(); s.AllowedHosts = []string{"git example"}; return s }(), true,
			[]string{`gitops.allowedHosts[0]: Invalid value: "git example"`, `gitops.repoURL: Invalid value`}},
		{"valid flux", func() gitops.Spec { s := flux; s.Interval = "1m30s"; return s }(), true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fieldtest.Expect(t, tc.spec.Validate(field.NewPath("gitops"), tc.rendering), tc.want...)
		})
	}
}

func TestApplication(t *testing.T) {
	t.Parallel()
	s := argo().Defaults("acme")
	got := gitops.Application(s, "acme-gpu", s.Destinations(true)[1])
	want := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "acme-gpu-management", "namespace": "argocd"},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "https://git.example/platform/acme.git", "targetRevision": "main", "path": "clusters/acme/gpu/management"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc"},
			"syncPolicy": map[string]any{
				"automated":   map[string]any{"prune": true, "selfHeal": true},
				"syncOptions": []any{"ServerSideApply=true", "CreateNamespace=true"},
				"retry":       map[string]any{"limit": 5, "backoff": map[string]any{"duration": "10s", "factor": 2, "maxDuration": "3m"}},
			},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Application (-want +got):\n%s", d)
	}
	named := s
	named.WorkloadCluster = "acme-workload"
	if dest := gitops.Application(named, "acme-gpu", named.Destinations(false)[0])["spec"].(map[string]any)["destination"]; !cmp.Equal(dest, map[string]any{"name": "acme-workload"}) {
		t.Errorf("a cluster by name: destination %v", dest)
	}
}

// Flux applies a tree layer by layer: each Kustomization names the one
// before in dependsOn, and the paths are the layers' folders.
func TestKustomizationsDependInLayerOrder(t *testing.T) {
	t.Parallel()
	s := argo()
	s.Tool, s.WorkloadCluster = gitops.Flux, "acme-kubeconfig"
	s = s.Defaults("acme")
	ks := gitops.Kustomizations(s, "acme-gpu", s.Destinations(false)[0])
	if len(ks) != len(gitops.Layers) {
		t.Fatalf("%d Kustomizations for %d layers", len(ks), len(gitops.Layers))
	}
	for i, k := range ks {
		spec := k["spec"].(map[string]any)
		if want := "./clusters/acme/gpu/workload/" + gitops.Layers[i].Dir; spec["path"] != want {
			t.Errorf("layer %d path %v, want %s", i, spec["path"], want)
		}
		deps, _ := spec["dependsOn"].([]any)
		switch {
		case i == 0 && deps != nil:
			t.Errorf("the first layer depends on %v", deps)
		case i > 0 && (len(deps) != 1 || deps[0].(map[string]any)["name"] != ks[i-1]["metadata"].(map[string]any)["name"]):
			t.Errorf("layer %d depends on %v, want the layer before", i, deps)
		}
		if spec["prune"] != true || spec["wait"] != true || spec["timeout"] != "10m" {
			t.Errorf("layer %d: prune %v wait %v timeout %v", i, spec["prune"], spec["wait"], spec["timeout"])
		}
		if kc := spec["kubeConfig"].(map[string]any)["secretRef"].(map[string]any)["name"]; kc != "acme-kubeconfig" {
			t.Errorf("kubeConfig %v", kc)
		}
	}
}

// Each object's layer follows from what it needs: a pod that asks for the
// GPU stack's RuntimeClass or GPUs comes after every other pod (the GPU
// operator and device plugin among them), whose inputs come before them.
func TestPlace(t *testing.T) {
	t.Parallel()
	deploy := func(spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"template": map[string]any{"spec": spec}}}
	}
	gpuLimits := map[string]any{"containers": []any{map[string]any{"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": 1}}}}}
	migInit := map[string]any{"initContainers": []any{map[string]any{"resources": map[string]any{"requests": map[string]any{"nvidia.com/mig-3g.40gb": 1}}}}}
	cron := map[string]any{"apiVersion": "batch/v1", "kind": "CronJob", "spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": gpuLimits}}}}}
	for _, tc := range []struct {
		name  string
		obj   map[string]any
		layer string
	}{
		{"namespace", map[string]any{"apiVersion": "v1", "kind": "Namespace"}, "1-namespaces-crds"},
		{"CRD", map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}, "1-namespaces-crds"},
		{"config map", map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, "1a-inputs"},
		{"cluster role", map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}, "1a-inputs"},
		{"priority class", map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}, "1a-inputs"},
		{"network policy", map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy"}, "1a-inputs"},
		{"claim", map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim"}, "1a-inputs"},
		{"external secret", map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret"}, "1a-inputs"},
		{"cilium policy", map[string]any{"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy"}, "1a-inputs"},
		{"GPU operator's cluster policy", map[string]any{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy"}, "1a-inputs"},
		{"webhook", map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration"}, "1b-providers"},
		{"operator", deploy(map[string]any{"containers": []any{map[string]any{"name": "op"}}}), "1b-providers"},
		{"download job", map[string]any{"apiVersion": "batch/v1", "kind": "Job", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{}}}}, "1b-providers"},
		{"model server", deploy(gpuLimits), "2-resources"},
		{"runtime class only", deploy(map[string]any{"runtimeClassName": "nvidia"}), "2-resources"},
		{"MIG init container", deploy(migInit), "2-resources"},
		{"GPU batch job", cron, "2-resources"},
		{"kyverno policy", map[string]any{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy"}, "1c-custom-resources"},
		{"scaled object", map[string]any{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject"}, "2-resources"},
		{"interceptor route", map[string]any{"apiVersion": "http.keda.sh/v1beta1", "kind": "InterceptorRoute"}, "1c-custom-resources"},
		{"velero schedule", map[string]any{"apiVersion": "velero.io/v1", "kind": "Schedule"}, "1c-custom-resources"},
		{"prometheus rule", map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule"}, "1c-custom-resources"},
		{"argo cd application", map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application"}, "3-custom-resources"},
		{"flux kustomization", map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization"}, "3-custom-resources"},
		{"flux git repository", map[string]any{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository"}, "3-custom-resources"},
	} {
		if got := gitops.Place(tc.obj).Dir; got != tc.layer {
			t.Errorf("%s: layer %s, want %s", tc.name, got, tc.layer)
		}
	}
}

// No layer moves an object of an earlier release's layout to a later
// layer: Flux would delete it before the later Kustomization applies it.
func TestLayersOnlyGrowEarlier(t *testing.T) {
	t.Parallel()
	released := []string{"1-namespaces-crds", "2-resources", "3-custom-resources"} // the first layout
	var now []string
	for _, l := range gitops.Layers {
		now = append(now, l.Dir)
	}
	last := -1
	for _, dir := range released {
		i := slices.Index(now, dir)
		if i < 0 || i < last {
			t.Fatalf("layers %v drop or reorder the released %v", now, released)
		}
		last = i
	}
	for i, l := range gitops.Layers {
		if l.Wave != i {
			t.Errorf("layer %s: wave %d, want %d (its place)", l.Dir, l.Wave, i)
		}
	}
}

func TestExternalSecret(t *testing.T) {
	t.Parallel()
	s := argo()
	s.ExternalSecrets = &gitops.ExternalSecrets{Store: "vault"}
	s = s.Defaults("acme")
	got := gitops.ExternalSecret(*s.ExternalSecrets, secret.External{Namespace: "models", Name: "gpu-node-pools-api-key", Keys: []string{"api-key"}})
	want := map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "gpu-node-pools-api-key", "namespace": "models"},
		"spec": map[string]any{
			"refreshInterval": "1h",
			"secretStoreRef":  map[string]any{"name": "vault", "kind": "ClusterSecretStore"},
			"target":          map[string]any{"name": "gpu-node-pools-api-key", "creationPolicy": "Owner"},
			"data": []any{map[string]any{"secretKey": "api-key",
				"remoteRef": map[string]any{"key": "gpu-node-pools/acme/models/gpu-node-pools-api-key", "property": "api-key"}}},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ExternalSecret (-want +got):\n%s", d)
	}

	// the type and the values that are not secret come from the template
	got = gitops.ExternalSecret(*s.ExternalSecrets, secret.External{Namespace: "rag", Name: "rag-credentials", Type: "kubernetes.io/basic-auth",
		Keys: []string{"password"}, Values: map[string]string{"username": "app", "odd": "a{{b"}})
	wantTarget := map[string]any{"name": "rag-credentials", "creationPolicy": "Owner", "template": map[string]any{
		"engineVersion": "v2", "mergePolicy": "Merge", "type": "kubernetes.io/basic-auth",
		"data": map[string]any{"username": "app", "odd": `{{ "a{{b" }}`}}}
	if d := cmp.Diff(wantTarget, got["spec"].(map[string]any)["target"]); d != "" {
		t.Errorf("ExternalSecret target (-want +got):\n%s", d)
	}
}

// A tree as the Kubernetes provider writes it, arranged: layers, waves,
// names without "default", and kustomization files that the real
// kustomize builds with Namespaces and CRDs first.
func TestArrange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(rel string, obj map[string]any) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "workload", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	meta := func(name, ns string) map[string]any {
		m := map[string]any{"name": name}
		if ns != "" {
			m["namespace"] = ns
		}
		return m
	}
	write("0-crd/apiextensions.k8s.io_v1-customresourcedefinition-default-widgets.example.com.yaml",
		map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta("widgets.example.com", "")})
	write("1-manifest/apps_v1-deployment-models-engine.yaml", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("engine", "models"),
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"runtimeClassName": "nvidia"}}}})
	write("1-manifest/v1-namespace-default-models.yaml", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta("models", "")})
	write("1-manifest/example.com_v1-widget-models-w.yaml", map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta("w", "models")})
	if err := gitops.Arrange(dir); err != nil {
		t.Fatal(err)
	}
	var files []string
	_ = filepath.WalkDir(filepath.Join(dir, "workload"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return err
	})
	want := []string{
		"workload/1-namespaces-crds/apiextensions.k8s.io_v1-customresourcedefinition-widgets.example.com.yaml",
		"workload/1-namespaces-crds/kustomization.yaml",
		"workload/1-namespaces-crds/v1-namespace-models.yaml",
		"workload/1a-inputs/kustomization.yaml",
		"workload/1b-providers/kustomization.yaml",
		"workload/1c-custom-resources/example.com_v1-widget-models-w.yaml",
		"workload/1c-custom-resources/kustomization.yaml",
		"workload/2-resources/apps_v1-deployment-models-engine.yaml",
		"workload/2-resources/kustomization.yaml",
		"workload/3-custom-resources/kustomization.yaml",
		"workload/kustomization.yaml",
	}
	if d := cmp.Diff(want, files); d != "" {
		t.Fatalf("files (-want +got):\n%s", d)
	}
	// the real kustomize builds the tree; its order puts Namespaces and
	// CRDs first, and every object carries its layer's wave
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, "workload"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range res.Resources() {
		kinds = append(kinds, r.GetKind())
		var o map[string]any
		b, err := r.AsYAML()
		if err == nil {
			err = yaml.Unmarshal(b, &o)
		}
		if err != nil {
			t.Fatal(err)
		}
		layer := gitops.Place(o)
		if w := r.GetAnnotations()[gitops.SyncWave]; w != string(rune('0'+layer.Wave)) {
			t.Errorf("%s %s: wave %q, want %d", r.GetKind(), r.GetName(), w, layer.Wave)
		}
	}
	if !slices.Equal(kinds[:2], []string{"Namespace", "CustomResourceDefinition"}) || len(kinds) != 4 {
		t.Errorf("kustomize build order %v: Namespaces and CRDs first", kinds)
	}
}

package gitops_test

import (
	"testing"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// Under the recording mock: Flux with a management tree registers the
// source and a Kustomization per layer and tree on the GitOps provider,
// ExternalSecrets on the workload provider; Argo CD an Application per
// tree, and no ExternalSecret without a store.
func TestDeliveryRegisters(t *testing.T) {
	t.Parallel()
	flux := argo()
	flux.Tool = gitops.Flux
	flux.ExternalSecrets = &gitops.ExternalSecrets{Store: "vault"}
	ext := []secret.External{{Namespace: "models", Name: "a", Keys: []string{"k"}}, {Namespace: "velero", Name: "b", Keys: []string{"cloud"}}}
	for _, tc := range []struct {
		spec       gitops.Spec
		management bool
		want       map[string]int
	}{
		{flux, true, map[string]int{"kubernetes:source.toolkit.fluxcd.io/v1:GitRepository": 1,
			"kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization": 2 * len(gitops.Layers), "kubernetes:external-secrets.io/v1:ExternalSecret": 2}},
		{argo(), false, map[string]int{"kubernetes:argoproj.io/v1alpha1:Application": 1}},
	} {
		var objects []string
		m, err := pulumitest.Run(func(ctx *pulumi.Context) error {
			g, err := kubernetes.NewProvider(ctx, "gitops", &kubernetes.ProviderArgs{})
			if err != nil {
				return err
			}
			w, err := kubernetes.NewProvider(ctx, "workload", &kubernetes.ProviderArgs{})
			if err != nil {
				return err
			}
			d, err := gitops.NewDelivery(ctx, "gitops", &gitops.Args{Spec: tc.spec.Defaults("acme"), Prefix: "acme-gpu", Management: tc.management,
				ExternalSecrets: ext, GitOps: g, Workload: w})
			if err != nil {
				return err
			}
			objects = d.Objects
			return nil
		}, "gpu-node-pools", "test", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, r := range m.Resources() {
			if r.Type == "pulumi:providers:kubernetes" || r.Type == gitops.DeliveryType {
				continue
			}
			got[r.Type]++
			want := "gitops"
			if r.Type == "kubernetes:external-secrets.io/v1:ExternalSecret" {
				want = "workload"
			}
			if p := r.Provider; len(p) < len(want) || p[len(p)-len(want)-3:len(p)-3] != want {
				t.Errorf("%s %s through %s, want the %s provider", r.Type, r.Name, p, want)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: registered %v, want %v", tc.spec.Tool, got, tc.want)
		}
		for typ, n := range tc.want {
			if got[typ] != n {
				t.Errorf("%s: %d %s, want %d", tc.spec.Tool, got[typ], typ, n)
			}
		}
		if len(objects) != got["kubernetes:source.toolkit.fluxcd.io/v1:GitRepository"]+got["kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization"]+
			got["kubernetes:argoproj.io/v1alpha1:Application"] {
			t.Errorf("%s: Objects %v", tc.spec.Tool, objects)
		}
	}
}

package backup_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/testkit/fieldtest"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

func ceph() *backup.Location {
	return &backup.Location{Provider: backup.AWS, Bucket: "gpu-backups", S3URL: "https://s3.natron-cloud.example", AccessKey: "ak", SecretKey: "sk"}
}

func blob() *backup.Location {
	return &backup.Location{Provider: backup.Azure, Bucket: "velero", StorageAccount: "acmebackups", ResourceGroup: "rg-acme-backup"}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec backup.Spec
		want []string
	}{
		{"off but configured", backup.Spec{Schedule: "0 3 * * *"}, []string{`backup.enabled: Forbidden`}},
		{"bad schedule and ttl", backup.Spec{Enabled: true, Schedule: "at three", TTL: "30d"},
			[]string{`backup.schedule: Invalid value: "at three": must be a cron schedule`, `backup.ttl: Invalid value: "30d"`}},
		{"install without a store", backup.Spec{Enabled: true, Install: true}, []string{`backup.location: Required value`}},
		{"unknown provider", backup.Spec{Enabled: true, Location: &backup.Location{Provider: "gcp", Bucket: "b"}},
			[]string{`backup.location.provider: Unsupported value: "gcp": must be one of azure, aws`}},
		{"s3 without endpoint or keys", backup.Spec{Enabled: true, Location: &backup.Location{Provider: backup.AWS, Bucket: "b"}},
			[]string{`backup.location.s3Url: Invalid value: ""`, `backup.location.accessKey: Required value`, `backup.location.secretKey: Required value`}},
		{"azure with s3 keys", backup.Spec{Enabled: true, Location: &backup.Location{Provider: backup.Azure, Bucket: "velero",
			StorageAccount: "a", ResourceGroup: "rg", S3URL: "https://s3"}}, []string{`backup.location.s3Url: Forbidden: not read with provider azure`}},
		{"identity for a Velero not ours", backup.Spec{Enabled: true, Location: &backup.Location{Provider: backup.Azure, Bucket: "velero",
			StorageAccount: "a", ResourceGroup: "rg", ClientID: "id"}}, []string{`backup.location.clientId: Forbidden`}},
		{"values without install", backup.Spec{Enabled: true, Values: map[string]any{"x": 1}}, []string{`backup.values: Forbidden`}},
		{"valid: the cluster's Velero", backup.Spec{Enabled: true}, nil},
		{"valid: installed with Ceph", backup.Spec{Enabled: true, Install: true, Location: ceph(), Schedule: "@daily", TTL: "168h"}, nil},
		{"valid: Blob", backup.Spec{Enabled: true, Location: blob()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fieldtest.Expect(t, tc.spec.Validate(field.NewPath("backup")), tc.want...)
		})
	}
}

// The Schedule covers the namespaces once each, sorted, writes to the
// location and names the resource policy only when there is a class to
// skip.
func TestSchedule(t *testing.T) {
	t.Parallel()
	s := backup.Spec{Enabled: true}.Defaults()
	got := backup.Schedule(s, []string{"models", "gpu-platform", "batch", "models"}, []string{"cephfs"})
	want := map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Schedule",
		"metadata": map[string]any{"name": "gpu-node-pools", "namespace": "velero"},
		"spec": map[string]any{
			"schedule": "0 3 * * *", "useOwnerReferencesInBackup": false,
			"template": map[string]any{
				"includedNamespaces":      []any{"batch", "gpu-platform", "models"},
				"includeClusterResources": false,
				"storageLocation":         "default",
				"ttl":                     "720h",
				"resourcePolicy":          map[string]any{"kind": "configmap", "name": backup.PolicyName},
			},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Schedule (-want +got):\n%s", d)
	}
	bare := backup.Schedule(s, []string{"gpu-platform"}, nil)
	if _, ok := bare["spec"].(map[string]any)["template"].(map[string]any)["resourcePolicy"]; ok {
		t.Errorf("a Schedule with nothing to skip names a policy: %v", bare)
	}
	if backup.Policy(nil) != nil {
		t.Errorf("a policy without classes would skip every volume")
	}
}

func TestStorageLocation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		loc  *backup.Location
		want map[string]any
	}{
		{"ceph s3", ceph(), map[string]any{
			"provider": "aws", "accessMode": "ReadWrite", "objectStorage": map[string]any{"bucket": "gpu-backups"},
			"config":     map[string]any{"region": "default", "s3ForcePathStyle": "true", "s3Url": "https://s3.natron-cloud.example"},
			"credential": map[string]any{"name": backup.CredentialsName, "key": "cloud"},
		}},
		{"azure blob with Entra ID", blob(), map[string]any{
			"provider": "azure", "accessMode": "ReadWrite", "objectStorage": map[string]any{"bucket": "velero"},
			"config": map[string]any{"storageAccount": "acmebackups", "resourceGroup": "rg-acme-backup", "useAAD": "true"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := backup.Spec{Enabled: true, Location: tc.loc}.Defaults()
			got := backup.StorageLocation(s)
			if d := cmp.Diff(tc.want, got["spec"]); d != "" {
				t.Errorf("spec (-want +got):\n%s", d)
			}
			if got["metadata"].(map[string]any)["name"] != backup.DefaultCreatedLocation {
				t.Errorf("name %v", got["metadata"])
			}
		})
	}
	if backup.StorageLocation(backup.Spec{Enabled: true}.Defaults()) != nil {
		t.Error("a location without a store")
	}
}

// Velero's rule for a resource policy (internal/resourcepolicies at
// v1.18.1: resource_policies.go GetResourcePoliciesFromConfig and
// Validate, volume_resources.go storageClassCondition): the ConfigMap has
// exactly one data key, its YAML is version v1 with volumePolicies, and a
// volume whose storage class is in a policy's storageClass list gets that
// policy's action. The weights class must come out "skip", another class
// no action.
func TestPolicyFollowsVeleroRules(t *testing.T) {
	t.Parallel()
	data := backup.Policy([]string{"cephfs", "azurefile-csi", "cephfs"})
	if len(data) != 1 {
		t.Fatalf("Velero refuses a policy ConfigMap with %d keys", len(data))
	}
	var doc struct {
		Version        string `json:"version"`
		VolumePolicies []struct {
			Conditions map[string]any `json:"conditions"`
			Action     struct {
				Type string `json:"type"`
			} `json:"action"`
		} `json:"volumePolicies"`
	}
	for _, v := range data {
		if err := yaml.UnmarshalStrict([]byte(v), &doc); err != nil {
			t.Fatalf("policy YAML: %v\n%s", err, v)
		}
	}
	if doc.Version != "v1" {
		t.Errorf("version %q: Velero supports v1 only", doc.Version)
	}
	action := func(class string) string {
		for _, p := range doc.VolumePolicies {
			classes, _ := p.Conditions["storageClass"].([]any)
			if len(p.Conditions) != 1 {
				t.Fatalf("conditions %v: only storageClass is expected", p.Conditions)
			}
			if slices.Contains(classes, any(class)) {
				return p.Action.Type
			}
		}
		return ""
	}
	for class, want := range map[string]string{"cephfs": "skip", "azurefile-csi": "skip", "ceph-rbd": ""} {
		if got := action(class); got != want {
			t.Errorf("a volume of class %s: action %q, want %q", class, got, want)
		}
	}
}

// The real Velero chart with the program's values: one restricted
// Deployment with the location's plugin, and none of what the program
// makes itself (locations, credentials) or does not want (the kubectl
// CRD-upgrade Job, node agents).
func TestVeleroChartRenders(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	for _, loc := range []*backup.Location{ceph(), func() *backup.Location { l := blob(); l.ClientID = "11111111-2222-3333-4444-555555555555"; return l }()} {
		t.Run(loc.Provider, func(t *testing.T) {
			t.Parallel()
			s := backup.Spec{Enabled: true, Install: true, Location: loc}.Defaults()
			objs := helmtest.RenderRelease(t, charts, backup.Release(s, helm.Source{Dir: charts}, identity(loc.ClientID)), s.Namespace)
			var deployments int
			for _, o := range objs {
				switch o["kind"] {
				case "BackupStorageLocation", "VolumeSnapshotLocation", "Secret", "Job", "DaemonSet":
					t.Errorf("the chart renders a %s", o["kind"])
				case "Deployment":
					deployments++
					spec := helmtest.Get(o, "spec", "template", "spec").(map[string]any)
					if v, err := podsecurity.Violations("restricted", spec); err != nil || len(v) > 0 {
						t.Errorf("the Velero pod is not restricted: %v %v", v, err)
					}
					inits, _ := spec["initContainers"].([]any)
					if len(inits) != 1 || inits[0].(map[string]any)["image"] != backup.Plugins[loc.Provider] {
						t.Errorf("plugins %v, want %s", inits, backup.Plugins[loc.Provider])
					}
					labels := helmtest.Get(o, "spec", "template", "metadata", "labels").(map[string]any)
					if (loc.ClientID != "") != (labels["azure.workload.identity/use"] == "true") {
						t.Errorf("workload identity label %v with clientId %q", labels, loc.ClientID)
					}
				}
			}
			if deployments != 1 {
				t.Errorf("%d Deployments", deployments)
			}
			for _, img := range helmtest.PodImages(objs) {
				repo, _, _ := strings.Cut(img, ":")
				if !slices.Contains(backup.VeleroChart.Images, repo) {
					t.Errorf("image %s is not among the chart's declared images %v", img, backup.VeleroChart.Images)
				}
			}
		})
	}
}

// identity is the workload identity the AKS target gives a client ID (the
// target's own test checks its spelling).
func identity(clientID string) kube.WorkloadIdentity {
	if clientID == "" {
		return kube.WorkloadIdentity{}
	}
	return kube.WorkloadIdentity{
		PodLabels:                 map[string]string{"azure.workload.identity/use": "true"},
		ServiceAccountAnnotations: map[string]string{"azure.workload.identity/client-id": clientID},
	}
}

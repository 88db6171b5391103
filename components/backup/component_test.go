package backup_test

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// Under the recording mock: installed and applied, Velero's namespace and
// chart come first, the credentials Secret holds the S3 keys only as a
// Pulumi secret; rendered, the Secret is left out and named instead. The
// Schedule's output resolves.
func TestBackupsRegister(t *testing.T) {
	t.Parallel()
	for _, rendering := range []bool{false, true} {
		loc := ceph()
		loc.AccessKey, loc.SecretKey = "access-"+pulumitest.SecretMarker, "secret-"+pulumitest.SecretMarker
		var external int
		var schedule string
		m, err := pulumitest.Run(func(ctx *pulumi.Context) error {
			prov, err := kubernetes.NewProvider(ctx, "workload", &kubernetes.ProviderArgs{})
			if err != nil {
				return err
			}
			b, err := backup.NewBackups(ctx, "backup", &backup.Args{Spec: backup.Spec{Enabled: true, Install: true, Location: loc}.Defaults(),
				Namespaces: []string{"models"}, SkipClasses: []string{"cephfs"}, Source: helm.Source{Rendering: rendering}, Workload: prov})
			if err != nil {
				return err
			}
			external = len(b.ExternalSecrets)
			b.Schedule.ApplyT(func(s string) string { schedule = s; return s })
			return nil
		}, "gpu-node-pools", "test", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if schedule != backup.ScheduleName {
			t.Errorf("rendering %v: Schedule output %q", rendering, schedule)
		}
		types := map[string]int{}
		for _, r := range m.Resources() {
			types[r.Type]++
			for k, v := range r.Inputs {
				if !v.ContainsSecrets() && strings.Contains(v.String(), pulumitest.SecretMarker) {
					t.Errorf("%s input %s holds a key in plain text", r.Name, k)
				}
			}
			if r.Type == "kubernetes:core/v1:Secret" && !r.Inputs["stringData"].ContainsSecrets() {
				t.Errorf("the credentials are not a secret: %v", r.Inputs["stringData"])
			}
		}
		wantSecrets := 1
		if rendering {
			wantSecrets = 0
		}
		if types["kubernetes:core/v1:Secret"] != wantSecrets || external != 1-wantSecrets {
			t.Errorf("rendering %v: %d Secrets, %d named for the secret manager", rendering, types["kubernetes:core/v1:Secret"], external)
		}
		for _, typ := range []string{"kubernetes:core/v1:Namespace", "kubernetes:helm.sh/v4:Chart", "kubernetes:core/v1:ConfigMap",
			"kubernetes:velero.io/v1:BackupStorageLocation", "kubernetes:velero.io/v1:Schedule"} {
			if types[typ] != 1 {
				t.Errorf("rendering %v: %d %s, want 1 (all: %v)", rendering, types[typ], typ, types)
			}
		}
	}
}

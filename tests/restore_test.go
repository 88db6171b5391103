package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/program"
)

// veleroBacksUp is Velero's rule for an object of a backup's namespaces:
// one labelled velero.io/exclude-from-backup=true is left out, whatever
// the backup selects (velero v1.18.1 pkg/backup/item_backupper.go,
// backupItemInternal).
func veleroBacksUp(obj map[string]any) bool {
	labels, _ := helmtest.Get(obj, "metadata", "labels").(map[string]any)
	return labels[kube.BackupExcludeLabel] != "true"
}

// stackObjects are the Kubernetes objects a stack registers itself (not
// its charts' children), as plain data with their kinds.
func stackObjects(t *testing.T, m *pulumitest.Mocks) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range m.Resources() {
		apiVersion, kind, ok := helm.ChildKind(r.Type)
		if !ok {
			continue
		}
		o := plainInputs(r.Inputs)
		o["apiVersion"], o["kind"] = apiVersion, kind
		out = append(out, o)
	}
	return out
}

// claimsMounted are the claims a pod-making object's template mounts.
func claimsMounted(obj map[string]any) []string {
	spec := helmtest.Get(obj, "spec", "template", "spec")
	if obj["kind"] == "CronJob" {
		spec = helmtest.Get(obj, "spec", "jobTemplate", "spec", "template", "spec")
	}
	vols, _ := helmtest.Get(spec, "volumes").([]any)
	var out []string
	for _, v := range vols {
		if c, ok := helmtest.Get(v, "persistentVolumeClaim", "claimName").(string); ok {
			out = append(out, c)
		}
	}
	return out
}

// A Velero restore of a whole stack (every namespace of it, as a
// cluster-wide schedule of the customer's takes them) brings back what
// its workloads need: every claim a restored workload mounts is restored
// too (the weights caches once carried exclude-from-backup, and the
// engines and downloads then waited for a claim that never came), and no
// pgvector Cluster is, since a restored Cluster runs initdb again
// (CloudNativePG's volumes are not in the backup) over its old archive.
func TestVeleroRestoresWhatTheWorkloadsMount(t *testing.T) {
	t.Parallel()
	for _, stack := range []string{"dev", "prod"} {
		m, _ := runStack(t, stack)
		objs := stackObjects(t, m)
		restored := map[string]bool{}
		for _, o := range objs {
			if veleroBacksUp(o) {
				restored[fmt.Sprint(o["kind"], "/", helmtest.Get(o, "metadata", "namespace"), "/", helmtest.Get(o, "metadata", "name"))] = true
			}
		}
		checked := 0
		for _, o := range objs {
			ns := helmtest.Get(o, "metadata", "namespace")
			for _, c := range claimsMounted(o) {
				checked++
				if restored[fmt.Sprint(o["kind"], "/", ns, "/", helmtest.Get(o, "metadata", "name"))] && !restored[fmt.Sprint("PersistentVolumeClaim/", ns, "/", c)] {
					t.Errorf("%s: a restore brings back %s %s/%s but not the claim %s it mounts", stack, o["kind"], ns, helmtest.Get(o, "metadata", "name"), c)
				}
			}
			if o["kind"] == "Cluster" && strings.HasPrefix(fmt.Sprint(o["apiVersion"]), "postgresql.cnpg.io/") && veleroBacksUp(o) {
				t.Errorf("%s: a restore brings back the pgvector Cluster %s/%s, which would run initdb again", stack, ns, helmtest.Get(o, "metadata", "name"))
			}
		}
		if checked == 0 {
			t.Errorf("%s: no workload of the stack mounts a claim", stack)
		}
	}
}

// archiveStore is what CloudNativePG finds in an object store: the
// archives (destinationPath/serverName) that hold WAL and a base backup.
type archiveStore map[string]bool

// cnpgCreate is what CloudNativePG (1.30.0) does when a Cluster is
// created, as far as its backups go: the database it starts with, or the
// error that stops it. A recovery bootstrap names its source among the
// externalClusters (webhook: validateRecoveryAndBackupTarget) and needs a
// base backup there ("no target backup found"); whatever the bootstrap,
// the first WAL the new cluster archives must go to an empty archive
// (pkg/management/postgres/archiver, barman-cloud-check-wal-archive:
// "Expected empty archive").
func cnpgCreate(cluster map[string]any, store archiveStore) (string, error) {
	archive := func(bos any) string {
		return fmt.Sprint(helmtest.Get(bos, "destinationPath"), "/", helmtest.Get(bos, "serverName"))
	}
	data := "an empty database (initdb)"
	if rec, ok := helmtest.Get(cluster, "spec", "bootstrap", "recovery").(map[string]any); ok {
		var from any
		ext, _ := helmtest.Get(cluster, "spec", "externalClusters").([]any)
		for _, e := range ext {
			if helmtest.Get(e, "name") == rec["source"] {
				from = helmtest.Get(e, "barmanObjectStore")
			}
		}
		if from == nil {
			return "", fmt.Errorf("recovery source %v is not among the externalClusters", rec["source"])
		}
		if !store[archive(from)] {
			return "", fmt.Errorf("no target backup found in %s", archive(from))
		}
		data = "the database recovered from " + archive(from)
	}
	if own := helmtest.Get(cluster, "spec", "backup", "barmanObjectStore"); own != nil && store[archive(own)] {
		return data, fmt.Errorf("WAL archive check failed for %s: Expected empty archive", archive(own))
	}
	return data, nil
}

// After the dev stack's pgvector database is lost (its archive holds its
// WAL and base backups), the stack brings it back as the restore
// procedure says: with restoreFrom and a new archive, CloudNativePG
// recovers it from its archive and archives on. The stack as it was would
// start an empty database that cannot archive.
func TestPGVectorRestoresFromItsArchive(t *testing.T) {
	t.Parallel()
	cfg, secrets, err := pulumitest.StackConfig("dev")
	if err != nil {
		t.Fatal(err)
	}
	cluster := func(edit func(db map[string]any)) map[string]any {
		t.Helper()
		var dbs []map[string]any
		if err := json.Unmarshal([]byte(cfg["gpu-node-pools:vectorDBs"]), &dbs); err != nil || len(dbs) == 0 {
			t.Fatalf("Pulumi.dev.yaml vectorDBs: %v", err)
		}
		edit(dbs[0])
		b, _ := json.Marshal(dbs)
		c := map[string]string{}
		for k, v := range cfg {
			c[k] = v
		}
		c["gpu-node-pools:vectorDBs"] = string(b)
		m, err := pulumitest.Run(program.Program, "gpu-node-pools", "dev", c, secrets)
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, o := range stackObjects(t, m) {
			if o["kind"] == "Cluster" {
				out = append(out, o)
			}
		}
		if len(out) != 1 {
			t.Fatalf("%d pgvector Clusters", len(out))
		}
		return out[0]
	}
	before := cluster(func(map[string]any) {})
	own := helmtest.Get(before, "spec", "backup", "barmanObjectStore")
	if own == nil {
		t.Fatal("the dev database has no backups to restore from")
	}
	// the database archived under its name until it was lost
	store := archiveStore{fmt.Sprint(helmtest.Get(own, "destinationPath"), "/", helmtest.Get(own, "serverName")): true}
	name := fmt.Sprint(helmtest.Get(before, "metadata", "name"))

	if data, err := cnpgCreate(before, store); err == nil {
		t.Errorf("the stack as it was, created again after the loss: %s, archiving on; want CloudNativePG to refuse its old archive", data)
	}
	restored := cluster(func(db map[string]any) { db["restoreFrom"], db["archive"] = name, name+"-2" })
	data, err := cnpgCreate(restored, store)
	if err != nil {
		t.Fatalf("restored as the procedure says: %v", err)
	}
	if !strings.Contains(data, "recovered from") {
		t.Errorf("restored as the procedure says: %s", data)
	}
	if slices.Contains([]string{"", "<nil>"}, fmt.Sprint(helmtest.Get(restored, "spec", "bootstrap", "recovery", "secret", "name"))) {
		t.Errorf("the recovered database keeps no application credentials: %v", helmtest.Get(restored, "spec", "bootstrap"))
	}
}

package vectordb

import (
	"fmt"
	"slices"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// dbRegistrar registers one VectorDBs' children: what its steps share.
type dbRegistrar struct {
	ctx        *pulumi.Context
	name       string
	args       *Args
	v          *VectorDBs
	child      []pulumi.ResourceOption
	namespaces map[string]pulumi.Resource
	// operator is the CloudNativePG chart, whose CRDs the Clusters need.
	operator []pulumi.Resource
}

// registerAll registers the namespaces, the operator and every database,
// in that order; it returns each database's credential.
func (r *dbRegistrar) registerAll() (pulumi.StringMap, error) {
	if err := r.registerNamespaces(); err != nil {
		return nil, err
	}
	if err := r.registerOperator(); err != nil {
		return nil, err
	}
	credentials := pulumi.StringMap{}
	for _, s := range r.args.Specs {
		value, err := r.registerDatabase(s)
		if err != nil {
			return nil, err
		}
		credentials[s.Name] = value
	}
	return credentials, nil
}

func (r *dbRegistrar) after(deps ...pulumi.Resource) []pulumi.ResourceOption {
	return append(append([]pulumi.ResourceOption{}, r.child...), pulumi.DependsOn(deps))
}

func (r *dbRegistrar) registerNamespaces() error {
	for _, ns := range Namespaces(r.args.Specs) {
		res, err := corev1.NewNamespace(r.ctx, r.name+"-"+ns, podsecurity.Namespace(ns, podsecurity.Restricted), r.child...)
		if err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		r.namespaces[ns] = res
	}
	return nil
}

// registerOperator installs CloudNativePG when a pgvector database needs it
// and the stack installs it.
func (r *dbRegistrar) registerOperator() error {
	if !r.args.InstallOperator || !slices.ContainsFunc(r.args.Specs, func(s Spec) bool { return s.Kind == PGVector }) {
		return nil
	}
	ns, err := corev1.NewNamespace(r.ctx, r.name+"-operator-namespace", podsecurity.Namespace(r.args.OperatorNamespace, podsecurity.Restricted), r.child...)
	if err != nil {
		return fmt.Errorf("operator namespace: %w", err)
	}
	rel := OperatorRelease(r.args.Source)
	chart, err := helm.Install(r.ctx, r.name+"-"+rel.Name, rel, r.args.OperatorNamespace, r.args.Source, r.after(ns)...)
	if err != nil {
		return fmt.Errorf("operator chart: %w", err)
	}
	r.operator = append(r.operator, chart) // its CRDs before the Clusters
	return nil
}

// registerDatabase registers one database: its credentials where it and
// its clients read them, the database itself, its monitor, alerts and
// network policy; it returns its credential.
func (r *dbRegistrar) registerDatabase(s Spec) (pulumi.StringOutput, error) {
	inNS := r.after(append([]pulumi.Resource{r.namespaces[s.Namespace]}, r.operator...)...)
	value, err := credential(r.ctx, r.name+"-"+s.Name, s, r.v)
	if err != nil {
		return value, fmt.Errorf("%s credentials: %w", s.Name, err)
	}
	secretDeps, err := r.registerCredentials(s, value, inNS)
	if err != nil {
		return value, err
	}
	after := r.after(append(append([]pulumi.Resource{r.namespaces[s.Namespace]}, r.operator...), secretDeps...)...)
	if s.Kind == Qdrant {
		rel := r.args.Source.Release(QdrantRelease(s.Name), QdrantChart, QdrantValues(s))
		if _, err := helm.Install(r.ctx, r.name+"-"+rel.Name, rel, s.Namespace, r.args.Source, after...); err != nil {
			return value, fmt.Errorf("%s chart: %w", s.Name, err)
		}
	} else if err := r.registerPGVector(s, inNS, after); err != nil {
		return value, err
	}
	objects := []struct {
		suffix, what string
		obj          map[string]any
	}{
		{"-metrics", "monitor", Monitor(s, r.args.MonitorLabels)},
		{"-alerts", "alerts", PrometheusRule(s, r.args.RuleLabels)},
		{"-network-policy", "network policy", NetworkPolicy(s, r.args.ServingNamespace, r.args.PrometheusNamespace, r.args.OperatorNamespace)},
	}
	for _, o := range objects {
		if _, err := plain.Object(r.ctx, r.name+"-"+s.Name+o.suffix, o.obj, inNS...); err != nil {
			return value, fmt.Errorf("%s %s: %w", s.Name, o.what, err)
		}
	}
	r.v.Endpoints[s.Name] = Endpoint{Kind: s.Kind, Namespace: s.Namespace, Address: s.Endpoint(), CredentialsSecret: CredentialsSecret(s.Name)}
	return value, nil
}

// registerCredentials places the credential in the database's namespace,
// the serving namespace and each client's; it returns the Secrets the
// database waits for.
func (r *dbRegistrar) registerCredentials(s Spec, value pulumi.StringOutput, inNS []pulumi.ResourceOption) ([]pulumi.Resource, error) {
	data := pulumi.StringMap{APIKeyKey: value}
	if s.Kind == PGVector {
		data = pulumi.StringMap{UsernameKey: pulumi.String(Owner), PasswordKey: value}
	}
	var deps []pulumi.Resource
	for _, ns := range append([]string{s.Namespace, r.args.ServingNamespace}, s.Clients...) {
		sec, ext, err := secret.Place(r.ctx, r.name+"-"+s.Name+"-credentials-"+ns, ns, CredentialsSecret(s.Name), secretType(s), data, r.args.Source.Rendering, inNS...)
		if err != nil {
			return nil, fmt.Errorf("%s credentials in %s: %w", s.Name, ns, err)
		}
		if ext != nil {
			r.v.ExternalSecrets = append(r.v.ExternalSecrets, *ext)
		} else if ns == s.Namespace {
			deps = append(deps, sec)
		}
	}
	return deps, nil
}

// registerPGVector registers a CloudNativePG Cluster and, with a backup
// destination, its store's keys and its nightly backup.
func (r *dbRegistrar) registerPGVector(s Spec, inNS, after []pulumi.ResourceOption) error {
	var store *Store
	if s.Backup != "" && r.args.Store != nil {
		st := *r.args.Store
		st.Destination = s.Backup
		store = &st
		if st.Endpoint != "" {
			_, ext, err := secret.Place(r.ctx, r.name+"-"+s.Name+"-backup-store", s.Namespace, BackupSecret(s.Name), "",
				pulumi.StringMap{AccessKeyKey: st.AccessKey.Output(), SecretKeyKey: st.SecretKey.Output()}, r.args.Source.Rendering, inNS...)
			if err != nil {
				return fmt.Errorf("%s backup store keys: %w", s.Name, err)
			}
			if ext != nil {
				r.v.ExternalSecrets = append(r.v.ExternalSecrets, *ext)
			}
		}
	}
	cluster, err := plain.Object(r.ctx, r.name+"-"+s.Name, Cluster(s, store), after...)
	if err != nil {
		return fmt.Errorf("%s cluster: %w", s.Name, err)
	}
	if store != nil {
		if _, err := plain.Object(r.ctx, r.name+"-"+s.Name+"-nightly", ScheduledBackup(s), r.after(cluster)...); err != nil {
			return fmt.Errorf("%s scheduled backup: %w", s.Name, err)
		}
	}
	return nil
}

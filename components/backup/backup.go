// Package backup backs up the configuration of what the program runs with
// the customer's Velero: a Schedule over the namespaces the program owns,
// a resource policy that leaves the model weights out (they live in object
// storage), a backup storage location in the customer's store when the
// stack names one, and Velero itself only where a stack asks for it.
package backup

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// Spec is the backup block (gpu-node-pools:backup). A render cannot look
// at the cluster, so backups are switched on by config, not detected.
type Spec struct {
	// Enabled writes a Velero Schedule over the program's namespaces (the
	// weight caches are never backed up).
	// Default: false.
	Enabled bool `json:"enabled,omitempty"`
	// Install runs Velero from the pinned chart in namespace; without it the
	// cluster's own Velero runs the Schedule.
	// Default: false.
	Install bool `json:"install,omitempty"`
	// Namespace is Velero's namespace.
	// Default: velero.
	Namespace string `json:"namespace,omitempty"`
	// Schedule is a five-field cron schedule, in Velero's time zone (UTC
	// unless its server says otherwise).
	// Default: 0 3 * * *.
	Schedule string `json:"schedule,omitempty"`
	// TTL is how long a backup is kept (a Go duration).
	// Default: 720h.
	TTL string `json:"ttl,omitempty"`
	// StorageLocation names the BackupStorageLocation the backups go to: the
	// cluster's own, or the one location creates.
	// Default: default, or gpu-node-pools with location.
	StorageLocation string `json:"storageLocation,omitempty"`
	// Location is the customer's store, for a BackupStorageLocation the
	// program creates.
	Location *Location `json:"location,omitempty"`
	// Chart pins the Velero chart.
	Chart helm.Chart `json:"chart,omitempty"`
	// Values are extra Helm values for Velero's chart.
	Values map[string]any `json:"values,omitempty"`
	// PluginImage is the object-store plugin's image (Plugins), pinned
	// with the stack's other images.
	PluginImage string `json:"-"`
}

// Location is a backup store: Azure Blob (provider azure, signing in with
// Entra ID) or an S3 store such as Ceph's (provider aws).
type Location struct {
	// Provider is azure (Blob storage) or aws (Ceph or any S3 store).
	Provider string `json:"provider"`
	// Bucket is the S3 bucket or the Blob container.
	Bucket string `json:"bucket"`
	// Prefix is a folder in the bucket.
	Prefix string `json:"prefix,omitempty"`
	// StorageAccount is the Azure storage account.
	StorageAccount string `json:"storageAccount,omitempty"`
	// ResourceGroup is the storage account's resource group (azure).
	// Default: the cluster's.
	ResourceGroup string `json:"resourceGroup,omitempty"`
	// SubscriptionID is the storage account's subscription (azure).
	// Default: the cluster's.
	SubscriptionID string `json:"subscriptionId,omitempty"`
	// ClientID is the managed identity Velero signs in as through workload
	// identity (azure, with install).
	ClientID string `json:"clientId,omitempty"`
	// IdentityName is that managed identity's name, which the program
	// federates with Velero's server service account (required with
	// clientId).
	IdentityName string `json:"identityName,omitempty"`
	// IdentityResourceGroup is the managed identity's resource group.
	// Default: the cluster's.
	IdentityResourceGroup string `json:"identityResourceGroup,omitempty"`
	// S3URL is the S3 endpoint (aws; path-style addressing, as Ceph's RGW
	// serves it).
	S3URL string `json:"s3Url,omitempty"`
	// Region is the S3 region (aws).
	// Default: default, which Ceph accepts.
	Region string `json:"region,omitempty"`
	// AccessKey is the S3 access key, a secret (aws).
	AccessKey secret.Secret `json:"accessKey,omitempty"`
	// SecretKey is the S3 secret key, a secret (aws).
	SecretKey secret.Secret `json:"secretKey,omitempty"`
}

// ServerServiceAccount is the Velero server's service account as the
// chart names it: "<fullname>-server", the release being velero (velero
// 12.1.0 templates/_helpers.tpl, velero.serverServiceAccount).
const ServerServiceAccount = "velero-server"

// Providers are Velero's object-store providers this block supports.
const (
	Azure = "azure"
	AWS   = "aws"
)

// Provider names the providers, for messages.
var ProviderNames = []string{Azure, AWS}

// VeleroChart is the pinned Velero chart (app v1.18.1) and the images it
// runs with the program's values: Velero and one object-store plugin.
var VeleroChart = helm.Chart{Name: "velero", Version: "12.1.0", Repo: "https://vmware-tanzu.github.io/helm-charts",
	Images: []string{"docker.io/velero/velero", "docker.io/velero/velero-plugin-for-aws", "docker.io/velero/velero-plugin-for-microsoft-azure"}}

// Plugins are the object-store plugin images by provider: the v1.14 line
// is the one for Velero 1.18 (velero-io/velero discussions 10508 and
// 10563, 2026).
var Plugins = map[string]string{
	AWS:   "docker.io/velero/velero-plugin-for-aws:v1.14.2",
	Azure: "docker.io/velero/velero-plugin-for-microsoft-azure:v1.14.2",
}

// Defaults.
const (
	DefaultNamespace       = "velero"
	DefaultSchedule        = "0 3 * * *"
	DefaultTTL             = "720h"
	DefaultLocation        = "default"
	DefaultCreatedLocation = "gpu-node-pools"
	DefaultRegion          = "default"
)

// HasSecrets reports whether the block holds a secret value.
func (s Spec) HasSecrets() bool {
	return s.Location != nil && (s.Location.AccessKey != "" || s.Location.SecretKey != "")
}

// Validate checks the block as written.
func (s Spec) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !s.Enabled {
		if s.Install || s.Location != nil || s.Schedule != "" || s.TTL != "" || len(s.Values) > 0 {
			errs = append(errs, fielderr.Forbidden(p.Child("enabled"), s.Enabled, "the other backup keys take effect only with enabled: true"))
		}
		return errs
	}
	if s.Namespace != "" && !fielderr.DNSLabel(s.Namespace) {
		errs = append(errs, fielderr.Invalid(p.Child("namespace"), s.Namespace, "must be a DNS label"))
	}
	if s.Schedule != "" {
		// Velero parses its schedules with this parser
		// (pkg/controller/schedule_controller.go, v1.18.1).
		if _, err := cron.ParseStandard(s.Schedule); err != nil {
			errs = append(errs, fielderr.Invalid(p.Child("schedule"), s.Schedule, "must be a cron schedule such as %q: %v", DefaultSchedule, err))
		}
	}
	if s.TTL != "" {
		if d, err := time.ParseDuration(s.TTL); err != nil || d <= 0 {
			errs = append(errs, fielderr.Invalid(p.Child("ttl"), s.TTL, "must be a positive duration such as 720h (30 days)"))
		}
	}
	if s.StorageLocation != "" && !fielderr.DNSSubdomain(s.StorageLocation) {
		errs = append(errs, fielderr.Invalid(p.Child("storageLocation"), s.StorageLocation, "must be a Kubernetes object name"))
	}
	if s.Location != nil {
		errs = append(errs, s.Location.validate(p.Child("location"), s.Install)...)
	}
	if len(s.Values) > 0 && !s.Install {
		errs = append(errs, fielderr.Forbidden(p.Child("values"), "(values)", "values configure the Velero the program installs: set install: true, or leave them out"))
	}
	if s.Install && s.Location == nil {
		errs = append(errs, fielderr.Required(p.Child("location"), "required with install: the Velero the program installs needs a store (provider %s)", strings.Join(ProviderNames, " or ")))
	}
	return append(errs, s.Chart.Validate(p.Child("chart"), VeleroChart.Version)...)
}

func (l *Location) validate(p *field.Path, install bool) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(ProviderNames, l.Provider) {
		return append(errs, fielderr.NotSupported(p.Child("provider"), l.Provider, ProviderNames))
	}
	if l.Bucket == "" || !fielderr.DNSSubdomain(l.Bucket) {
		errs = append(errs, fielderr.Invalid(p.Child("bucket"), l.Bucket, "required: the bucket (S3) or blob container (Azure), lower-case letters, digits, '-' and '.'"))
	}
	forbid := func(key string, set bool) {
		if set {
			errs = append(errs, fielderr.Forbidden(p.Child(key), "(set)", "not read with provider %s", l.Provider))
		}
	}
	switch l.Provider {
	case Azure:
		if l.StorageAccount == "" {
			errs = append(errs, fielderr.Required(p.Child("storageAccount"), "required with provider azure: the storage account holding the container"))
		}
		if l.ResourceGroup == "" {
			errs = append(errs, fielderr.Required(p.Child("resourceGroup"), "required with provider azure: the storage account's resource group"))
		}
		if l.ClientID != "" && !install {
			errs = append(errs, fielderr.Forbidden(p.Child("clientId"), l.ClientID, "the identity of the Velero the program installs: set install: true, or give the cluster's Velero its identity"))
		}
		forbid("s3Url", l.S3URL != "")
		forbid("region", l.Region != "")
		forbid("accessKey", l.AccessKey != "")
		forbid("secretKey", l.SecretKey != "")
	case AWS:
		if u, err := url.Parse(l.S3URL); l.S3URL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fielderr.Invalid(p.Child("s3Url"), l.S3URL, "required with provider aws: the S3 endpoint, e.g. https://s3.natron-cloud.example"))
		}
		if l.AccessKey == "" {
			errs = append(errs, fielderr.Required(p.Child("accessKey"), "required with provider aws, as a secret (pulumi config set --secret)"))
		}
		if l.SecretKey == "" {
			errs = append(errs, fielderr.Required(p.Child("secretKey"), "required with provider aws, as a secret (pulumi config set --secret)"))
		}
		forbid("storageAccount", l.StorageAccount != "")
		forbid("resourceGroup", l.ResourceGroup != "")
		forbid("subscriptionId", l.SubscriptionID != "")
		forbid("clientId", l.ClientID != "")
	}
	return errs
}

// Defaults fills what the block leaves out.
func (s Spec) Defaults() Spec {
	s.Namespace = cmp.Or(s.Namespace, DefaultNamespace)
	s.Schedule = cmp.Or(s.Schedule, DefaultSchedule)
	s.TTL = cmp.Or(s.TTL, DefaultTTL)
	if s.StorageLocation == "" {
		s.StorageLocation = DefaultLocation
		if s.Location != nil {
			s.StorageLocation = DefaultCreatedLocation
		}
	}
	if s.Location != nil && s.Location.Provider == AWS && s.Location.Region == "" {
		l := *s.Location
		l.Region = DefaultRegion
		s.Location = &l
	}
	s.Chart = VeleroChart.With(s.Chart)
	if s.Location != nil {
		s.PluginImage = cmp.Or(s.PluginImage, Plugins[s.Location.Provider])
	}
	return s
}

// Object names.
const (
	ScheduleName    = "gpu-node-pools"
	PolicyName      = "gpu-node-pools-backup-policy"
	CredentialsName = "gpu-node-pools-backup-credentials"
	// CredentialsKey is the key Velero reads a credentials file from.
	CredentialsKey = "cloud"
)

// Schedule is the Velero Schedule over namespaces. Volumes of the skipped
// storage classes are left out by the resource policy (named only when
// there are classes to skip); nothing else about volumes is decided here,
// so the cluster's Velero defaults apply.
func Schedule(s Spec, namespaces, skipClasses []string) map[string]any {
	ns := slices.Clone(namespaces)
	slices.Sort(ns)
	ns = slices.Compact(ns)
	included := make([]any, len(ns))
	for i, n := range ns {
		included[i] = n
	}
	template := map[string]any{
		"includedNamespaces":      included,
		"includeClusterResources": false,
		"storageLocation":         s.StorageLocation,
		"ttl":                     s.TTL,
	}
	if len(skipClasses) > 0 {
		template["resourcePolicy"] = map[string]any{"kind": "configmap", "name": PolicyName}
	}
	return map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Schedule",
		"metadata": map[string]any{"name": ScheduleName, "namespace": s.Namespace},
		"spec": map[string]any{
			"schedule":                   s.Schedule,
			"useOwnerReferencesInBackup": false,
			"template":                   template,
		},
	}
}

// Policy is the data of the resource policy ConfigMap (PolicyName, in
// Velero's namespace) the Schedule names: volumes of the given storage
// classes (the weight caches') are skipped, neither copied nor
// snapshotted. Velero reads the one key of the ConfigMap as version v1
// volume policies (internal/resourcepolicies, v1.18.1). Nil without
// classes: a storageClass condition with no classes matches every volume.
func Policy(skipClasses []string) map[string]string {
	if len(skipClasses) == 0 {
		return nil
	}
	classes := slices.Clone(skipClasses)
	slices.Sort(classes)
	classes = slices.Compact(classes)
	var b strings.Builder
	b.WriteString("version: v1\nvolumePolicies:\n- conditions:\n    storageClass:\n")
	for _, c := range classes {
		fmt.Fprintf(&b, "    - %s\n", c)
	}
	b.WriteString("  action:\n    type: skip\n")
	return map[string]string{"policy.yaml": b.String()}
}

// StorageLocation is the BackupStorageLocation of s.Location (nil
// without one).
func StorageLocation(s Spec) map[string]any {
	l := s.Location
	if l == nil {
		return nil
	}
	objectStorage := map[string]any{"bucket": l.Bucket}
	if l.Prefix != "" {
		objectStorage["prefix"] = l.Prefix
	}
	spec := map[string]any{"provider": l.Provider, "objectStorage": objectStorage, "accessMode": "ReadWrite"}
	switch l.Provider {
	case Azure:
		config := map[string]any{"storageAccount": l.StorageAccount, "resourceGroup": l.ResourceGroup, "useAAD": "true"}
		if l.SubscriptionID != "" {
			config["subscriptionId"] = l.SubscriptionID
		}
		spec["config"] = config
	case AWS:
		spec["config"] = map[string]any{"region": l.Region, "s3ForcePathStyle": "true", "s3Url": l.S3URL}
		spec["credential"] = map[string]any{"name": CredentialsName, "key": CredentialsKey}
	}
	return map[string]any{
		"apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
		"metadata": map[string]any{"name": s.StorageLocation, "namespace": s.Namespace},
		"spec":     spec,
	}
}

// NeedsCredentials reports whether the location reads a credentials
// Secret (the S3 keys; Azure signs in with Entra ID).
func (s Spec) NeedsCredentials() bool { return s.Location != nil && s.Location.Provider == AWS }

// Credentials is the credentials file of an S3 location, as the AWS plugin
// reads it (the shared credentials file format).
func Credentials(accessKey, secretKey string) string {
	return fmt.Sprintf("[default]\naws_access_key_id=%s\naws_secret_access_key=%s\n", accessKey, secretKey)
}

// Release is the Velero chart's release: the server with the location's
// object-store plugin, restricted, with resources. The chart creates no
// storage or snapshot location and no credentials Secret (the program's
// own objects are the one place those are decided), and runs no kubectl
// Job to upgrade CRDs: Helm installs them from the chart's crds/.
//
// identity is the Velero server's workload identity (zero: none).
func Release(s Spec, src helm.Source, identity kube.WorkloadIdentity) helm.Release {
	container := podsecurity.ContainerContext(true)
	values := map[string]any{
		"upgradeCRDs":              false,
		"backupsEnabled":           false,
		"snapshotsEnabled":         false,
		"deployNodeAgent":          false,
		"credentials":              map[string]any{"useSecret": false},
		"podSecurityContext":       podsecurity.PodContext(),
		"containerSecurityContext": container,
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
			"limits":   map[string]any{"memory": "512Mi"},
		},
	}
	if l := s.Location; l != nil {
		values["initContainers"] = []any{map[string]any{
			"name":            "velero-plugin-for-" + l.Provider,
			"image":           cmp.Or(s.PluginImage, Plugins[l.Provider]),
			"imagePullPolicy": "IfNotPresent",
			"volumeMounts":    []any{map[string]any{"mountPath": "/target", "name": "plugins"}},
			"securityContext": container,
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "10m", "memory": "32Mi"},
				"limits":   map[string]any{"memory": "128Mi"},
			},
		}}
		if !identity.IsZero() {
			values["podLabels"] = identity.PodLabelValues()
			values["serviceAccount"] = map[string]any{"server": map[string]any{
				"annotations": identity.ServiceAccountAnnotationValues(),
			}}
		}
	}
	return src.Release("velero", s.Chart, helm.Merge(values, s.Values))
}

// Package vectordb runs the vector databases of RAG pipelines on the
// regular CPU pools, never on GPU nodes: pgvector through CloudNativePG
// (the default: most customers already run PostgreSQL), Qdrant from its
// official chart for large vector search. Same policies, backups and
// access rules as the rest of the stack.
package vectordb

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// Kinds.
const (
	PGVector = "pgvector"
	Qdrant   = "qdrant"
)

// Kinds are the supported kinds (Milvus is out of scope: README).
var Kinds = []string{PGVector, Qdrant}

// Spec is one vector database (gpu-node-pools:vectorDBs[*]).
type Spec struct {
	// Name is a DNS label of at most 40 characters, unique.
	Name string `json:"name"`
	// Kind is pgvector (CloudNativePG) or qdrant.
	// Default: pgvector.
	Kind string `json:"kind,omitempty"`
	// Namespace holds the database.
	// Default: vector-dbs.
	Namespace string `json:"namespace,omitempty"`
	// Size is each replica's storage, a quantity such as 50Gi.
	Size string `json:"size"`
	// Replicas are PostgreSQL instances (one primary, the rest standbys) or
	// Qdrant nodes.
	// Default: 1.
	Replicas int `json:"replicas,omitempty"`
	// Resources are one replica's requests and memory limit.
	Resources Resources `json:"resources,omitempty"`
	// StorageClass is the volumes' class.
	// Default: the cluster's default.
	StorageClass string `json:"storageClass,omitempty"`
	// Clients are the namespaces whose pods may connect (the model-serving
	// namespace always may); each gets the credentials Secret.
	Clients []string `json:"clients,omitempty"`
	// Backup is where pgvector's base backups and WAL go in the stack's
	// storage (CloudNativePG's own backups): s3://bucket/path, or an Azure
	// Blob container URL. Qdrant keeps snapshots on a volume.
	Backup string `json:"backup,omitempty"`
	// Archive is the name pgvector's WAL and base backups go under in
	// backup (CloudNativePG's serverName). A database restored from an
	// archive archives under a new one: CloudNativePG refuses to archive
	// into one that holds another database's WAL.
	// Default: the database's name.
	Archive string `json:"archive,omitempty"`
	// RestoreFrom makes a new pgvector database recover from the archive
	// of that name in backup (CloudNativePG's recovery bootstrap) instead
	// of starting empty: set it, with a new archive, before the database
	// is created again after a loss (docs/operations.md). It is read only
	// when the database is created.
	RestoreFrom string `json:"restoreFrom,omitempty"`
	// NodeSelector picks the CPU nodes; a GPU pool's selector is refused.
	// Default: any node without nvidia.com/gpu.present=true.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Dimensions is the length of each vector; with vectors, checked against size (vectors
	// x dimensions x 4 bytes x 1.5).
	Dimensions int `json:"dimensions,omitempty"`
	// Vectors is how many vectors the database holds; with dimensions,
	// checked against size.
	Vectors int64 `json:"vectors,omitempty"`
	// Password is pgvector's application user's password, a secret.
	// Default: generated.
	Password secret.Secret `json:"password,omitempty"`
	// APIKey is Qdrant's API key, a secret.
	// Default: generated.
	APIKey secret.Secret `json:"apiKey,omitempty"`
	// Image is the PostgreSQL image, pinned with the stack's other images.
	Image string `json:"-"`
}

// Resources are one replica's requests and memory limit.
type Resources struct {
	// CPU is one replica's cpu request.
	// Default: 500m.
	CPU string `json:"cpu,omitempty"`
	// Memory is one replica's memory request.
	// Default: 1Gi.
	Memory string `json:"memory,omitempty"`
	// MemoryLimit is one replica's memory limit.
	// Default: the memory request.
	MemoryLimit string `json:"memoryLimit,omitempty"`
}

// Defaults.
const (
	DefaultNamespace = "vector-dbs"
	DefaultCPU       = "500m"
	DefaultMemory    = "1Gi"
)

// IndexOverhead is Qdrant's factor over the raw vectors for indexes,
// point versions and the temporary segments of optimization
// (qdrant.tech/documentation/capacity-planning: vectors × dimensions × 4
// bytes × 1.5). pgvector's HNSW index plus its heap tuples come to about
// the same; one factor for both keeps the check simple and on the safe
// side of the raw size.
const IndexOverhead = 1.5

// EstimateBytes is the storage vectors of dimensions float32 need, with
// the index overhead.
func EstimateBytes(vectors int64, dimensions int) float64 {
	return float64(vectors) * float64(dimensions) * 4 * IndexOverhead
}

// HasSecrets reports whether the spec holds a secret value.
func (s Spec) HasSecrets() bool { return s.Password != "" || s.APIKey != "" }

// CredentialKey is the field that gives the database's credential:
// Qdrant takes an API key, pgvector a password.
func (s Spec) CredentialKey() string {
	if s.Kind == Qdrant {
		return "apiKey"
	}
	return "password"
}

// Validate checks one vector database as written.
func (s Spec) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !fielderr.DNSLabel(s.Name) || len(s.Name) > 40 {
		errs = append(errs, fielderr.Invalid(p.Child("name"), s.Name, "must be a DNS label of at most 40 characters"))
	}
	if s.Kind != "" {
		errs = append(errs, fielderr.OneOf(p.Child("kind"), s.Kind, Kinds)...)
	}
	if s.Namespace != "" && !fielderr.DNSLabel(s.Namespace) {
		errs = append(errs, fielderr.Invalid(p.Child("namespace"), s.Namespace, "must be a DNS label"))
	}
	size, err := resource.ParseQuantity(s.Size)
	if err != nil || size.Sign() <= 0 {
		errs = append(errs, fielderr.Invalid(p.Child("size"), s.Size, "required: each replica's storage, a quantity such as 50Gi"))
	} else if s.Vectors > 0 || s.Dimensions > 0 {
		need := EstimateBytes(s.Vectors, s.Dimensions)
		switch {
		case s.Vectors <= 0 || s.Dimensions <= 0:
			errs = append(errs, fielderr.Invalid(p.Child("vectors"), s.Vectors, "give vectors and dimensions together, both positive"))
		case need > size.AsApproximateFloat64():
			errs = append(errs, fielderr.Invalid(p.Child("size"), s.Size,
				"holds %s, but %d vectors of %d dimensions need %s (vectors × dimensions × 4 bytes × %.1f index overhead): set size to at least %s",
				gib(size.AsApproximateFloat64()), s.Vectors, s.Dimensions, gib(need), IndexOverhead, roundUpGi(need)))
		}
	}
	if s.Replicas < 0 {
		errs = append(errs, fielderr.Invalid(p.Child("replicas"), s.Replicas, "must be at least 1"))
	}
	for key, q := range map[string]string{"cpu": s.Resources.CPU, "memory": s.Resources.Memory, "memoryLimit": s.Resources.MemoryLimit} {
		if q == "" {
			continue
		}
		if v, err := resource.ParseQuantity(q); err != nil || v.Sign() <= 0 {
			errs = append(errs, fielderr.Invalid(p.Child("resources", key), q, "must be a positive quantity such as 500m or 2Gi"))
		}
	}
	for i, c := range s.Clients {
		if !fielderr.DNSLabel(c) {
			errs = append(errs, fielderr.Invalid(p.Child("clients").Index(i), c, "must be a namespace name (a DNS label)"))
		}
	}
	if v, ok := s.NodeSelector[gpupool.LabelGPUPresent]; ok && v == "true" {
		errs = append(errs, fielderr.Invalid(p.Child("nodeSelector").Key(gpupool.LabelGPUPresent), v, "selects GPU nodes: vector databases run on CPU nodes"))
	}
	if s.Backup != "" {
		if s.Kind == Qdrant {
			errs = append(errs, fielderr.Forbidden(p.Child("backup"), s.Backup, "pgvector's (CloudNativePG's object-store backups); Qdrant keeps snapshots on its snapshot volume"))
		} else if !strings.HasPrefix(s.Backup, "s3://") && !strings.HasPrefix(s.Backup, "https://") {
			errs = append(errs, fielderr.Invalid(p.Child("backup"), s.Backup, "must be where the backups go in the stack's storage: s3://bucket/path, or https://<account>.blob.core.windows.net/<container>/path"))
		}
	}
	errs = append(errs, s.validateArchive(p)...)
	switch {
	case s.Kind == Qdrant && s.Password != "":
		errs = append(errs, fielderr.Forbidden(p.Child("password"), "(secret)", "pgvector's; Qdrant takes apiKey"))
	case s.Kind != Qdrant && s.APIKey != "":
		errs = append(errs, fielderr.Forbidden(p.Child("apiKey"), "(secret)", "Qdrant's; pgvector takes password"))
	}
	return errs
}

// validateArchive: archive and restoreFrom name archives in pgvector's
// backup, and a restored database archives under a name of its own.
func (s Spec) validateArchive(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ key, v string }{{"archive", s.Archive}, {"restoreFrom", s.RestoreFrom}} {
		key, v := f.key, f.v
		switch {
		case v == "":
		case s.Kind == Qdrant || s.Backup == "":
			errs = append(errs, fielderr.Forbidden(p.Child(key), v, "names an archive in pgvector's backup: set backup (pgvector only)"))
		case !fielderr.DNSLabel(v):
			errs = append(errs, fielderr.Invalid(p.Child(key), v, "must be a DNS label"))
		}
	}
	if s.RestoreFrom != "" && s.RestoreFrom == cmp.Or(s.Archive, s.Name) {
		errs = append(errs, fielderr.Invalid(p.Child("archive"), cmp.Or(s.Archive, s.Name),
			"is the archive the database restores from: CloudNativePG refuses to archive into an archive that is not empty (WAL archive check); set archive to a new name, such as %s-2", s.Name))
	}
	return errs
}

// CheckNodes refuses a nodeSelector that picks the nodes of one of the
// stack's GPU pools (p is the nodeSelector's path).
func (s Spec) CheckNodes(p *field.Path, pools []gpupool.Facts) field.ErrorList {
	if pool, picks := gpupool.SelectedPool(s.NodeSelector, pools); picks {
		return field.ErrorList{fielderr.Invalid(p, s.NodeSelector, "selects the nodes of GPU pool %s: vector databases run on CPU nodes (any node without %s=true, or a CPU pool's labels)",
			pool, gpupool.LabelGPUPresent)}
	}
	return nil
}

// Defaults fills what the spec leaves out.
func (s Spec) Defaults() Spec {
	s.Kind = cmp.Or(s.Kind, PGVector)
	s.Namespace = cmp.Or(s.Namespace, DefaultNamespace)
	s.Image = cmp.Or(s.Image, PostgresImage)
	s.Replicas = cmp.Or(s.Replicas, 1)
	s.Resources.CPU = cmp.Or(s.Resources.CPU, DefaultCPU)
	s.Resources.Memory = cmp.Or(s.Resources.Memory, DefaultMemory)
	s.Resources.MemoryLimit = cmp.Or(s.Resources.MemoryLimit, s.Resources.Memory)
	s.Clients = slices.Clone(s.Clients)
	slices.Sort(s.Clients)
	s.Clients = slices.Compact(s.Clients)
	return s
}

func gib(b float64) string { return fmt.Sprintf("%.1f GiB", b/(1<<30)) }

func roundUpGi(b float64) string {
	gi := int64(b / (1 << 30))
	if float64(gi)*(1<<30) < b {
		gi++
	}
	return fmt.Sprintf("%dGi", gi)
}

// Namespaces are the namespaces of the vector databases, once each, sorted.
func Namespaces(specs []Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Endpoint is a database's in-cluster address.
func (s Spec) Endpoint() string {
	if s.Kind == Qdrant {
		return fmt.Sprintf("http://%s.%s.svc:6333", QdrantRelease(s.Name), s.Namespace)
	}
	return fmt.Sprintf("postgresql://%s-rw.%s.svc:5432/%s", s.Name, s.Namespace, Database)
}

// Database and Owner are pgvector's application database and user.
const (
	Database = "app"
	Owner    = "app"
)

// QdrantRelease is the Helm release of a Qdrant database.
func QdrantRelease(name string) string { return "qdrant-" + strings.TrimPrefix(name, "qdrant-") }

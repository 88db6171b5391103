package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/stacks/target"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// Block is one top-level config key: where it goes in Config, whether its
// value holds secrets, and its own validation. The table of blocks is the
// one list of keys: Pulumi.yaml declares them, decoding accepts them, the
// Automation API writes them.
type Block struct {
	Key string
	// Scalar keys are plain strings; the others are JSON objects or lists.
	Scalar bool
	// get and set reach the Config field of a scalar key.
	get func(c *Config) string
	set func(c *Config, v string, p *field.Path) field.ErrorList
	// field is a pointer to the Config field of an object or list; nil
	// when the block is unset and cannot be (another target's block).
	field func(c *Config) any
	// into is where decoding writes, when field may be nil.
	into func(c *Config) any
	// decode replaces the generic decoding of a block whose items hold
	// keys of a type only the target knows (the pools' target blocks).
	decode func(c *Config, p *field.Path, data string) ([]string, field.ErrorList)
	// Secret reports whether the block, as the config holds it, carries a
	// secret value (the Automation API then writes it as a secret).
	Secret func(c *Config) bool
	// validate checks the decoded block; ok reports which list items
	// decoded cleanly (validating the rest would only repeat a problem).
	validate func(c *Config, p *field.Path, ok func(*field.Path) bool) field.ErrorList
}

func never(*Config) bool { return false }

// Blocks are the config blocks in documentation order.
func Blocks() []Block { return table }

// table is built once: the registry of targets is fixed.
var table = blocks()

func blocks() []Block {
	bs := []Block{{
		Key: "target", Scalar: true, Secret: never,
		get: func(c *Config) string { return c.Target },
		set: func(c *Config, v string, _ *field.Path) field.ErrorList { c.Target = v; return nil },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			if c.Target == "" {
				return field.ErrorList{fielderr.Invalid(p, c.Target, "required; allowed values: %s", strings.Join(registry.Names(), ", "))}
			}
			if _, ok := registry.Lookup(c.Target); !ok {
				return field.ErrorList{fielderr.NotSupported(p, c.Target, registry.Names())}
			}
			return nil
		},
	}}
	for _, t := range registry.All() {
		bs = append(bs, clusterBlock(t))
	}
	bs = append(bs, Block{
		Key: "renderDir", Scalar: true, Secret: never,
		get: func(c *Config) string { return c.RenderDir },
		set: func(c *Config, v string, _ *field.Path) field.ErrorList { c.RenderDir = v; return nil },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			if c.RenderDir != "" && strings.TrimSpace(c.RenderDir) == "" {
				return field.ErrorList{fielderr.Invalid(p, c.RenderDir, "must be a directory path")}
			}
			return nil
		},
	}, Block{
		Key: "protect", Scalar: true, Secret: never,
		get: func(c *Config) string {
			if c.Protect == nil {
				return ""
			}
			return fmt.Sprint(*c.Protect)
		},
		set: func(c *Config, v string, p *field.Path) field.ErrorList {
			switch v {
			case "", "auto":
				c.Protect = nil
			case "true", "false":
				b := v == "true"
				c.Protect = &b
			default:
				return field.ErrorList{fielderr.Invalid(p, v, "must be true, false or auto")}
			}
			return nil
		},
	})
	return append(bs, componentBlocks()...)
}

// componentBlocks are the blocks of the pools and the components on them,
// in documentation order.
func componentBlocks() []Block {
	return []Block{{
		Key: "pools", Secret: never, field: func(c *Config) any { return &c.Pools },
		decode: decodePools, validate: validatePools,
	}, Block{
		Key: "platform", Secret: never, field: func(c *Config) any { return &c.Platform },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			errs := c.Platform.Validate(p)
			if t, ok := registry.Lookup(c.Target); ok {
				errs = append(errs, t.ValidatePlatform(p, c.Platform)...)
			}
			return errs
		},
	}, Block{
		Key: "storage", Secret: func(c *Config) bool { return c.Storage.HasSecrets() }, field: func(c *Config) any { return &c.Storage },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			backups := slices.ContainsFunc(c.VectorDBs, func(v vectordb.Spec) bool { return v.Backup != "" })
			if serving.VLLMModels(c.Models) == 0 && (!backups || c.Storage == nil) {
				return nil // read by vLLM's weight downloads and pgvector's backups, which say when it is missing
			}
			return c.Storage.Validate(p)
		},
	}, Block{
		Key: "serving", Secret: func(c *Config) bool { return c.Serving.APIKey != "" }, field: func(c *Config) any { return &c.Serving },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList { return c.Serving.Validate(p) },
	}, Block{
		Key: "models", Secret: func(c *Config) bool {
			return slices.ContainsFunc(c.Models, func(m serving.ModelSpec) bool { return m.APIKey != "" })
		},
		field:    func(c *Config) any { return &c.Models },
		validate: validateModels,
	}, Block{
		Key: "batchJobs", Secret: never, field: func(c *Config) any { return &c.BatchJobs },
		validate: validateBatchJobs,
	}, Block{
		Key: "vectorDBs", Secret: func(c *Config) bool { return slices.ContainsFunc(c.VectorDBs, vectordb.Spec.HasSecrets) },
		field: func(c *Config) any { return &c.VectorDBs }, validate: validateVectorDBs,
	}, Block{
		Key: "policies", Secret: never, field: func(c *Config) any { return &c.Policies },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			return c.Policies.Validate(p)
		},
	}, Block{
		Key: "podSecurity", Secret: never, field: func(c *Config) any { return &c.PodSecurity },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			return c.PodSecurity.Validate(p)
		},
	}, Block{
		Key: "pricing", Secret: never, field: func(c *Config) any { return &c.Pricing },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			return c.Pricing.Validate(p)
		},
	}, Block{
		Key: "logging", Secret: never, field: func(c *Config) any { return &c.Logging },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			return c.Logging.Validate(p)
		},
	}, Block{
		Key: "backup", Secret: func(c *Config) bool { return c.Backup.HasSecrets() }, field: func(c *Config) any { return &c.Backup },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			return c.Backup.Validate(p)
		},
	}, Block{
		Key: "gitops", Secret: never, field: func(c *Config) any { return &c.GitOps },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			return c.GitOps.Validate(p, c.RenderDir != "")
		},
	}, Block{
		Key: "images", Secret: never, field: func(c *Config) any { return &c.Images },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			return c.Images.Validate(p)
		},
	}, Block{
		Key: "fleet", Secret: never, field: func(c *Config) any { return &c.Fleet },
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			return c.Fleet.Validate(p)
		},
	}}
}

// clusterBlock is a target's own block: required with that target, refused
// with another.
func clusterBlock(t target.Target) Block {
	name := string(t.Name())
	mine := func(c *Config) bool { return c.Target == name }
	return Block{
		Key:    name,
		Secret: func(c *Config) bool { return mine(c) && c.Cluster != nil && c.Cluster.HasSecrets() },
		field: func(c *Config) any {
			if !mine(c) || c.Cluster == nil {
				return nil
			}
			return c.Cluster
		},
		into: func(c *Config) any {
			if !mine(c) {
				return t.NewCluster() // decoded for its problems, then dropped
			}
			if c.Cluster == nil {
				c.Cluster = t.NewCluster()
			}
			return c.Cluster
		},
		validate: func(c *Config, p *field.Path, _ func(*field.Path) bool) field.ErrorList {
			switch want := t.NewCluster(); {
			case !mine(c):
				return nil
			case c.Cluster == nil:
				return field.ErrorList{fielderr.Required(p, "required when target is %s (%s)", name, strings.Join(requiredKeys(want), ", "))}
			case reflect.TypeOf(c.Cluster) != reflect.TypeOf(want):
				return field.ErrorList{fielderr.Invalid(p, fmt.Sprintf("%T", c.Cluster), "must be the %s block, a %T", name, want)}
			}
			return c.Cluster.Validate(p, c.RenderDir != "")
		},
	}
}

// Keys are the top-level keys, in documentation order.
func Keys() []string { return keys }

var keys = func() []string {
	out := make([]string, len(table))
	for i, b := range table {
		out[i] = b.Key
	}
	return out
}()

// Value is one encoded key, as a stack file holds it.
type Value struct {
	Key    string // full key, gpu-node-pools:<block>
	Value  string // a scalar, or JSON
	Secret bool
}

// Encode renders a typed config as stack config: the same keys and values
// as a Pulumi.<stack>.yaml. Blocks left unset are left out.
func Encode(c *Config) ([]Value, error) {
	var out []Value
	for _, b := range Blocks() {
		if b.Scalar {
			if v := b.get(c); v != "" {
				out = append(out, Value{Key: Key(b.Key), Value: v})
			}
			continue
		}
		f := b.field(c)
		if f == nil {
			continue
		}
		j, err := json.Marshal(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Key(b.Key), err)
		}
		if unset(string(j)) {
			continue
		}
		out = append(out, Value{Key: Key(b.Key), Value: string(j), Secret: b.Secret(c)})
	}
	return out, nil
}

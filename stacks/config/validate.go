package config

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// validatePools checks every pool by the rules all targets share and by
// its target's, and that names are unique.
func validatePools(c *Config, p *field.Path, ok func(*field.Path) bool) field.ErrorList {
	var errs field.ErrorList
	if len(c.Pools) == 0 {
		errs = append(errs, fielderr.Required(p, "required: at least one pool"))
	}
	t, known := registry.Lookup(c.Target)
	var domains []string
	for _, tg := range registry.All() {
		domains = append(domains, tg.LabelDomains()...)
	}
	seen := map[string]int{}
	for i, s := range c.Pools {
		ip := p.Index(i)
		if ok(ip) {
			errs = append(errs, s.Validate(ip, domains)...)
			if known {
				errs = append(errs, t.ValidatePool(ip, s)...)
			}
		}
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			errs = append(errs, fielderr.Duplicate(ip.Child("name"), s.Name, "must be unique, pools[%d] has the same name", j))
		} else {
			seen[s.Name] = i
		}
	}
	return errs
}

// validateModels checks every model and that names are unique. The source
// must be a URL of the configured store's kind.
func validateModels(c *Config, p *field.Path, ok func(*field.Path) bool) field.ErrorList {
	kind := ""
	if c.Storage != nil {
		kind = c.Storage.Kind
	}
	return validateItems(p, "models", c.Models, ok, func(m serving.ModelSpec) string { return m.Name },
		func(m serving.ModelSpec, ip *field.Path) field.ErrorList { return m.Validate(ip, kind) })
}

// validateBatchJobs checks every batch job against the serving options'
// off-peak window, and that names are unique.
func validateBatchJobs(c *Config, p *field.Path, ok func(*field.Path) bool) field.ErrorList {
	return validateItems(p, "batchJobs", c.BatchJobs, ok, func(j serving.BatchJobSpec) string { return j.Name },
		func(j serving.BatchJobSpec, ip *field.Path) field.ErrorList { return j.Validate(ip, c.Serving) })
}

// validateVectorDBs checks every vector database, and that names are
// unique.
func validateVectorDBs(c *Config, p *field.Path, ok func(*field.Path) bool) field.ErrorList {
	return validateItems(p, "vectorDBs", c.VectorDBs, ok, func(v vectordb.Spec) string { return v.Name }, vectordb.Spec.Validate)
}

// validateItems checks each item of a list that decoded cleanly (ok) with
// validate, and that no two items share a name (list names the key in the
// message).
func validateItems[T any](p *field.Path, list string, items []T, ok func(*field.Path) bool,
	name func(T) string, validate func(T, *field.Path) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, item := range items {
		ip := p.Index(i)
		if ok(ip) {
			errs = append(errs, validate(item, ip)...)
		}
		if k, dup := seen[name(item)]; dup {
			errs = append(errs, fielderr.Duplicate(ip.Child("name"), name(item), "must be unique, %s[%d] has the same name", list, k))
		} else {
			seen[name(item)] = i
		}
	}
	return errs
}

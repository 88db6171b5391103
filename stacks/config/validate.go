package config

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/check"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// validatePools checks every pool by the rules all targets share and by
// its target's, and that names are unique.
func validatePools(c *Config, p *field.Path, ok func(*field.Path) bool) field.ErrorList {
	var errs field.ErrorList
	if len(c.Pools) == 0 {
		errs = append(errs, check.Required(p, "required: at least one pool"))
	}
	t, known := registry.Lookup(c.Target)
	seen := map[string]int{}
	for i, s := range c.Pools {
		ip := p.Index(i)
		if ok(ip) {
			errs = append(errs, s.Validate(ip)...)
			if known {
				errs = append(errs, t.ValidatePool(ip, s)...)
			}
		}
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			errs = append(errs, check.Duplicate(ip.Child("name"), s.Name, "must be unique, pools[%d] has the same name", j))
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
	var errs field.ErrorList
	seen := map[string]int{}
	for i, m := range c.Models {
		ip := p.Index(i)
		if ok(ip) {
			errs = append(errs, m.Validate(ip, kind)...)
		}
		if j, dup := seen[m.Name]; dup {
			errs = append(errs, check.Duplicate(ip.Child("name"), m.Name, "must be unique, models[%d] has the same name", j))
		} else {
			seen[m.Name] = i
		}
	}
	return errs
}

// validateBatchJobs checks every batch job against the serving options'
// off-peak window, and that names are unique.
func validateBatchJobs(c *Config, p *field.Path, ok func(*field.Path) bool) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, j := range c.BatchJobs {
		ip := p.Index(i)
		if ok(ip) {
			errs = append(errs, j.Validate(ip, c.Serving)...)
		}
		if k, dup := seen[j.Name]; dup {
			errs = append(errs, check.Duplicate(ip.Child("name"), j.Name, "must be unique, batchJobs[%d] has the same name", k))
		} else {
			seen[j.Name] = i
		}
	}
	return errs
}

func validateVectorDBs(c *Config, p *field.Path, ok func(*field.Path) bool) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, v := range c.VectorDBs {
		ip := p.Index(i)
		if ok(ip) {
			errs = append(errs, v.Validate(ip)...)
		}
		if k, dup := seen[v.Name]; dup {
			errs = append(errs, check.Duplicate(ip.Child("name"), v.Name, "must be unique, vectorDBs[%d] has the same name", k))
		} else {
			seen[v.Name] = i
		}
	}
	return errs
}

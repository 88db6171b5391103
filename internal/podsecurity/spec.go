package podsecurity

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/plain"
)

// Roles of the namespaces the program creates and may lower by config.
// All enforce restricted unless lowered. The GPU platform namespace is not
// among them: its operands are privileged, which is already the lowest.
const (
	Serving = "serving"
	Batch   = "batch"
	KEDA    = "keda"
)

// Roles lists them.
var Roles = []string{Serving, Batch, KEDA}

// MinReason is the shortest reason accepted for lowering a namespace.
const MinReason = 15

// Override lowers one namespace's level.
type Override struct {
	Level string `json:"level"`
	// Reason says why, for whoever reads the stack file next (a ticket,
	// the image that needs root).
	Reason string `json:"reason"`
}

// Spec is the podSecurity block: overrides by namespace role
// (gpu-node-pools:podSecurity).
type Spec map[string]Override

// Level is the level a role's namespace enforces.
func (s Spec) Level(role string) string {
	if o, ok := s[role]; ok && o.Level != "" {
		return o.Level
	}
	return Restricted
}

// Validate checks every override: a known role, a lower level, a reason.
func (s Spec) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, role := range plain.SortedKeys(s) {
		o, rp := s[role], p.Key(role)
		switch {
		case !slices.Contains(Roles, role):
			errs = append(errs, fielderr.NotSupported(rp, role, Roles))
			continue
		case !slices.Contains(Levels, o.Level):
			errs = append(errs, fielderr.NotSupported(rp.Child("level"), o.Level, []string{Baseline, Privileged}))
		case !Stricter(Restricted, o.Level):
			errs = append(errs, fielderr.Invalid(rp.Child("level"), o.Level, "%s is the default; only lowering is configurable (allowed values: %s, %s)", Restricted, Baseline, Privileged))
		}
		if len(strings.TrimSpace(o.Reason)) < MinReason {
			errs = append(errs, fielderr.Required(rp.Child("reason"), "say why the %s namespace enforces less than %s, in at least %d characters (a ticket, the image that needs it)", role, Restricted, MinReason))
		}
	}
	return errs
}

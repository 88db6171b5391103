// Package check builds the config problems every validator reports, as
// field errors (k8s.io/apimachinery's field.Path and field.ErrorList, the
// way cluster-api-provider-azure's webhooks aggregate them) whose detail
// reads "<what is wrong>, got <value>", and wraps apimachinery's name and
// label validators.
package fielderr

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Invalid is a value that breaks a rule: detail is what the value must be.
func Invalid(p *field.Path, value any, detail string, args ...any) *field.Error {
	return newError(field.ErrorTypeInvalid, p, value, detail, args)
}

// Required is a value that is missing: detail says what to provide.
func Required(p *field.Path, detail string, args ...any) *field.Error {
	return &field.Error{Type: field.ErrorTypeRequired, Field: p.String(), Detail: fmt.Sprintf(detail, args...) + ", got nothing"}
}

// Forbidden is a value that may not be set here.
func Forbidden(p *field.Path, value any, detail string, args ...any) *field.Error {
	return newError(field.ErrorTypeForbidden, p, value, detail, args)
}

// Duplicate is a value that must be unique and is not.
func Duplicate(p *field.Path, value any, detail string, args ...any) *field.Error {
	return newError(field.ErrorTypeDuplicate, p, value, detail, args)
}

// TypeInvalid is a value of the wrong kind: "must be <want>, got <got>",
// where got describes what was written (a JSON string, an object).
func TypeInvalid(p *field.Path, value any, want, got string) *field.Error {
	return &field.Error{Type: field.ErrorTypeTypeInvalid, Field: p.String(), BadValue: value, Detail: "must be " + want + ", got " + got}
}

// Reported reports whether errs hold a problem at p or under it: checks
// that build on p skip it, so that one mistake gives one problem.
func Reported(errs field.ErrorList, p *field.Path) bool {
	at := p.String()
	for _, e := range errs {
		if e.Field == at || strings.HasPrefix(e.Field, at+".") || strings.HasPrefix(e.Field, at+"[") {
			return true
		}
	}
	return false
}

// NotSupported is a value outside a fixed set; allowed lists the set.
func NotSupported[T ~string](p *field.Path, value any, allowed []T) *field.Error {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return newError(field.ErrorTypeNotSupported, p, value, "must be one of %s", []any{strings.Join(names, ", ")})
}

// OneOf reports value when it is not in allowed; nothing when it is.
func OneOf[T ~string](p *field.Path, value T, allowed []T) field.ErrorList {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return field.ErrorList{NotSupported(p, string(value), allowed)}
}

func newError(t field.ErrorType, p *field.Path, value any, detail string, args []any) *field.Error {
	return &field.Error{Type: t, Field: p.String(), BadValue: value, Detail: fmt.Sprintf(detail, args...) + ", got " + Show(value)}
}

// Show renders a value the way problems quote it: strings and lists of
// strings quoted, numbers as written.
func Show(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case string, []string:
		return fmt.Sprintf("%q", x)
	case *float64:
		if x == nil {
			return "nothing"
		}
		return fmt.Sprint(*x)
	}
	return fmt.Sprint(v)
}

// Message is how one problem reads: "<key path>: <detail>".
func Message(e *field.Error) string { return e.Field + ": " + e.Detail }

// DNSLabel reports whether v is an RFC 1123 label (names of namespaces,
// Services and most objects).
func DNSLabel(v string) bool { return len(content.IsDNS1123Label(v)) == 0 }

// DNSSubdomain reports whether v is an RFC 1123 subdomain.
func DNSSubdomain(v string) bool { return len(content.IsDNS1123Subdomain(v)) == 0 }

// LabelKey reports whether v is a Kubernetes label key (an optional DNS
// subdomain prefix and '/', then a name).
func LabelKey(v string) bool { return len(content.IsLabelKey(v)) == 0 }

// LabelValue reports whether v is a Kubernetes label value.
func LabelValue(v string) bool { return len(content.IsLabelValue(v)) == 0 }

// Labels checks a label map; reserved, when given, names the keys that
// belong to someone else and the prefixes that are reserved.
func Labels(p *field.Path, labels map[string]string, reserved func(string) bool, reservedPrefixes []string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v, kp := labels[k], p.Child(k)
		if !LabelKey(k) {
			errs = append(errs, Invalid(kp, k, "must be a label key: an optional DNS-subdomain prefix and '/', then 1-63 letters, digits, '-', '_', '.', starting and ending with a letter or digit"))
			continue
		}
		if reserved != nil && reserved(k) {
			errs = append(errs, Forbidden(kp, k, "is set by the program or the platform; keys under %s are reserved", strings.Join(reservedPrefixes, ", ")))
		}
		if !LabelValue(v) {
			errs = append(errs, Invalid(kp, v, "value must be empty or 1-63 letters, digits, '-', '_', '.', starting and ending with a letter or digit"))
		}
	}
	return errs
}

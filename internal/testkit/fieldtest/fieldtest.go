// Package fieldtest checks the field errors a validator returns, in order,
// by the start of each message (key path, error type, value, detail).
package fieldtest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Expect fails unless errs are exactly as many as want and each message
// starts with its want.
func Expect(t testing.TB, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems %q, want %q", len(got), got, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d: %q, want prefix %q", i, got[i], w)
		}
	}
}

package delivery

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuntimeSecret is a Secret an operator makes when it runs, beside its own
// Deployment, and that other pods of its chart mount: no pod runs here, so
// the harness makes it in its place once the operator's Deployment exists.
type RuntimeSecret struct {
	// Operator is the name of the Deployment that makes the Secret.
	Operator string
	// Name and Keys are the Secret's.
	Name string
	Keys []string
	// Source is where the operator's rule is written.
	Source string
}

// KEDACerts is KEDA's: the operator generates and rotates the components'
// certificates into kedaorg-certs in its namespace, which the metrics
// server and the admission webhooks mount at /certs (keda chart 2.20.2
// templates/manager/deployment.yaml: --enable-cert-rotation,
// --cert-secret-name; keda-docs operate/security.md).
var KEDACerts = RuntimeSecret{Operator: "keda-operator", Name: "kedaorg-certs",
	Keys: []string{"ca.crt", "ca.key", "tls.crt", "tls.key"}, Source: "keda chart 2.20.2 templates/manager/deployment.yaml"}

// StartOperators makes each RuntimeSecret in the namespace of every
// Deployment named as its operator, once, until the test ends.
func (c *Cluster) StartOperators(t testing.TB, secrets ...RuntimeSecret) {
	t.Helper()
	made := map[string]bool{}
	c.every(t, func(ctx context.Context) {
		var deps appsv1.DeploymentList
		if err := c.Client.List(ctx, &deps); err != nil {
			return
		}
		for _, d := range deps.Items {
			for _, s := range secrets {
				k := d.Namespace + "/" + s.Name
				if d.Name != s.Operator || made[k] {
					continue
				}
				data := map[string][]byte{}
				for _, key := range s.Keys {
					data[key] = []byte("made at run time by " + s.Operator)
				}
				sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: d.Namespace}, Data: data}
				if err := c.Client.Create(ctx, sec); err == nil {
					made[k] = true
				}
			}
		}
	})
}

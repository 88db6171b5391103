package delivery

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// serviceMonitor holds the fields of a monitoring.coreos.com/v1
// ServiceMonitor that choose its targets.
type serviceMonitor struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any"`
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port string `json:"port"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// ScrapedServices are the Services each live ServiceMonitor makes
// Prometheus scrape ("namespace/name" of the monitor to "namespace/name"
// of each Service), by prometheus-operator's rule (v0.93.1, whose CRDs
// the tests install: pkg/prometheus/promcfg.go,
// generateServiceMonitorConfig): the Services of the monitor's namespaces
// (its own unless namespaceSelector says otherwise) whose own labels match
// spec.selector, and of those only the ones with a port named as an
// endpoint's port. A Service's labels are its metadata's, which a GitOps
// tool may rewrite (Argo CD's label tracking), not its pods'.
func (c *Cluster) ScrapedServices(ctx context.Context) (map[string][]string, error) {
	var monitors unstructured.UnstructuredList
	monitors.SetAPIVersion("monitoring.coreos.com/v1")
	monitors.SetKind("ServiceMonitorList")
	if err := c.Client.List(ctx, &monitors); err != nil {
		return nil, fmt.Errorf("service monitors: %w", err)
	}
	var services corev1.ServiceList
	if err := c.Client.List(ctx, &services); err != nil {
		return nil, fmt.Errorf("services: %w", err)
	}
	out := map[string][]string{}
	for _, u := range monitors.Items {
		var sm serviceMonitor
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &sm); err != nil {
			return nil, fmt.Errorf("service monitor %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		key := sm.Namespace + "/" + sm.Name
		out[key] = []string{}
		for _, s := range services.Items {
			ok, err := sm.scrapes(s)
			if err != nil {
				return nil, fmt.Errorf("service monitor %s: %w", key, err)
			}
			if ok {
				out[key] = append(out[key], client.ObjectKeyFromObject(&s).String())
			}
		}
	}
	return out, nil
}

// Scrapes is whether a ServiceMonitor makes Prometheus scrape a Service,
// both given as plain objects (ScrapedServices' rule).
func Scrapes(monitor, service map[string]any) (bool, error) {
	var sm serviceMonitor
	var s corev1.Service
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(monitor, &sm); err != nil {
		return false, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(service, &s); err != nil {
		return false, err
	}
	return sm.scrapes(s)
}

func (sm serviceMonitor) scrapes(s corev1.Service) (bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		return false, fmt.Errorf("selector: %w", err)
	}
	return monitorsNamespace(sm, s.Namespace) && sel.Matches(labels.Set(s.Labels)) && hasEndpointPort(sm, s), nil
}

func monitorsNamespace(sm serviceMonitor, ns string) bool {
	n := sm.Spec.NamespaceSelector
	switch {
	case n.Any:
		return true
	case len(n.MatchNames) == 0:
		return ns == sm.Namespace
	default:
		return slices.Contains(n.MatchNames, ns)
	}
}

// hasEndpointPort: an endpoint naming a port keeps only the targets of
// that Service port (the relabeling on __meta_kubernetes_endpoint_port_name
// or, with EndpointSlices, ..._endpointslice_port_name).
func hasEndpointPort(sm serviceMonitor, s corev1.Service) bool {
	for _, ep := range sm.Spec.Endpoints {
		if ep.Port == "" {
			return true
		}
		for _, p := range s.Spec.Ports {
			if p.Name == ep.Port {
				return true
			}
		}
	}
	return false
}

package tests

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
)

// placement is where one pod ended up.
type placement struct {
	Namespace, Name, Node, Phase string
	// Unschedulable is the scheduler's message for a pod it could not place.
	Unschedulable string
	Labels        map[string]string
	GPUs          bool // requests a GPU resource
	Owner         string
}

// placements reads every pod of the cluster.
func placements(t *testing.T, srv *kubeapi.Server) []placement {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct {
				Namespace, Name string
				Labels          map[string]string
				OwnerReferences []struct{ Kind, Name string } `json:"ownerReferences"`
			}
			Spec struct {
				NodeName   string `json:"nodeName"`
				Containers []struct {
					Resources struct {
						Requests map[string]string
						Limits   map[string]string
					}
				}
			}
			Status struct {
				Phase      string
				Conditions []struct{ Type, Status, Reason, Message string }
			}
		}
	}
	srv.GetJSON(t, &list, "pods", "-A")
	var out []placement
	for _, p := range list.Items {
		pl := placement{Namespace: p.Metadata.Namespace, Name: p.Metadata.Name, Node: p.Spec.NodeName, Phase: p.Status.Phase, Labels: p.Metadata.Labels}
		for _, o := range p.Metadata.OwnerReferences {
			pl.Owner = o.Kind + "/" + o.Name
		}
		for _, c := range p.Spec.Containers {
			for k := range c.Resources.Limits {
				pl.GPUs = pl.GPUs || strings.HasPrefix(k, "nvidia.com/")
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == "PodScheduled" && c.Status == "False" && c.Reason == "Unschedulable" {
				pl.Unschedulable = c.Message
			}
		}
		out = append(out, pl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out
}

// settle waits until every pod is either bound and running (or done) or
// reported unschedulable by the scheduler for a reason that lasts (not an
// unbound claim, which the volume controller binds), at least want pods
// exist, and
// the set of pods has not changed for three polls (the controllers have
// made all they will).
func settle(t *testing.T, srv *kubeapi.Server, want int) []placement {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	stable := 0
	for {
		if refused := admissionRefusals(t, srv); len(refused) > 0 {
			t.Fatalf("the API server refused pods the controllers made:\n%s", strings.Join(refused, "\n"))
		}
		pods := placements(t, srv)
		done := len(pods) >= want
		var names []string
		for _, p := range pods {
			names = append(names, p.Namespace+"/"+p.Name)
			// A claim the volume controller has not bound yet is no verdict:
			// the scheduler tries the pod again once it is bound.
			final := p.Unschedulable != "" && !strings.Contains(p.Unschedulable, "unbound immediate PersistentVolumeClaims")
			if !(p.Node != "" && (p.Phase == "Running" || p.Phase == "Succeeded")) && !final {
				done = false
			}
		}
		if set := strings.Join(names, ","); done && set == last {
			stable++
		} else {
			stable, last = 0, set
		}
		if stable >= 2 {
			return pods
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods did not settle in 2 minutes:\n%s\nscheduler log:\n%s", report(pods, nil), srv.Log(t, "kube-scheduler"))
		}
		time.Sleep(time.Second)
	}
}

// admissionRefusals are the pods a controller could not create, in the
// API server's words (its FailedCreate events: Pod Security admission, a
// missing service account).
func admissionRefusals(t *testing.T, srv *kubeapi.Server) []string {
	t.Helper()
	var list struct {
		Items []struct {
			InvolvedObject struct{ Kind, Namespace, Name string } `json:"involvedObject"`
			Message        string
		}
	}
	srv.GetJSON(t, &list, "events", "-A", "--field-selector", "reason=FailedCreate")
	var refused []string
	for _, e := range list.Items {
		o := e.InvolvedObject
		refused = append(refused, fmt.Sprintf("%s %s/%s: %s", o.Kind, o.Namespace, o.Name, e.Message))
	}
	return refused
}

// report is the table of pod → node → pool.
func report(pods []placement, poolOf map[string]string) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tNODE\tPOOL\tSTATUS")
	for _, p := range pods {
		status := p.Phase
		if p.Unschedulable != "" {
			status = "Pending: " + p.Unschedulable
		}
		pool := poolOf[p.Node]
		if pool == "" && p.Node != "" {
			pool = "(cpu)"
		}
		fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Node, pool, status)
	}
	w.Flush()
	return b.String()
}

// Package kubeapi runs a real kube-apiserver with etcd on loopback for tests:
// real schema validation, defaulting, CRDs and admission, no kubelet.
package kubeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/natron/gpu-node-pools/internal/testkit/proc"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// Env vars naming the bin directories of the cached binaries (make test sets
// them from .ci/toolchain/kube-apiserver.sh and etcd.sh).
const (
	KubeBinEnv = "GPU_NODE_POOLS_KUBE_BIN"
	EtcdBinEnv = "GPU_NODE_POOLS_ETCD_BIN"
	KwokBinEnv = "GPU_NODE_POOLS_KWOK_BIN"
)

// apiControllers are what applying and deleting objects needs: without the
// garbage collector, foreground deletion (what the Pulumi provider asks
// for) never finishes; without the namespace controller, a deleted
// namespace stays Terminating; without the PVC protection controller, a
// deleted claim keeps its finalizer.
var apiControllers = []string{"garbage-collector-controller", "namespace-controller", "persistentvolumeclaim-protection-controller"}

// schedulingControllers are what running pods needs besides: node
// lifecycle (it lifts the not-ready taint the API server gives a new Node
// once KWOK reports it Ready), service accounts (pods are refused in a
// namespace without its default one), the root CA publisher (every pod's
// token volume reads its kube-root-ca.crt), the workload controllers that make
// pods, the binder of claims to static volumes, and the disruption
// controller, which counts the healthy pods a PodDisruptionBudget guards
// (the eviction API refuses all evictions of a budget it has not counted).
var schedulingControllers = []string{"node-lifecycle-controller", "serviceaccount-controller", "root-ca-certificate-publisher-controller", "deployment-controller",
	"replicaset-controller", "job-controller", "cronjob-controller", "daemonset-controller", "persistentvolume-binder-controller",
	"disruption-controller"}

// Server is a running API server.
type Server struct {
	URL        string
	Kubeconfig string // file
	dir        string
	kubectl    string
	gate       *inputsGate
	pki        *pki
	procs      []*proc.Process
}

// KubeconfigYAML is the admin kubeconfig's content.
func (s *Server) KubeconfigYAML(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Start starts etcd and kube-apiserver on free loopback ports and stops
// both, by their pids, when the test ends. Without the binaries it skips,
// saying how to get them (in CI it fails).
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return startServer(t, apiControllers, newOptions(opts).seed)
}

// Option changes what a simulated cluster does.
type Option func(*options)

type options struct {
	inputs bool
	seed   *Seed
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithSeed starts the server from the seed's state (see Seed).
func WithSeed(s *Seed) Option { return func(o *options) { o.seed = s } }

// WithInputsGate starts a pod's containers only once the Secrets and
// ConfigMaps it reads exist, as the kubelet does (see inputsGate): without
// it KWOK runs every bound pod, so a delivery order that leaves a pod
// without its Secret would look healthy.
func WithInputsGate() Option { return func(o *options) { o.inputs = true } }

// StartCluster is Start plus what makes pods run, with no kubelet: the real
// kube-scheduler, KWOK (which keeps every Node Ready and marks the pods
// bound to them Running) and the controllers scheduling needs.
func StartCluster(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := newOptions(opts)
	kwokBin := os.Getenv(KwokBinEnv)
	if kwokBin == "" {
		pulumitest.Missing(t, "a simulated cluster needs %s: run `make test`, which builds kwok once", KwokBinEnv)
	}
	s := startServer(t, append(append([]string{}, apiControllers...), schedulingControllers...), o.seed)
	kubeBin := os.Getenv(KubeBinEnv)
	s.start(t, "kube-scheduler", filepath.Join(kubeBin, "kube-scheduler"),
		"--kubeconfig", s.Kubeconfig, "--authentication-kubeconfig", s.Kubeconfig, "--authorization-kubeconfig", s.Kubeconfig,
		"--secure-port", "0", "--leader-elect=false")
	stages := filepath.Join(kwokBin, "stages.yaml")
	if o.inputs {
		stages = gatedStages(t, stages, s.dir)
		s.startInputsGate(t)
	}
	s.start(t, "kwok", filepath.Join(kwokBin, "kwok"),
		"--kubeconfig", s.Kubeconfig, "--manage-all-nodes=true", "--server-address", "127.0.0.1:0",
		"--config", stages)
	return s
}

// Create writes objects with kubectl create (a Node keeps the capacity in
// its status that way, which apply would drop). It refuses what an
// upstream component makes at run time (MadeAtRunTime).
func (s *Server) Create(t testing.TB, objs ...map[string]any) {
	t.Helper()
	refuseRunTimeObjects(t, objs)
	f := filepath.Join(t.TempDir(), "objects.yaml")
	pulumitest.WriteManifests(t, f, objs)
	s.Kubectl(t, "create", "-f", f)
}

// TryCreate is Create for objects the server may refuse: kubectl's output
// (the server's message) and whether it failed.
func (s *Server) TryCreate(t testing.TB, objs ...map[string]any) (string, error) {
	t.Helper()
	refuseRunTimeObjects(t, objs)
	f := filepath.Join(t.TempDir(), "objects.yaml")
	pulumitest.WriteManifests(t, f, objs)
	return s.TryKubectl("create", "-f", f)
}

// TryKubectl runs kubectl against the server: its output and whether it
// failed.
func (s *Server) TryKubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// the discovery cache is the server's own: another server may have
	// had its port, with other APIs
	base := []string{"--kubeconfig", s.Kubeconfig, "--cache-dir", filepath.Join(s.dir, "kubectl-cache")}
	out, err := exec.CommandContext(ctx, s.kubectl, append(base, args...)...).CombinedOutput()
	return string(out), err
}

// Log is the log of one of the cluster's processes (for failure messages).
func (s *Server) Log(t testing.TB, name string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	return tail(string(b), 4000)
}

func startServer(t testing.TB, controllers []string, seed *Seed) *Server {
	t.Helper()
	kubeBin, etcdBin := os.Getenv(KubeBinEnv), os.Getenv(EtcdBinEnv)
	if kubeBin == "" || etcdBin == "" {
		pulumitest.Missing(t, "a real API server needs %s and %s: run `make test`, which builds kube-apiserver and etcd once", KubeBinEnv, EtcdBinEnv)
	}
	var apis []string
	if seed != nil {
		apis = seed.state(t)
	}
	dir := t.TempDir()
	p, err := newPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	if seed != nil {
		if err := copyDir(seed.dir, filepath.Join(dir, "etcd")); err != nil {
			t.Fatalf("seed %s: %v", seed.Name, err)
		}
	}
	etcd, etcdPorts := proc.Serve(t, proc.Server{Dir: dir, Name: "etcd", Bin: filepath.Join(etcdBin, "etcd"), Ports: 2,
		Args: func(ports []int) []string {
			client, peer := "http://127.0.0.1:"+strconv.Itoa(ports[0]), "http://127.0.0.1:"+strconv.Itoa(ports[1])
			return []string{"--data-dir", filepath.Join(dir, "etcd"),
				"--listen-client-urls", client, "--advertise-client-urls", client,
				"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
				"--initial-cluster", "default=" + peer,
				"--unsafe-no-fsync", "--log-level", "warn"}
		},
		Ready: proc.Listening})
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPorts[0])
	ready := readyz(t, p)
	api, apiPorts := proc.Serve(t, proc.Server{Dir: dir, Name: "kube-apiserver", Bin: filepath.Join(kubeBin, "kube-apiserver"), Ports: 1,
		Args: func(ports []int) []string {
			return []string{"--etcd-servers", etcdURL,
				"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
				"--secure-port", strconv.Itoa(ports[0]),
				"--tls-cert-file", p.serverCert, "--tls-private-key-file", p.serverKey,
				"--client-ca-file", p.caCert,
				"--service-account-issuer", "https://kubernetes.default.svc",
				"--service-account-key-file", p.saPub, "--service-account-signing-key-file", p.saKey,
				"--api-audiences", "https://kubernetes.default.svc",
				"--service-cluster-ip-range", "10.0.0.0/24",
				"--authorization-mode", "RBAC",
				"--allow-privileged=true",
				// required with a loopback advertise address
				"--endpoint-reconciler-type", "none"}
		},
		Ready: ready, Timeout: 90 * time.Second})
	apiPort := apiPorts[0]

	s := &Server{URL: "https://127.0.0.1:" + strconv.Itoa(apiPort), dir: dir, kubectl: filepath.Join(kubeBin, "kubectl"),
		pki: p, procs: []*proc.Process{etcd, api}}
	s.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, s.URL, b64(p.caPEM), b64(p.adminCertPEM), b64(p.adminKeyPEM))
	if err := os.WriteFile(s.Kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	if seed != nil {
		s.waitServed(t, apis)
	}
	s.start(t, "kube-controller-manager", filepath.Join(kubeBin, "kube-controller-manager"),
		"--kubeconfig", s.Kubeconfig, "--authentication-kubeconfig", s.Kubeconfig, "--authorization-kubeconfig", s.Kubeconfig,
		"--controllers", strings.Join(controllers, ","),
		"--service-account-private-key-file", p.saKey, "--root-ca-file", p.caCert,
		// no port of its own to serve: nothing here reads its metrics
		"--leader-elect=false", "--secure-port", "0",
		"--use-service-account-credentials=false",
		// KWOK renews a node's status about once a minute, past the default
		// 50 s grace: the node lifecycle controller then marked every node
		// NotReady in turn and every pod on it not Ready, which no kubelet
		// here undoes, so no Deployment ever became available.
		"--node-monitor-grace-period", "10m")
	return s
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// StartController runs a controller binary against the server, with
// KUBECONFIG naming its admin kubeconfig, and stops it when the test ends;
// its log is Log(name).
func (s *Server) StartController(t testing.TB, name, bin string, args ...string) {
	t.Helper()
	s.procs = append(s.procs, proc.Start(t, s.dir, name, bin, []string{"KUBECONFIG=" + s.Kubeconfig}, args...))
}

// start runs a process of the cluster, stopped at cleanup.
func (s *Server) start(t testing.TB, name, bin string, args ...string) {
	t.Helper()
	s.procs = append(s.procs, proc.Start(t, s.dir, name, bin, nil, args...))
}

// stop stops the cluster's processes, the last started first (etcd
// last, cleanly: its data stays whole).
func (s *Server) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop()
	}
}

// adminClient talks to the server as its admin.
func adminClient(t testing.TB, p *pki) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	cert, err := tls.X509KeyPair(p.adminCertPEM, p.adminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
}

// readyz asks the API server's /readyz as the admin.
func readyz(t testing.TB, p *pki) func(ports []int) error {
	t.Helper()
	client := adminClient(t, p)
	return func(ports []int) error {
		resp, err := client.Get("https://127.0.0.1:" + strconv.Itoa(ports[0]) + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Kubectl runs the kubectl built beside the server against it.
func (s *Server) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := s.TryKubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// GetJSON reads objects with kubectl get (args name them) as JSON into
// into.
func (s *Server) GetJSON(t testing.TB, into any, args ...string) {
	t.Helper()
	out := s.Kubectl(t, append(append([]string{"get"}, args...), "-o", "json")...)
	if err := json.Unmarshal([]byte(out), into); err != nil {
		t.Fatalf("kubectl get %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ApplyCRDs applies every file of the given directories server-side (some
// CRDs are too large for client-side apply) and waits until all are
// established.
func (s *Server) ApplyCRDs(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		s.Kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", p)
	}
	// kubectl wait fails at once ("accessor error") on a CRD that has no
	// status conditions yet, as a large one just applied may not: retry.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := s.TryKubectl("wait", "--for", "condition=Established", "crd", "--all", "--timeout", "60s")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRDs not established in 2 minutes: %v\n%s", err, out)
		}
		time.Sleep(time.Second)
	}
}

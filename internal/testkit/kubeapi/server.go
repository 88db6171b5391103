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
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
// pods, and the binder of claims to static volumes.
var schedulingControllers = []string{"node-lifecycle-controller", "serviceaccount-controller", "root-ca-certificate-publisher-controller", "deployment-controller",
	"replicaset-controller", "job-controller", "cronjob-controller", "daemonset-controller", "persistentvolume-binder-controller"}

// Server is a running API server.
type Server struct {
	URL        string
	Kubeconfig string // file
	dir        string
	kubectl    string
	gate       *inputsGate
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
func Start(t testing.TB) *Server {
	t.Helper()
	return startServer(t, apiControllers)
}

// Option changes what a simulated cluster does.
type Option func(*options)

type options struct{ inputs bool }

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
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	kwokBin := os.Getenv(KwokBinEnv)
	if kwokBin == "" {
		pulumitest.Missing(t, "a simulated cluster needs %s: run `make test`, which builds kwok once", KwokBinEnv)
	}
	s := startServer(t, append(append([]string{}, apiControllers...), schedulingControllers...))
	kubeBin := os.Getenv(KubeBinEnv)
	start(t, s.dir, "kube-scheduler", filepath.Join(kubeBin, "kube-scheduler"),
		"--kubeconfig", s.Kubeconfig, "--authentication-kubeconfig", s.Kubeconfig, "--authorization-kubeconfig", s.Kubeconfig,
		"--secure-port", "0", "--leader-elect=false")
	stages := filepath.Join(kwokBin, "stages.yaml")
	if o.inputs {
		stages = gatedStages(t, stages, s.dir)
		s.startInputsGate(t)
	}
	start(t, s.dir, "kwok", filepath.Join(kwokBin, "kwok"),
		"--kubeconfig", s.Kubeconfig, "--manage-all-nodes=true", "--server-address", "127.0.0.1:0",
		"--config", stages)
	return s
}

// Create writes objects with kubectl create (a Node keeps the capacity in
// its status that way, which apply would drop).
func (s *Server) Create(t testing.TB, objs ...map[string]any) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "objects.yaml")
	pulumitest.WriteManifests(t, f, objs)
	s.Kubectl(t, "create", "-f", f)
}

// TryCreate is Create for objects the server may refuse: kubectl's output
// (the server's message) and whether it failed.
func (s *Server) TryCreate(t testing.TB, objs ...map[string]any) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "objects.yaml")
	pulumitest.WriteManifests(t, f, objs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, s.kubectl, "--kubeconfig", s.Kubeconfig, "create", "-f", f).CombinedOutput()
	return string(out), err
}

// Log is the log of one of the cluster's processes (for failure messages).
func (s *Server) Log(t testing.TB, name string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	return tail(string(b), 4000)
}

func startServer(t testing.TB, controllers []string) *Server {
	t.Helper()
	kubeBin, etcdBin := os.Getenv(KubeBinEnv), os.Getenv(EtcdBinEnv)
	if kubeBin == "" || etcdBin == "" {
		pulumitest.Missing(t, "a real API server needs %s and %s: run `make test`, which builds kube-apiserver and etcd once", KubeBinEnv, EtcdBinEnv)
	}
	reapStale()
	dir := t.TempDir()
	p, err := newPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	etcdClient, etcdPeer, apiPort := freePort(t), freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	start(t, dir, "etcd", filepath.Join(etcdBin, "etcd"),
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", "http://127.0.0.1:"+strconv.Itoa(etcdPeer),
		"--initial-advertise-peer-urls", "http://127.0.0.1:"+strconv.Itoa(etcdPeer),
		"--initial-cluster", "default=http://127.0.0.1:"+strconv.Itoa(etcdPeer),
		"--unsafe-no-fsync", "--log-level", "warn")
	start(t, dir, "kube-apiserver", filepath.Join(kubeBin, "kube-apiserver"),
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(apiPort),
		"--tls-cert-file", p.serverCert, "--tls-private-key-file", p.serverKey,
		"--client-ca-file", p.caCert,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", p.saPub, "--service-account-signing-key-file", p.saKey,
		"--api-audiences", "https://kubernetes.default.svc",
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--authorization-mode", "RBAC",
		"--allow-privileged=true",
		// required with a loopback advertise address
		"--endpoint-reconciler-type", "none")

	s := &Server{URL: "https://127.0.0.1:" + strconv.Itoa(apiPort), dir: dir, kubectl: filepath.Join(kubeBin, "kubectl")}
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
	s.waitReady(t, p)
	start(t, dir, "kube-controller-manager", filepath.Join(kubeBin, "kube-controller-manager"),
		"--kubeconfig", s.Kubeconfig, "--authentication-kubeconfig", s.Kubeconfig, "--authorization-kubeconfig", s.Kubeconfig,
		"--controllers", strings.Join(controllers, ","),
		"--service-account-private-key-file", p.saKey, "--root-ca-file", p.caCert,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freePort(t)),
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
	startEnv(t, s.dir, name, bin, []string{"KUBECONFIG=" + s.Kubeconfig}, args...)
}

// StartProcess runs bin in its own process group, its output in
// dir/<name>.log, stopped at cleanup and, should the test binary die
// first, by the next Start (another emulator a test needs, say).
func StartProcess(t testing.TB, dir, name, bin string, env []string, args ...string) {
	t.Helper()
	reapStale()
	startEnv(t, dir, name, bin, env, args...)
}

// FreePort is a free loopback port.
func FreePort(t testing.TB) int { return freePort(t) }

// start runs a process in its own process group and stops it at cleanup.
func start(t testing.TB, dir, name, bin string, args ...string) {
	t.Helper()
	startEnv(t, dir, name, bin, nil, args...)
}

func startEnv(t testing.TB, dir, name, bin string, env []string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	pid := cmd.Process.Pid
	pidFile := savePid(t, name, pid, bin)
	t.Cleanup(func() {
		defer os.Remove(pidFile)
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		log.Close()
	})
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) waitReady(t testing.TB, p *pki) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	cert, err := tls.X509KeyPair(p.adminCertPEM, p.adminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(s.dir, "kube-apiserver.log"))
	t.Fatalf("kube-apiserver not ready within 60s; log tail:\n%s", tail(string(b), 3000))
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.kubectl, append([]string{"--kubeconfig", s.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
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
		out, err := exec.Command(s.kubectl, "--kubeconfig", s.Kubeconfig, "wait", "--for", "condition=Established", "crd", "--all", "--timeout", "60s").CombinedOutput()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRDs not established in 2 minutes: %v\n%s", err, out)
		}
		time.Sleep(time.Second)
	}
}

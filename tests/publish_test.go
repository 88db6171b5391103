package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gitHost is a git host as the publish step meets one: smart HTTP over
// TLS (git's own git-http-backend), a repository that demands the token
// as the password of any user, and a record of what each request
// authenticated with.
type gitHost struct {
	root, caFile, hostport string
	mu                     sync.Mutex
	authed, refused        int
}

const publishToken = "ghp_publishTOKEN0123456789abcdefghijkl"

func startGitHost(t *testing.T, host string) *gitHost {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("no git here: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	g := &gitHost{root: t.TempDir()}
	cgiHandler := &cgi.Handler{Path: backend, Root: "/", Env: []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=publisher"}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != publishToken {
			g.mu.Lock()
			g.refused++
			g.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		g.mu.Lock()
		g.authed++
		g.mu.Unlock()
		cgiHandler.ServeHTTP(w, r)
	}))
	cert, ca := selfSigned(t, host)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	g.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(g.caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	g.hostport = host + ":" + strings.TrimPrefix(srv.URL, "https://127.0.0.1:")
	return g
}

func selfSigned(t *testing.T, host string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return pair, certPEM
}

// repo makes a bare repository at path with one commit on main.
func (g *gitHost) repo(t *testing.T, path string) string {
	t.Helper()
	work := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main", work}, {"-C", work, "commit", "-q", "--allow-empty", "-m", "platform"},
		{"clone", "-q", "--bare", work, filepath.Join(g.root, path)}} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return filepath.Join(g.root, path)
}

// publish runs .ci/publish-render.sh for a stack whose gitops block names
// repoURL, with a stand-in stackctl (the stack's gitops target and a
// render of one file) and gh (which records the pull request), on a
// runner whose git trusts the host's certificate and finds the host at
// 127.0.0.1 (git's own config, through the environment).
func publish(t *testing.T, g *gitHost, repoURL, gitopsHosts string) (out string, err error, temp string) {
	t.Helper()
	bin, temp, render := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "rendered")
	stackctl := fmt.Sprintf(`#!/bin/sh
case "$1" in
gitops) printf "GITOPS_REPO='%%s'\nGITOPS_REVISION=main\nGITOPS_PATH=clusters/acme/gpu\nGITOPS_RENDER_DIR='%%s'\n" '%s' '%s' ;;
render) mkdir -p '%s/workload' && echo "kind: Namespace" > '%s/workload/a.yaml' ;;
esac
`, repoURL, render, render, render)
	gh := "#!/bin/sh\necho \"$@\" >> " + filepath.Join(temp, "gh-calls") + "\n"
	for name, body := range map[string]string{"stackctl": stackctl, "gh": gh} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	host, _, _ := strings.Cut(g.hostport, ":")
	cmd := exec.Command("bash", filepath.Join("..", ".ci", "publish-render.sh"), "acme")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STACKCTL="+filepath.Join(bin, "stackctl"),
		"GH_TOKEN="+publishToken, "GITOPS_HOSTS="+gitopsHosts, "RUNNER_TEMP="+temp, "HOME="+temp, "GIT_TRACE=1",
		"GITHUB_SHA=0123456789abcdef0123", "GITHUB_REPOSITORY=natron/gpu-node-pools", "GITHUB_SERVER_URL=https://github.com", "GITHUB_RUN_ID=7",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_SSL_CAINFO="+g.caFile,
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.curloptResolve", "GIT_CONFIG_VALUE_0="+host+":"+strings.TrimPrefix(g.hostport, host+":")+":127.0.0.1")
	b, err := cmd.CombinedOutput()
	return string(b), err, temp
}

// The publish step pushes the render with the platform token and the
// token goes nowhere else: not in a URL, an argument (git's own trace of
// every command it runs), the clone's .git/config or the output; and it
// goes to no host the fleet does not allow, whatever the stack file says.
func TestPublishKeepsTheTokenOutOfURLs(t *testing.T) {
	t.Parallel()
	const host = "git.natron-cloud.example"
	g := startGitHost(t, host)
	bare := g.repo(t, "platform/acme-cluster.git")
	url := "https://" + g.hostport + "/platform/acme-cluster.git"

	out, err, temp := publish(t, g, url, host)
	if err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	if branches, err := exec.Command("git", "-C", bare, "branch", "--list", "gpu-node-pools/*").Output(); err != nil || !strings.Contains(string(branches), "gpu-node-pools/acme-0123456789ab") {
		t.Errorf("the render's branch is not in the platform repository: %q %v\n%s", branches, err, out)
	}
	g.mu.Lock()
	authed := g.authed
	g.mu.Unlock()
	if authed < 2 { // the clone and the push
		t.Errorf("the host saw the token on %d requests, want the clone's and the push's", authed)
	}
	if strings.Contains(out, publishToken) {
		t.Errorf("the token is in the publish step's output (git's trace of its commands):\n%s", out)
	}
	if cfg, err := os.ReadFile(filepath.Join(temp, "platform-acme", ".git", "config")); err != nil || strings.Contains(string(cfg), publishToken) {
		t.Errorf("the clone's .git/config holds the token (or cannot be read: %v):\n%s", err, cfg)
	}
	if calls, _ := os.ReadFile(filepath.Join(temp, "gh-calls")); !strings.Contains(string(calls), "pr create --repo "+host+"/platform/acme-cluster") {
		t.Errorf("no pull request opened on %s: %q", host, calls)
	}

	// another host than the fleet allows: refused before any git runs
	g.mu.Lock()
	before := g.authed + g.refused
	g.mu.Unlock()
	out, err, _ = publish(t, g, url, "github.com")
	g.mu.Lock()
	after := g.authed + g.refused
	g.mu.Unlock()
	if err == nil || !strings.Contains(out, "is not one of GITOPS_HOSTS") || after != before {
		t.Errorf("a host outside GITOPS_HOSTS: err %v, %d requests reached it\n%s", err, after-before, out)
	}
	// plain http: refused
	if out, err, _ := publish(t, g, "http://"+g.hostport+"/platform/acme-cluster.git", host); err == nil || !strings.Contains(out, "neither https:// nor ssh://") {
		t.Errorf("a plain http repository: err %v\n%s", err, out)
	}
}

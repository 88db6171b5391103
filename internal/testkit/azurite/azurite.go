// Package azurite runs Azurite, Microsoft's Azure Storage emulator, on a
// loopback port for tests: the fleet's azblob:// state backend, reached by
// the real Pulumi engine through the same gocloud.dev driver it uses
// against Azure.
package azurite

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/natron/gpu-node-pools/internal/testkit/proc"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// BinEnv names the bin directory of the cached Azurite install (make test
// sets it from .ci/toolchain/azurite.sh).
const BinEnv = "GPU_NODE_POOLS_AZURITE_BIN"

// Azurite's well-known development account (Azurite's README,
// "Default Storage Account"): public by design, valid only here.
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Server is a running Azurite blob service with one container, the
// fleet's.
type Server struct {
	// Endpoint is the blob service's URL (http://127.0.0.1:<port>/<account>).
	Endpoint  string
	Container string
	// Env is what the Pulumi CLI needs to reach it: the account, its key
	// and the emulator's address, as gocloud.dev's azureblob reads them.
	Env    map[string]string
	Client *azblob.Client
	dir    string
}

// BackendURL is the container as a Pulumi DIY backend URL.
func (s *Server) BackendURL() string { return "azblob://" + s.Container }

// Start starts Azurite on a free loopback port and creates container.
// Without the install it skips, saying how to get it (in CI it fails).
func Start(t testing.TB, container string) *Server {
	t.Helper()
	bin := os.Getenv(BinEnv)
	if bin == "" {
		pulumitest.Missing(t, "the azblob backend tests need Azurite: run `make test`, or export %s=$(.ci/toolchain/azurite.sh | tail -n 1)", BinEnv)
	}
	main, err := filepath.EvalSymlinks(filepath.Join(bin, "azurite-blob"))
	if err != nil {
		t.Fatalf("%s: no azurite-blob: %v", bin, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("Azurite needs Node.js on PATH: %v", err)
	}
	dir := t.TempDir()
	_, ports := proc.Serve(t, proc.Server{Dir: dir, Name: "azurite", Bin: node, Ports: 1,
		Args: func(ports []int) []string {
			return []string{main, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(ports[0]),
				"--location", filepath.Join(dir, "data"), "--silent", "--skipApiVersionCheck", "--disableTelemetry"}
		},
		Ready: proc.Listening, Timeout: 30 * time.Second})
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	s := &Server{Endpoint: "http://" + addr + "/" + Account, Container: container, dir: dir,
		Env: map[string]string{
			"AZURE_STORAGE_ACCOUNT":  Account,
			"AZURE_STORAGE_KEY":      Key,
			"AZURE_STORAGE_DOMAIN":   addr,
			"AZURE_STORAGE_PROTOCOL": "http",
		}}
	cred, err := azblob.NewSharedKeyCredential(Account, Key)
	if err != nil {
		t.Fatal(err)
	}
	if s.Client, err = azblob.NewClientWithSharedKeyCredential(s.Endpoint, cred, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CreateContainer(context.Background(), container, nil); err != nil {
		t.Fatalf("create container %s: %v\n%s", container, err, s.Log())
	}
	return s
}

// Log is the end of Azurite's output.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "azurite.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Blobs lists the container's blob names under prefix.
func (s *Server) Blobs(t testing.TB, prefix string) []string {
	t.Helper()
	var names []string
	pager := s.Client.NewListBlobsFlatPager(s.Container, &azblob.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	return names
}

// Read is one blob's content.
func (s *Server) Read(t testing.TB, name string) []byte {
	t.Helper()
	r, err := s.Client.DownloadStream(context.Background(), s.Container, name, nil)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}

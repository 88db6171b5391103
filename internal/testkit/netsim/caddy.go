package netsim

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile" // the caddyfile adapter
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/headers"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"

	"github.com/natron/gpu-node-pools/internal/testkit/proc"
)

// caddyfileEnv tells a re-executed test binary to be Caddy: Caddy runs
// one configuration per process, and each proxy container has its own
// environment (its keys), so each runs as a process of its own.
const caddyfileEnv = "NETSIM_CADDYFILE"

// Main runs a test package's tests, or, in a process the kit started,
// Caddy (the release the proxy image ships, from its Go module) with the
// Caddyfile the environment names, until it is killed. A package whose
// tests use the kit calls it from TestMain.
func Main(m interface{ Run() int }) {
	if file := os.Getenv(caddyfileEnv); file != "" {
		os.Exit(runCaddy(file))
	}
	os.Exit(m.Run())
}

func runCaddy(file string) int {
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(src, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "caddyfile:", err)
		return 2
	}
	if len(warnings) > 0 {
		fmt.Fprintln(os.Stderr, "caddyfile warnings:", warnings)
		return 2
	}
	if err := caddy.Load(cfg, true); err != nil {
		fmt.Fprintln(os.Stderr, "caddy:", err)
		return 3
	}
	select {}
}

// Adapt is Caddy's own verdict on a Caddyfile: its JSON configuration, or
// its refusal; warnings count as a refusal.
func Adapt(caddyfile string) error {
	_, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil {
		return err
	}
	if len(warnings) > 0 {
		return fmt.Errorf("warnings: %v", warnings)
	}
	return nil
}

var siteAddr = regexp.MustCompile(`(?m)^http://:([0-9]+) \{$`)

// SitePorts are the ports a Caddyfile's sites listen on, every interface.
func SitePorts(caddyfile string) []int {
	var out []int
	for _, m := range siteAddr.FindAllStringSubmatch(caddyfile, -1) {
		p, _ := strconv.Atoi(m[1])
		out = append(out, p)
	}
	return out
}

// process is one running Caddy.
type process struct {
	cmd    *exec.Cmd
	stderr *os.File
}

// startCaddy runs caddyfile with env in a process of its own, its sites
// moved to the given local ports (site port -> local port), and waits
// until every site accepts connections. A port taken between choosing and
// binding it fails the start, which the caller retries on other ports.
func startCaddy(t *testing.T, caddyfile string, sites map[int]int, env []string) (*process, error) {
	t.Helper()
	// a site's address keeps its empty host (a host there would be a
	// Host matcher); every site binds loopback only
	for pod, local := range sites {
		caddyfile = strings.ReplaceAll(caddyfile, fmt.Sprintf("http://:%d {", pod), fmt.Sprintf("http://:%d {", local))
	}
	if !strings.HasPrefix(caddyfile, "{\n") {
		return nil, fmt.Errorf("the Caddyfile has no global options block to bind loopback in")
	}
	caddyfile = "{\n\tdefault_bind 127.0.0.1\n" + strings.TrimPrefix(caddyfile, "{\n")
	dir := t.TempDir()
	file := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(file, []byte(caddyfile), 0o600); err != nil {
		return nil, err
	}
	errFile, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0])
	// the container's environment and nothing else of ours: no key leaks
	// in from the test process
	cmd.Env = append([]string{caddyfileEnv + "=" + file, "HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "XDG_DATA_HOME=" + dir}, env...)
	cmd.Stderr, cmd.Stdout = errFile, errFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, stderr: errFile}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for _, local := range sites {
		for {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), 200*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			select {
			case err := <-exited:
				return nil, fmt.Errorf("caddy exited (%v): %s", err, p.output())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				p.stop()
				return nil, fmt.Errorf("caddy did not listen on %d: %s", local, p.output())
			}
		}
	}
	t.Cleanup(p.stop)
	return p, nil
}

func (p *process) output() string {
	b, _ := os.ReadFile(p.stderr.Name())
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

func (p *process) stop() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	p.stderr.Close()
}

// RunCaddyfile runs a Caddyfile in Caddy, in a process with env, and is
// the local address of each of its sites by the port it names.
func RunCaddyfile(t *testing.T, caddyfile string, env ...string) map[int]string {
	t.Helper()
	addrs, err := runOnFreePorts(t, caddyfile, env)
	if err != nil {
		t.Fatalf("caddy: %v", err)
	}
	return addrs
}

// runOnFreePorts starts Caddy with each site on a free loopback port,
// again on others when one was taken before Caddy bound it, and is each
// site's local address by the port it names.
func runOnFreePorts(t *testing.T, caddyfile string, env []string) (map[int]string, error) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		sites := map[int]int{}
		for _, port := range SitePorts(caddyfile) {
			free, ferr := freePort()
			if ferr != nil {
				return nil, ferr
			}
			sites[port] = free
		}
		if _, err = startCaddy(t, caddyfile, sites, env); err == nil {
			out := map[int]string{}
			for port, local := range sites {
				out[port] = fmt.Sprintf("127.0.0.1:%d", local)
			}
			return out, nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, err
}

// freePort is a loopback port free when asked, below the kernel's
// ephemeral range (proc.Ports).
func freePort() (int, error) {
	p, err := proc.Ports(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

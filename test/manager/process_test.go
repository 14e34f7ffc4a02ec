package manager

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

const (
	// startTimeout bounds how long the manager may take to answer its probes.
	startTimeout = 45 * time.Second
	// stopTimeout bounds how long the manager may take to exit after SIGTERM.
	stopTimeout = 20 * time.Second
	// leaseName is the manager's LeaderElectionID.
	leaseName = "agent-forge-operator.containeroo.ch"
)

// syncBuffer collects the manager's output; the process writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// managerProcess is one running manager binary.
type managerProcess struct {
	cmd         *exec.Cmd
	output      *syncBuffer
	metricsAddr string
	probeAddr   string
	done        chan struct{} // closed when the process has exited
	waitErr     error         // valid after done is closed
}

// startManager runs the binary against env as the operator's ServiceAccount in ns (its leader-election
// namespace), with strict field validation and the given extra flags. Cleanup always ends the process
// (SIGTERM, then SIGKILL by PID) and prints its output when the test failed.
func startManager(t *testing.T, env *testenv.Env, ns string, extraArgs ...string) *managerProcess {
	t.Helper()
	kubeconfig := writeOperatorKubeconfig(t, env, ns)
	p := &managerProcess{
		output:      &syncBuffer{},
		metricsAddr: freeLoopbackAddr(t),
		probeAddr:   freeLoopbackAddr(t),
		done:        make(chan struct{}),
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=" + p.metricsAddr,
		"--health-probe-bind-address=" + p.probeAddr,
		"--field-validation=Strict",
	}, extraArgs...)
	p.cmd = exec.Command(managerBinary, args...)
	p.cmd.Stdout = p.output
	p.cmd.Stderr = p.output
	// KUBECONFIG or in-cluster settings of the test runner must not leak into the manager.
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting the manager: %v", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.running() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(stopTimeout):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("manager output:\n%s", p.output.String())
		}
	})
	return p
}

func (p *managerProcess) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and returns the exit code, failing the test if the process does not exit in time.
func (p *managerProcess) stop(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signalling the manager: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Fatalf("manager did not exit within %s of SIGTERM", stopTimeout)
	}
	var exitErr *exec.ExitError
	if errors.As(p.waitErr, &exitErr) {
		return exitErr.ExitCode()
	}
	if p.waitErr != nil {
		t.Fatalf("waiting for the manager: %v", p.waitErr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// waitForProbes waits until /healthz and /readyz answer 200, failing fast if the process exits.
func (p *managerProcess) waitForProbes(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	// /healthz/reconcilers (the reconcile watchdog) and /readyz/caches (informers synced) are registered in the binary.
	for _, path := range []string{"/healthz", "/healthz/reconcilers", "/readyz", "/readyz/caches"} {
		p.eventually(t, startTimeout, "probe "+path+" answers 200", func() bool {
			code, _, err := get(plainClient, "http://"+p.probeAddr+path, "")
			return err == nil && code == http.StatusOK
		})
	}
	return time.Since(start)
}

// eventually polls cond every 100ms until it holds or timeout passes; the manager exiting fails the test.
func (p *managerProcess) eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if !p.running() {
			t.Fatalf("manager exited (%v) while waiting until %s", p.waitErr, what)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var (
	plainClient = &http.Client{Timeout: 5 * time.Second}
	// tlsClient accepts the manager's self-signed serving certificate; the test checks authorization,
	// not the certificate chain.
	tlsClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed test certificate
	}}
)

// get fetches url with an optional bearer token and returns status and body.
func get(c *http.Client, url, token string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// freeLoopbackAddr reserves a loopback port by binding and releasing it.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// writeOperatorKubeconfig provisions the operator's ServiceAccount in ns with exactly the permissions of
// the shipped CSV (the Role for its leader-election Lease in ns) and writes a kubeconfig with a token for
// it: the binary runs as OLM would run it, never as cluster-admin.
func writeOperatorKubeconfig(t *testing.T, env *testenv.Env, ns string) string {
	t.Helper()
	id, err := env.OperatorIdentity(context.Background(), testenv.IdentityOptions{Namespace: ns})
	if err != nil {
		t.Fatalf("provisioning the operator's ServiceAccount: %v", err)
	}
	path, err := id.WriteKubeconfig(filepath.Join(t.TempDir(), "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// metricsText asserts body is Prometheus text exposition carrying the operator's or controller-runtime's
// metric families.
func assertPrometheusText(t *testing.T, body string) {
	t.Helper()
	if !strings.Contains(body, "# TYPE ") {
		t.Fatalf("metrics body is not Prometheus text:\n%.500s", body)
	}
	if !strings.Contains(body, "agent_forge_") && !strings.Contains(body, "controller_runtime_") {
		t.Fatalf("metrics lack agent_forge_ and controller_runtime_ families:\n%.500s", body)
	}
}

func fmtURL(scheme, addr, path string) string { return fmt.Sprintf("%s://%s%s", scheme, addr, path) }

package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/containeroo/agent-forge-operator/cmd/app"
	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// Bounded waits of the manager's lifecycle.
const (
	managerReadyTimeout = 90 * time.Second
	managerStopTimeout  = 20 * time.Second
)

// BuildManager compiles ./cmd into out (go build, reusing the build cache) and returns out. tags are
// build tags (test/chaos passes "crashpoints": the shipped build has no crash-point seam).
func BuildManager(ctx context.Context, out string, tags ...string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd")...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd: %w\n%s", err, stderr.String())
	}
	return out, nil
}

// ProcessOptions configure StartManagerProcess.
type ProcessOptions struct {
	// Binary is the manager executable (see BuildManager).
	Binary string
	// LogPath receives the manager's stdout and stderr (created/truncated).
	LogPath string
	// KubeconfigPath is where the manager's kubeconfig is written (default: in the harness temp dir).
	KubeconfigPath string
	// ExtraArgs are appended to the standard flags.
	ExtraArgs []string
}

// ManagerProcess is the real manager binary running against the harness.
type ManagerProcess struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
	// PID is the process id.
	PID int
	// Kubeconfig is the kubeconfig the manager uses: its ServiceAccount with the shipped permissions.
	Kubeconfig string
	// MetricsURL is the manager's plain-HTTP /metrics endpoint on loopback.
	MetricsURL string
}

// StartManagerProcess execs the manager binary against the API server (leader election off,
// metrics and probes on free loopback ports), waits until it answers /readyz, and registers its
// stop (SIGTERM by PID, then SIGKILL) with Close.
func (h *Harness) StartManagerProcess(ctx context.Context, o ProcessOptions) (*ManagerProcess, error) {
	kubeconfig := o.KubeconfigPath
	if kubeconfig == "" {
		kubeconfig = filepath.Join(h.tempDir, "manager.kubeconfig")
	}
	id, err := h.OperatorIdentity(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := id.WriteKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	probe, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(o.LogPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.Create(o.LogPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--metrics-bind-address=" + metrics,
		"--metrics-secure=false",
		"--health-probe-bind-address=" + probe,
		"--field-validation=Strict",
	}, o.ExtraArgs...)
	cmd := exec.Command(o.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group: a Ctrl-C in the terminal reaches the harness, which stops the manager in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", o.Binary, err)
	}
	m := &ManagerProcess{cmd: cmd, logPath: o.LogPath, done: make(chan struct{}), PID: cmd.Process.Pid, Kubeconfig: kubeconfig,
		MetricsURL: "http://" + metrics + "/metrics"}
	go func() {
		m.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(m.done)
	}()
	h.onClose(fmt.Sprintf("manager process %d", m.PID), m.Stop)
	if err := m.waitReady(ctx, "http://"+probe+"/readyz"); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *ManagerProcess) waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, managerReadyTimeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-m.done:
			return fmt.Errorf("manager exited before becoming ready (%w); last log lines:\n%s", exitErr(m.waitErr), m.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("manager not ready within %s; last log lines:\n%s", managerReadyTimeout, m.LogTail(20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Exited reports whether the process has ended, and its wait error.
func (m *ManagerProcess) Exited() (bool, error) {
	select {
	case <-m.done:
		return true, m.waitErr
	default:
		return false, nil
	}
}

// exitErr is the process's wait error, or "exit status 0" for a clean exit (a nil wait error).
func exitErr(waitErr error) error {
	if waitErr == nil {
		return errors.New("exit status 0")
	}
	return waitErr
}

// Stop sends SIGTERM to the manager's PID, waits up to 20s, then SIGKILLs it. Safe to call twice.
func (m *ManagerProcess) Stop() error {
	if done, _ := m.Exited(); done {
		return nil
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
		return nil
	case <-time.After(managerStopTimeout):
		_ = m.cmd.Process.Kill()
		<-m.done
		return fmt.Errorf("manager %d ignored SIGTERM for %s; killed", m.PID, managerStopTimeout)
	}
}

// LogTail returns the last n lines of the manager's log.
func (m *ManagerProcess) LogTail(n int) string {
	data, err := os.ReadFile(m.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreeLoopbackAddr returns a 127.0.0.1 address with a port free at the time of the call.
func FreeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// InProcessOptions configure StartManagerInProcess.
type InProcessOptions struct {
	// Controllers are passed to controllers.Setup.
	Controllers controllers.Options
	// WrapConfig may adjust the manager's rest.Config copy (e.g. a counting transport, higher QPS).
	WrapConfig func(*rest.Config)
	// Identity the manager authenticates as (default: OperatorIdentity, the shipped permissions).
	Identity *testenv.Identity
	// LeaderElection takes the Lease in the identity's namespace, as a deployed operator does.
	LeaderElection bool
	// SecureMetricsAddr, when set, serves metrics over HTTPS there with Kubernetes authentication and
	// authorization (TokenReview + SubjectAccessReview), as the shipped Deployment does.
	SecureMetricsAddr string
	// Namespaces restricts the manager's cache (an OperatorGroup-scoped install); empty: all.
	Namespaces []string
	// StopTimeout bounds Stop (default 20s). controller-runtime cannot stop a manager whose informers
	// never synced (it waits for the cache before it handles cancellation): a test that withholds a
	// list/watch grant on purpose sets it short and lets the stuck manager go.
	StopTimeout time.Duration
}

// InProcessManager is the operator's controllers running in this process.
type InProcessManager struct {
	cancel      context.CancelFunc
	done        chan struct{}
	err         error
	stopTimeout time.Duration
	abandoned   atomic.Bool
}

// StartManagerInProcess runs the manager cmd/ runs (cmd/app.New: controllers, cache, client,
// leader election, health checks) on a fresh ctrl.Manager (metrics and probes off)
// until Close. Only one per process: the controllers register process-wide metrics.
func (h *Harness) StartManagerInProcess(o InProcessOptions) (*InProcessManager, error) {
	id := o.Identity
	if id == nil {
		var err error
		if id, err = h.OperatorIdentity(context.Background()); err != nil {
			return nil, err
		}
	}
	cfg := rest.CopyConfig(id.Config)
	if o.WrapConfig != nil {
		o.WrapConfig(cfg)
	}
	metrics := metricsserver.Options{BindAddress: "0"}
	if o.SecureMetricsAddr != "" {
		metrics = metricsserver.Options{BindAddress: o.SecureMetricsAddr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
	}
	// The manager the binary runs (cmd/app, as cmd/ builds it), with probes off and, as a test
	// restarts the operator in this process, controller names allowed again.
	mgr, err := app.New(cfg, app.Options{
		Scheme:                  h.Env.Scheme,
		Metrics:                 metrics,
		HealthProbeBindAddress:  "0",
		LeaderElection:          o.LeaderElection,
		LeaderElectionNamespace: id.Namespace,
		// controller-runtime's short timings: scenarios that restart the operator in this process must
		// not wait OpenShift's 137 s for a Lease a cut-off manager left behind.
		LeaderElectionTimings: app.LeaderElectionTimings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		WatchNamespaces:       o.Namespaces,
		ClusterTLSProfile:     o.SecureMetricsAddr != "", // as the binary serves secure metrics
		Controllers:           o.Controllers,
		SkipNameValidation:    true,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &InProcessManager{cancel: cancel, done: make(chan struct{}), stopTimeout: o.StopTimeout}
	if m.stopTimeout == 0 {
		m.stopTimeout = managerStopTimeout
	}
	go func() {
		defer close(m.done)
		m.err = mgr.Start(ctx)
	}()
	h.onClose("in-process manager", m.Stop)
	return m, nil
}

// Stop cancels the manager and waits (bounded) for it to return.
// A manager that did not stop in time is reported once and then left behind: later calls return nil.
func (m *InProcessManager) Stop() error {
	m.cancel()
	if m.abandoned.Load() {
		return nil
	}
	select {
	case <-m.done:
		if m.err != nil && !errors.Is(m.err, context.Canceled) {
			return m.err
		}
		return nil
	case <-time.After(m.stopTimeout):
		m.abandoned.Store(true)
		return fmt.Errorf("in-process manager did not stop within %s", m.stopTimeout)
	}
}

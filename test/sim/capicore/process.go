package capicore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// Version is the Cluster API release the binary is built from (hack/peers/go.mod).
const Version = "v1.14.2"

// BinaryEnv names a prebuilt capi-core binary (skips hack/peers-build.sh).
const BinaryEnv = "AGENT_FORGE_CAPI_CORE_BINARY"

// readyPrefix starts the line the binary prints on stdout once its caches have synced.
const readyPrefix = "capi-core ready"

const (
	startTimeout = 2 * time.Minute // building (first time) is separate; this bounds the child's startup
	stopGrace    = 10 * time.Second
)

var build struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the capi-core binary: $AGENT_FORGE_CAPI_CORE_BINARY, or the one hack/peers-build.sh
// builds (once per process; the script reuses a finished build at once, a cold build takes ~10 min and
// prints progress on stderr). ctx bounds the build.
func Binary(ctx context.Context) (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		return p, nil
	}
	build.once.Do(func() { build.path, build.err = buildBinary(ctx) })
	return build.path, build.err
}

func buildBinary(ctx context.Context) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("capi-core: %w", err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "peers-build.sh"))
	cmd.Dir = root
	cmd.Stderr = os.Stderr // progress lines of a cold build
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("capi-core: hack/peers-build.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := strings.TrimSpace(lines[len(lines)-1])
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		return "", fmt.Errorf("capi-core: hack/peers-build.sh printed %q, not a binary", bin)
	}
	return bin, nil
}

// Options tune Start.
type Options struct {
	// LogPath receives the process's log (stderr), appended; "" discards it (its tail still goes into
	// start errors).
	LogPath string
	// Namespace restricts the controllers to one namespace; "" watches all.
	Namespace string
	// Concurrency is each controller's worker count (0: the binary's default, 10).
	Concurrency int
	// Verbosity is the log level (klog -v). 0, the default here, logs errors and CAPI's own level-0
	// lines only: at the binary's default (2) a controller suite writes tens of MB of progress lines.
	Verbosity int
}

// Process is a running capi-core child.
type Process struct {
	cmd     *exec.Cmd
	stdin   io.Closer
	exited  chan struct{} // closed once the child is reaped
	waitErr error         // set before exited closes
	tail    *tailBuffer
	logFile *os.File
	dir     string // holds the kubeconfig

	stopOnce sync.Once
	stopErr  error
}

// Start writes a kubeconfig for cfg, execs the binary (Binary) and waits, bounded, for its readiness line.
// ctx bounds the build and the startup only. The child dies with its parent: Pdeathsig on Linux, and
// everywhere it exits when its stdin (a pipe from us) closes. Stop ends it.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Process, error) {
	bin, err := Binary(ctx)
	if err != nil {
		return nil, err
	}
	kc, err := Kubeconfig(cfg)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "capi-core-")
	if err != nil {
		return nil, err
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	args := []string{"--kubeconfig=" + kcPath, "--metrics-bind-address=0", "--health-addr=0", "-v=" + strconv.Itoa(opts.Verbosity)}
	if opts.Namespace != "" {
		args = append(args, "--namespace="+opts.Namespace)
	}
	if opts.Concurrency > 0 {
		args = append(args, "--concurrency="+strconv.Itoa(opts.Concurrency))
	}
	p := &Process{exited: make(chan struct{}), tail: &tailBuffer{max: 64 << 10}, dir: dir}
	var stderr io.Writer = p.tail
	if opts.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(opts.LogPath), 0o755); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		f, err := os.OpenFile(opts.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		p.logFile = f
		stderr = io.MultiWriter(f, p.tail)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = sysProcAttr()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		p.cleanup()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		p.cleanup()
		return nil, err
	}
	p.cmd, p.stdin = cmd, stdin

	// Pdeathsig fires when the thread that forked the child exits, so fork from a locked thread that
	// lives exactly as long as the child: this goroutine starts it, then reaps it.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(p.exited)
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		p.cleanup()
		return nil, fmt.Errorf("capi-core: start %s: %w", bin, err)
	}

	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() { // drain stdout so the child never blocks on a full pipe
			if !sent && strings.HasPrefix(sc.Text(), readyPrefix) {
				close(ready)
				sent = true
			}
		}
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return p, nil
	case <-p.exited:
		err = fmt.Errorf("capi-core: exited before it was ready: %w", exitErr(p.waitErr))
	case <-timer.C:
		err = fmt.Errorf("capi-core: no ready line within %s", startTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = p.Stop()
	return nil, fmt.Errorf("%w\ncapi-core stderr (tail):\n%s", err, p.tail.String())
}

// PID is the child's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop ends the child by its PID: SIGTERM, and SIGKILL if it has not exited within 10 s; it returns once
// the child is reaped. Idempotent. The error says the child had already exited on its own (a crash
// mid-test), with the tail of its log.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			p.stopErr = fmt.Errorf("capi-core (pid %d) had exited on its own: %w\ncapi-core stderr (tail):\n%s",
				p.PID(), exitErr(p.waitErr), p.tail.String())
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(stopGrace):
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
		p.cleanup()
	})
	return p.stopErr
}

func (p *Process) cleanup() {
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
	if p.logFile != nil {
		_ = p.logFile.Close()
	}
	_ = os.RemoveAll(p.dir)
}

// Kubeconfig renders a kubeconfig for cfg: its host, CA, and client certificate (envtest's admin) or
// bearer token, inline data or file paths, as cfg has them. The capi-core process uses it, and so does
// the Secret <cluster>-kubeconfig (key "value") through which CAPI's ClusterCache reaches the "workload
// cluster" (the same API server in tests).
func Kubeconfig(cfg *rest.Config) ([]byte, error) {
	if cfg == nil || cfg.Host == "" {
		return nil, errors.New("capi-core: a rest.Config with a host is required")
	}
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return nil, errors.New("capi-core: exec and auth-provider credentials are not supported")
	}
	server := cfg.Host
	if !strings.Contains(server, "://") {
		scheme := "https://"
		if len(cfg.CAData) == 0 && cfg.CAFile == "" && !cfg.Insecure && len(cfg.CertData) == 0 && cfg.CertFile == "" {
			scheme = "http://"
		}
		server = scheme + server
	}
	if cfg.APIPath != "" && cfg.APIPath != "/api" {
		return nil, fmt.Errorf("capi-core: APIPath %q is not supported", cfg.APIPath)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: cfg.CAData,
		CertificateAuthority:     cfg.CAFile,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos["capi"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientCertificate:     cfg.CertFile,
		ClientKeyData:         cfg.KeyData,
		ClientKey:             cfg.KeyFile,
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateUID:        cfg.Impersonate.UID,
		ImpersonateGroups:     cfg.Impersonate.Groups,
		ImpersonateUserExtra:  cfg.Impersonate.Extra,
	}
	kc.Contexts["capi"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "capi"}
	kc.CurrentContext = "capi"
	return clientcmd.Write(*kc)
}

// tailBuffer keeps the last max bytes written (the child's stderr, for error messages).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append([]byte(nil), t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// exitErr is the child's wait error, or "exit status 0" for a clean exit (a nil wait error).
func exitErr(waitErr error) error {
	if waitErr == nil {
		return errors.New("exit status 0")
	}
	return waitErr
}

//go:build linux

package realolm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/containeroo/agent-forge-operator/test/sim/capicore"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// Version is the OLM release hack/olm pins (hack/olm-build.sh builds it).
const Version = "v0.46.0"

// DirEnv names a prebuilt OLM directory (olm, catalog, crds/), skipping hack/olm-build.sh.
const DirEnv = "AGENT_FORGE_OLM_DIR"

const (
	stopGrace = 10 * time.Second
	logTail   = 16 << 10 // bytes of a child's log shown when a test fails
)

var build struct {
	once sync.Once
	dir  string
	err  error
}

// Dir returns the directory holding the olm and catalog binaries and OLM's CRDs (crds/): $AGENT_FORGE_OLM_DIR,
// or what hack/olm-build.sh builds (once per process; the script reuses a finished build at once, a cold
// build takes minutes and prints progress on stderr). ctx bounds the build.
func Dir(ctx context.Context) (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		return d, nil
	}
	build.once.Do(func() { build.dir, build.err = lastLine(ctx, "hack/olm-build.sh") })
	if build.err != nil {
		return "", build.err
	}
	for _, f := range []string{"olm", "catalog", "crds"} {
		if _, err := os.Stat(filepath.Join(build.dir, f)); err != nil {
			return "", fmt.Errorf("hack/olm-build.sh printed %q, which has no %s: %w", build.dir, f, err)
		}
	}
	return build.dir, nil
}

var opmBuild struct {
	once sync.Once
	path string
	err  error
}

// OPM returns the opm binary the Makefile pins (bin/opm-<version>), building it through make when it is
// missing (make test has built it for bundle-verify).
func OPM(ctx context.Context) (string, error) {
	opmBuild.once.Do(func() {
		// The Makefile is the one place that names opm's version: ask it for the path.
		path, err := lastLine(ctx, "make", "-s", "--no-print-directory", "--eval", "realolm-print-opm: ; @echo $(OPM)", "realolm-print-opm")
		if err != nil {
			opmBuild.err = err
			return
		}
		if _, err := os.Stat(path); err != nil {
			if _, err := lastLine(ctx, "make", "--no-print-directory", path); err != nil {
				opmBuild.err = err
				return
			}
		}
		opmBuild.path = path
	})
	return opmBuild.path, opmBuild.err
}

// lastLine runs a command at the repository root (stderr passed through: a cold build's progress) and
// returns the last line of its stdout.
func lastLine(ctx context.Context, name string, args ...string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	// Variables of a make that runs the tests must not leak into this one.
	cmd.Env = withoutEnv(os.Environ(), "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// Child is a process a test started (an OLM operator, opm serve, the manager). Its output goes to a file
// in the test's temporary directory; the test's cleanup stops it by its PID and, when the test failed,
// logs the tail of that file.
type Child struct {
	Name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error // set before exited closes
	stop    sync.Once
}

// Start execs bin with args and env (nothing of the test's environment is inherited, so no proxy and no
// CI variable reach it) and registers its stop with t.Cleanup. The child dies with the test process too
// (Pdeathsig from a thread that lives as long as the child).
func Start(t testing.TB, name, bin string, args, env []string) *Child {
	t.Helper()
	c := &Child{Name: name, logPath: filepath.Join(t.TempDir(), name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}, env...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := c.cmd.Start(); err != nil {
			started <- err
			close(c.exited)
			return
		}
		started <- nil
		c.waitErr = c.cmd.Wait()
		_ = logFile.Close()
		close(c.exited)
	}()
	if err := <-started; err != nil {
		_ = logFile.Close()
		t.Fatalf("%s: start %s: %v", name, bin, err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("%s (pid %d) log, tail:\n%s", name, c.cmd.Process.Pid, c.Tail())
		}
	})
	return c
}

// Stop ends the child by its PID: SIGTERM, SIGKILL after 10 s; returns once it is reaped. Idempotent.
func (c *Child) Stop() {
	c.stop.Do(func() {
		select {
		case <-c.exited:
			return
		default:
		}
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(stopGrace):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
}

// Exited says whether the child has ended on its own, and how.
func (c *Child) Exited() (bool, error) {
	select {
	case <-c.exited:
		if c.waitErr == nil {
			return true, errors.New("exit status 0")
		}
		return true, c.waitErr
	default:
		return false, nil
	}
}

// Tail is the end of the child's log.
func (c *Child) Tail() string {
	f, err := os.Open(c.logPath)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = f.Close() }()
	if st, err := f.Stat(); err == nil && st.Size() > logTail {
		_, _ = f.Seek(st.Size()-logTail, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// FreePort reserves a loopback port by binding and releasing it.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// WriteKubeconfig writes a kubeconfig for cfg (envtest's admin) into the test's temporary directory.
func WriteKubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	kc, err := capicore.Kubeconfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// StartOLM runs OLM's two operators against the API server of kubeconfig: the olm operator (CSVs,
// OperatorGroups, the install strategy) and the catalog operator (CatalogSources, Subscriptions,
// InstallPlans, with catalogNamespace as its global catalog namespace). OLM's health and metrics server
// listens on :8080 in both, an address no flag changes (pkg/lib/server); the second one only logs the
// bind failure, and the tests use neither. catalogArgs are extra flags of the catalog operator.
func StartOLM(t testing.TB, dir, kubeconfig, catalogNamespace string, catalogArgs ...string) (olm, catalog *Child) {
	t.Helper()
	env := []string{"KUBECONFIG=" + kubeconfig}
	olm = Start(t, "olm-operator", filepath.Join(dir, "olm"), []string{"--writeStatusName=", "--writePackageServerStatusName="}, env)
	catalog = Start(t, "catalog-operator", filepath.Join(dir, "catalog"),
		append([]string{"--kubeconfig=" + kubeconfig, "--namespace=" + catalogNamespace, "--writeStatusName="}, catalogArgs...), env)
	return olm, catalog
}

// ServeCatalog runs `opm serve` for the file-based catalog in dir on a free port and waits (bounded) until
// it accepts connections; it returns the child and its address (127.0.0.1:port). opm listens on ":port"
// (all interfaces: it has no flag for the host); its startup profiling endpoint is off.
func ServeCatalog(t testing.TB, opm, dir string) (*Child, string) {
	t.Helper()
	port := FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := Start(t, "opm-serve", opm, []string{"serve", dir, fmt.Sprintf("--port=%d", port), "--pprof-addr=",
		"--termination-log=" + filepath.Join(t.TempDir(), "termination-log")}, nil)
	deadline := time.Now().Add(time.Minute)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			return c, addr
		}
		if done, why := c.Exited(); done {
			t.Fatalf("opm serve exited (%v) before it listened on %s:\n%s", why, addr, c.Tail())
		}
		if time.Now().After(deadline) {
			t.Fatalf("opm serve did not listen on %s within a minute:\n%s", addr, c.Tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

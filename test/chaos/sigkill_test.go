package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/containeroo/agent-forge-operator/cmd/app"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

// processOperator is the real manager binary (cmd/, built with go build -tags crashpoints) run
// against the harness with AGENT_FORGE_CRASHPOINT_SOCKET set: a kill is SIGKILL by PID while the
// process waits at the announced crash point, then a fresh process.
type processOperator struct {
	h      *harness.Harness
	bin    string
	logDir string
	args   []string // extra flags (the fault proxy's kubeconfig)

	mu  sync.Mutex
	cur *harness.ManagerProcess
	n   int // processes started
	// ready is when the running process answered ready.
	ready time.Time
}

func (o *processOperator) mode() string { return "SIGKILLs of the manager" }

func (o *processOperator) restarts() int { o.mu.Lock(); defer o.mu.Unlock(); return max(o.n-1, 0) }

func (o *processOperator) readySince() time.Time { o.mu.Lock(); defer o.mu.Unlock(); return o.ready }

func (o *processOperator) pid() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur == nil {
		return 0
	}
	return o.cur.PID
}

func (o *processOperator) start(ctx context.Context) error {
	o.mu.Lock()
	o.n++
	logPath := filepath.Join(o.logDir, fmt.Sprintf("manager-%04d.log", o.n))
	o.mu.Unlock()
	m, err := o.h.StartManagerProcess(ctx, harness.ProcessOptions{Binary: o.bin, LogPath: logPath, ExtraArgs: o.args})
	if err != nil {
		return err
	}
	o.mu.Lock()
	o.cur = m
	o.ready = time.Now()
	o.mu.Unlock()
	return nil
}

func (o *processOperator) stop() error {
	o.mu.Lock()
	m := o.cur
	o.mu.Unlock()
	if m == nil {
		return nil
	}
	return m.Stop()
}

// sigkill kills the current process by its PID and waits (bounded) until it is reaped.
func (o *processOperator) sigkill(pid int) error {
	o.mu.Lock()
	m := o.cur
	o.mu.Unlock()
	if m == nil || m.PID != pid {
		return fmt.Errorf("process %d is not the running manager", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 %d: %w", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if done, _ := m.Exited(); done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d still running 10s after SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// crashListener is the campaign's end of the crash-point socket.
type crashListener struct {
	ln   net.Listener
	hook *hook
	op   *processOperator
	ctx  context.Context
	note func(string)
	// stale counts announcements by a process that was no longer the running one (its other workers'
	// last words after the kill); they are not counted as hits.
	mu    sync.Mutex
	stale int
}

func listenCrashPoints(ctx context.Context, path string, k *hook, op *processOperator, note func(string)) (*crashListener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("crash-point socket: %w", err)
	}
	l := &crashListener{ln: ln, hook: k, op: op, ctx: ctx, note: note}
	go l.serve()
	return l, nil
}

func (l *crashListener) close() { _ = l.ln.Close() }

func (l *crashListener) serve() {
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go l.handle(conn)
	}
}

// handle reads one announcement "<pid> <point> <ns>/<name>" and answers "continue", or kills the
// process by its PID while it waits there and starts a fresh one.
func (l *crashListener) handle(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return
	}
	f := strings.Fields(line)
	if len(f) != 3 {
		return
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return
	}
	point := f[1]
	ns, name, _ := strings.Cut(f[2], "/")
	if pid != l.op.pid() {
		l.mu.Lock()
		l.stale++
		l.mu.Unlock()
		return
	}
	if !l.hook.decide(point, types.NamespacedName{Namespace: ns, Name: name}) {
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, _ = conn.Write([]byte("continue\n"))
		return
	}
	start := time.Now()
	err = l.op.sigkill(pid)
	l.hook.done(point, err)
	if err != nil {
		l.note(fmt.Sprintf("kill at %s (%s) FAILED: %v", point, f[2], err))
		return
	}
	if err := l.op.start(l.ctx); err != nil {
		l.note(fmt.Sprintf("SIGKILL of pid %d at %s (%s); restart FAILED: %v", pid, point, f[2], err))
		return
	}
	more := l.hook.rearm()
	l.note(fmt.Sprintf("SIGKILL of pid %d at %s (%s); fresh process %d ready after %s (another kill planned: %t)",
		pid, point, f[2], l.op.pid(), time.Since(start).Round(time.Millisecond), more))
}

// startProcessOperator builds cmd/ into the harness's temp dir, listens on the crash-point socket, sets
// AGENT_FORGE_CRASHPOINT_SOCKET for the manager processes (they inherit this process's environment)
// and starts the first one.
func startProcessOperator(ctx context.Context, t *testing.T, h *harness.Harness, k *hook, note func(string), args []string) *processOperator {
	t.Helper()
	// The seam is compiled only with the crashpoints tag (the shipped binary has none).
	bin, err := harness.BuildManager(ctx, filepath.Join(h.TempDir(), "manager"), "crashpoints")
	if err != nil {
		t.Fatal(err)
	}
	logDir := os.Getenv("CHAOS_LOG_DIR")
	if logDir == "" {
		logDir = filepath.Join(h.TempDir(), "managers")
	}
	op := &processOperator{h: h, bin: bin, logDir: logDir, args: args}
	sock := filepath.Join(h.TempDir(), "crash.sock")
	l, err := listenCrashPoints(ctx, sock, k, op, note)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	t.Setenv(app.CrashPointSocketEnv, sock)
	if err := op.start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.stop() })
	t.Logf("manager binary %s; its logs in %s", bin, logDir)
	return op
}

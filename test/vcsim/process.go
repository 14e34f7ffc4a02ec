package vcsim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// BinaryEnv names a prebuilt hack/vcsim binary for StartProcess (skips the build).
const BinaryEnv = "AGENT_FORGE_VCSIM_BINARY"

const (
	startTimeout = 2 * time.Minute // building (first time) is separate; this bounds the child's startup
	stopGrace    = 10 * time.Second
)

// StartProcess runs the simulator (Start's inventory, the lock-question VM type, fault rules) in its own
// process and returns an Env for it: the operator talks to it over a real socket, and the simulator's
// own data races stay in a process that is not built with -race. The Env's knobs (WrapVM, Service,
// CountVMsNamed, ...) go over a loopback control endpoint; Map, Model and Server are nil.
//
// The binary is hack/vcsim of this module, built once per process with `go build` (no -race; the Go
// build cache makes repeats a link) into bin/vcsim, or taken from $AGENT_FORGE_VCSIM_BINARY. ctx bounds
// the build and the startup only; Close stops the process (SIGTERM, then SIGKILL). The child dies with
// its parent: Pdeathsig on Linux, and everywhere it exits when its stdin (a pipe from us) closes.
func StartProcess(ctx context.Context, opts Options) (*Env, error) {
	bin, err := binary(ctx)
	if err != nil {
		return nil, err
	}
	optJSON, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	p, r, err := startChild(ctx, bin, string(optJSON))
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(r.SDK)
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("vcsim announced SDK %q: %w", r.SDK, err)
	}
	env := &Env{URL: u, Thumbprint: r.Thumbprint, proc: p, callbacks: &callbacks{},
		ctl: &controlClient{base: r.Control, token: r.Token, http: &http.Client{Transport: &http.Transport{Proxy: nil}}}}
	env.Credentials = vsphere.Credentials{Server: u.String(), Username: Username, Password: Password}
	if r.CABundle != "" {
		env.Credentials.CABundle = []byte(r.CABundle)
	}
	return env, nil
}

var build struct {
	once sync.Once
	path string
	err  error
}

// binary returns the hack/vcsim binary: $AGENT_FORGE_VCSIM_BINARY, or built once per process.
func binary(ctx context.Context) (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		return p, nil
	}
	build.once.Do(func() { build.path, build.err = buildBinary(ctx) })
	return build.path, build.err
}

// buildBinary builds hack/vcsim into <module>/bin/vcsim: into a private name first, then renamed over
// it, so test binaries building at the same time never exec a half-written file.
func buildBinary(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil {
		return "", fmt.Errorf("vcsim: locating the module (go env GOMOD = %q): %w", gomod, err)
	}
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("vcsim: locating the module (go env GOMOD = %q): not in a module", gomod)
	}
	root := filepath.Dir(gomod)
	dir := filepath.Join(root, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	final := filepath.Join(dir, "vcsim")
	tmp := fmt.Sprintf("%s.%d.tmp", final, os.Getpid())
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, "./hack/vcsim")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("vcsim: go build ./hack/vcsim: %w\n%s", err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return final, nil
}

// process is a running simulator child.
type process struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{} // closed once the child is reaped
	stderr *tailBuffer

	stopOnce sync.Once
}

// startChild execs the binary and waits (bounded) for its ready line.
func startChild(ctx context.Context, bin, optJSON string) (*process, *ready, error) {
	cmd := exec.Command(bin, "-options", optJSON)
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	p := &process{cmd: cmd, stdin: stdin, exited: make(chan struct{}), stderr: &tailBuffer{max: 64 << 10}}
	cmd.Stderr = p.stderr

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
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, nil, fmt.Errorf("vcsim: start %s: %w", bin, err)
	}

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() { // the child prints little else; drain it so it never blocks on a full pipe
			if line := sc.Text(); !sent && strings.HasPrefix(line, readyPrefix) {
				lines <- strings.TrimPrefix(line, readyPrefix)
				sent = true
			}
		}
		if !sent {
			close(lines)
		}
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var line string
	var ok bool
	select {
	case line, ok = <-lines:
	case <-timer.C:
		err = fmt.Errorf("vcsim: no ready line within %s", startTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil && !ok {
		<-p.exited
		err = fmt.Errorf("vcsim: exited before it was ready: %s", p.cmd.ProcessState)
	}
	var r ready
	if err == nil {
		if jerr := json.Unmarshal([]byte(line), &r); jerr != nil {
			err = fmt.Errorf("vcsim: ready line %q: %w", line, jerr)
		}
	}
	if err != nil {
		p.stop()
		return nil, nil, fmt.Errorf("%w\nvcsim stderr:\n%s", err, p.stderr.String())
	}
	return p, &r, nil
}

// stop ends the child by its PID: SIGTERM, and SIGKILL if it has not exited within stopGrace. It
// returns once the child is reaped.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		_ = p.stdin.Close()
	})
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

// remoteVMByInstanceUUID is VMByInstanceUUID out of process: a snapshot of the VM's identity.
func (e *Env) remoteVMByInstanceUUID(uuid string) *simulator.VirtualMachine {
	var res findResp
	e.ctl.must("vm/find", uuidReq{UUID: uuid}, &res)
	if !res.Found {
		return nil
	}
	return &simulator.VirtualMachine{VirtualMachine: mo.VirtualMachine{
		ManagedEntity: mo.ManagedEntity{ExtensibleManagedObject: mo.ExtensibleManagedObject{
			Self: types.ManagedObjectReference{Type: "VirtualMachine", Value: res.Ref}}, Name: res.Name},
		Config:  &types.VirtualMachineConfigInfo{InstanceUuid: uuid},
		Runtime: types.VirtualMachineRuntimeInfo{PowerState: types.VirtualMachinePowerState(res.PowerState)},
	}}
}

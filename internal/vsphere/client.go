package vsphere

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/pbm"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/session/keepalive"
	"github.com/vmware/govmomi/task"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/redact"
)

// client is one logged-in vCenter session (see SessionCache). It caches inventory lookups per datacenter
// so that a VM lifecycle costs only the calls that change or read the VM itself.
type client struct {
	vim      *vim25.Client
	soap     *soap.Client
	creds    Credentials // kept for re-login; never logged
	log      logr.Logger
	keep     *keepalive.HandlerSOAP
	relogin  *reloginRoundTripper
	sessions *session.Manager
	pollBase time.Duration
	timeouts SessionOptions // the cache's options with defaults: LoginTimeout, CallTimeout, TaskTimeout, ...
	closed   atomic.Bool

	mu        sync.Mutex
	dcs       map[string]*dcCache
	taskTimes map[string]time.Duration // learned task durations by kind, for the first poll

	pbmMu sync.Mutex
	pbm   *pbm.Client // storage policy service, connected lazily

	restMu sync.Mutex
	rest   *rest.Client // logged in lazily, for tags
	tagIDs map[string]string
}

var _ Client = (*client)(nil)

func (c *client) login(ctx context.Context) error {
	if c.closed.Load() {
		// Closed (cache Close) or retired (rotated credentials): holders must Get a new client.
		return NewError(ClassAuth, "Login", "session was closed; get a new client from the session cache")
	}
	err := c.sessions.Login(ctx, url.UserPassword(c.creds.Username, c.creds.Password))
	if err != nil {
		// The error names the fault (InvalidLogin), never the password.
		return classify("Login", err)
	}
	c.log.V(1).Info("logged in to vCenter")
	return nil
}

func (c *client) logout(ctx context.Context) {
	c.closed.Store(true)
	c.restMu.Lock()
	if c.rest != nil {
		_ = c.rest.Logout(ctx)
		c.rest = nil
	}
	c.restMu.Unlock()
	if err := c.sessions.Logout(ctx); err != nil {
		c.log.V(1).Info("vCenter logout failed", "err", redact.Error(err, c.creds.Password))
	}
	c.keep.Stop()
	c.soap.CloseIdleConnections()
}

// bounded returns ctx with the default call deadline when it has none.
func (c *client) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return withDefaultDeadline(ctx, c.timeouts.CallTimeout)
}

// withDefaultDeadline returns ctx with a deadline d from now unless it already has one.
func withDefaultDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// observe counts one VM-level operation by result and returns err classified.
func observe(op string, err error) error {
	err = classify(op, err)
	result := "success"
	if err != nil {
		result = string(ClassOf(err))
	}
	metrics.VsphereVMOperations.WithLabelValues(op, result).Inc()
	return err
}

// pc returns the session's default property collector (no extra objects are created on the server).
func (c *client) pc() *property.Collector { return property.DefaultCollector(c.vim) }

// taskError turns a failed task's fault into an error that classify understands.
func taskError(info *types.TaskInfo) error {
	if info.Error == nil {
		return errors.New("task " + info.Key + " failed without a fault")
	}
	return task.Error{LocalizedMethodFault: info.Error, Description: info.Description}
}

// waitTask polls a task of no particular kind until it ends (see waitTaskOf).
func (c *client) waitTask(ctx context.Context, ref types.ManagedObjectReference) (*types.TaskInfo, error) {
	info, _, err := c.waitTaskReadingVM(ctx, "", ref, nil)
	return info, err
}

// waitTaskOf polls a task until it ends. Polling with single property reads costs fewer round trips than
// a property-collector filter per task (create collector, filter, wait, destroy filter, destroy
// collector). The first poll waits about as long as tasks of this kind took before in this session, so
// a typical task is seen done on the first read; later polls back off up to one second. Only for tasks
// no guest can hold up: callers never wait on a CD-ROM reconfigure (see EjectISO).
func (c *client) waitTaskOf(ctx context.Context, kind string, ref types.ManagedObjectReference) (*types.TaskInfo, error) {
	info, _, err := c.waitTaskReadingVM(ctx, kind, ref, nil)
	return info, err
}

// firstPoll is the learned duration of a task kind (or the base interval).
func (c *client) firstPoll(kind string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.taskTimes[kind]; ok && kind != "" {
		return d
	}
	return c.pollBase
}

// learn averages how long a task kind ran on the server (its own start and complete times).
func (c *client) learn(kind string, info *types.TaskInfo) {
	if kind == "" || info.StartTime == nil || info.CompleteTime == nil {
		return
	}
	took := info.CompleteTime.Sub(*info.StartTime)
	took = min(max(took+took/10+200*time.Microsecond, c.pollBase/5), time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.taskTimes[kind]; ok {
		took = (old + took) / 2
	}
	c.taskTimes[kind] = took
}

// waitTaskReadingVM is waitTaskOf that also reads the VM's vmProps in the same property retrieval: the
// read that sees the task done also returns the VM, saving a round trip. Properties a task changes (power
// state) may be read just before its end; callers derive those from the task's success.
func (c *client) waitTaskReadingVM(ctx context.Context, kind string, ref types.ManagedObjectReference,
	vmRef *types.ManagedObjectReference) (*types.TaskInfo, *mo.VirtualMachine, error) {
	spec := types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: ref}},
		PropSet:   []types.PropertySpec{{Type: "Task", PathSet: []string{"info"}}},
	}
	if vmRef != nil {
		spec.ObjectSet = append(spec.ObjectSet, types.ObjectSpec{Obj: *vmRef})
		spec.PropSet = append(spec.PropSet, types.PropertySpec{Type: "VirtualMachine", PathSet: vmProps})
	}
	// Each poll is one bounded call; the wait as a whole ends by the caller's deadline or TaskTimeout.
	ctx, cancel := withDefaultDeadline(ctx, c.timeouts.TaskTimeout)
	defer cancel()
	delay := c.firstPoll(kind)
	backoff := c.pollBase
	for {
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, nil, ctx.Err()
		case <-timer.C:
		}
		res, err := c.pc().RetrieveProperties(ctx, types.RetrieveProperties{SpecSet: []types.PropertyFilterSpec{spec}})
		if err != nil {
			return nil, nil, err
		}
		var task mo.Task
		var vm *mo.VirtualMachine
		for _, oc := range res.Returnval {
			switch oc.Obj {
			case ref:
				if err := mo.LoadObjectContent([]types.ObjectContent{oc}, &task); err != nil {
					return nil, nil, err
				}
			default:
				vm = new(mo.VirtualMachine)
				if err := mo.LoadObjectContent([]types.ObjectContent{oc}, vm); err != nil {
					return nil, nil, err
				}
			}
		}
		switch task.Info.State {
		case types.TaskInfoStateSuccess:
			c.learn(kind, &task.Info)
			return &task.Info, vm, nil
		case types.TaskInfoStateError:
			return &task.Info, vm, taskError(&task.Info)
		}
		delay, backoff = backoff, min(backoff*2, time.Second)
	}
}

package world

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/vim25"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConditionShape selects how the simulated Agent CAPI provider reports a waiting AgentMachine.
type ConditionShape int

const (
	// ShapeCurrent is the provider on CAPI v1beta2 conditions: AgentReserved=False/NoSuitableAgents,
	// Ready=False with a generic reason, no severity.
	ShapeCurrent ConditionShape = iota
	// ShapeV1Beta1 is the provider on CAPI v1beta1 conditions: AgentReserved=False/NoSuitableAgents
	// and Ready mirroring it, both with severity Warning.
	ShapeV1Beta1
	// ShapeLegacyReady is an old provider: only Ready=False/NoSuitableAgents (severity Warning),
	// no AgentReserved condition.
	ShapeLegacyReady
)

// Options configure a Driver. Only Client is required.
type Options struct {
	// Client talks to the API server (unstructured objects only; any scheme works).
	Client client.Client
	// VSphere is the simulator's SOAP client; nil disables Agent registration and disconnection.
	VSphere *vim25.Client
	// Datacenter holds the VMs to watch; "" means the only datacenter.
	Datacenter string
	// Namespaces limits the world to these namespaces (hub and control-plane); empty means all.
	// Tests sharing one API server give each world its own namespaces.
	Namespaces []string
	// Clock drives delays; defaults to the real clock.
	Clock clock.Clock
	// Logger receives the world's actions; defaults to a discarding logger.
	Logger logr.Logger

	// Shape is the waiting-condition shape written on AgentMachines.
	Shape ConditionShape
	// InfraEnvFor picks the InfraEnv a powered-on VM registers with (its ISO's InfraEnv). Nil means:
	// InfraEnv when set, else the only InfraEnv in scope. Return false to skip the VM.
	InfraEnvFor func(VM) (types.NamespacedName, bool)
	// InfraEnv is the InfraEnv every VM registers with when InfraEnvFor is nil.
	InfraEnv *types.NamespacedName
	// RegisterWithoutISO registers powered-on VMs even without a connected ISO CD-ROM. By default
	// only VMs booting an ISO register (the simulator's stock VMs never do).
	RegisterWithoutISO bool
	// Register decides whether a VM ever registers (false: the host never calls home). Nil: all do.
	Register func(VM) bool
	// RegistrationDelay is how long a VM must be powered on before its Agent appears.
	RegistrationDelay time.Duration
	// ValidationDelay is how long a new Agent reports Validated=Unknown before True.
	ValidationDelay time.Duration
	// InstallDelay is how long after Bound=True the Agent reports Installed=True and its Machine
	// gets a nodeRef.
	InstallDelay time.Duration
	// ReportedHostname is the inventory hostname a new host reports (default "localhost").
	ReportedHostname string
	// ManualMachines stops Step from creating or deleting Machines to follow NodePool replicas
	// (only SetReplicas does): for tests that hand-craft Machines/AgentMachines. Deletions started
	// by anyone are still processed.
	ManualMachines bool
	// BindingDisabled starts the world with the provider's automatic binding off (see SetBinding).
	BindingDisabled bool
	// StaticIP plays static addressing (image regeneration with NMStateConfigs, an IPAM provider); nil: DHCP.
	StaticIP *StaticIPOptions
}

// Driver plays HyperShift/CAPI, the Agent CAPI provider and assisted-service.
// All methods are safe for concurrent use; passes are serialised.
type Driver struct {
	c     client.Client
	vc    *vim25.Client
	opts  Options
	clock clock.Clock
	log   logr.Logger

	mu       sync.Mutex // serialises passes and guards the fields below
	binding  bool
	register func(VM) bool
	// firstSeen is when a VM (by BIOS UUID) was first seen powered on.
	firstSeen map[string]time.Time
	// registered are the VMs (by BIOS UUID) that got an Agent: a host registers once; an installed
	// host whose Agent is deleted does not come back.
	registered map[string]types.NamespacedName
	// registeredAt is when the world created each Agent (drives ValidationDelay).
	registeredAt map[types.NamespacedName]time.Time
	// vms are the powered-on VMs of this pass, by lower-case BIOS UUID (valid when vmsListed).
	vms       map[string]VM
	vmsListed bool
	writes    int
	scope     map[string]struct{}
	// passCache holds lists taken during the current Step, valid while no write happened since
	// (an idle pass lists each kind once).
	passCache map[schemaGVK]cachedList

	// timing is the driver's own pacing (benches attribute plateaus with it); it has its own lock
	// because a pass holds mu for its whole duration.
	timingMu sync.Mutex
	timing   PassTiming
	static   *staticWorld
}

// PassTiming is the world driver's own pacing: its passes are serial, so one slow phase (say, a
// thousand Agents registered one by one) holds every other behaviour until the pass ends.
type PassTiming struct {
	// Passes is how many Steps finished.
	Passes int
	// Phase is the phase running now ("" between passes), since PhaseStart; PassStart is when the
	// running pass began (zero between passes).
	Phase                 string
	PhaseStart, PassStart time.Time
	// LastPass is how long the last finished pass took; LongestPhase and LongestPhaseTook name its
	// slowest phase.
	LastPass         time.Duration
	LongestPhase     string
	LongestPhaseTook time.Duration
	// Errors counts passes that ended with an error; LastError is the latest (phase: error).
	Errors    int
	LastError string
}

// Timing returns the driver's pacing (safe to call while a pass runs).
func (d *Driver) Timing() PassTiming {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	return d.timing
}

func (d *Driver) startPhase(name string, now time.Time) {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	if d.timing.PassStart.IsZero() {
		d.timing.PassStart = now
		d.timing.LongestPhase, d.timing.LongestPhaseTook = "", 0
	}
	d.timing.Phase, d.timing.PhaseStart = name, now
}

func (d *Driver) endPhase(now time.Time, err error) {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	if took := now.Sub(d.timing.PhaseStart); took >= d.timing.LongestPhaseTook {
		d.timing.LongestPhase, d.timing.LongestPhaseTook = d.timing.Phase, took
	}
	if err != nil {
		d.timing.LastError = d.timing.Phase + ": " + err.Error()
	}
}

func (d *Driver) endPass(now time.Time, failed bool) {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	d.timing.Passes++
	d.timing.LastPass = now.Sub(d.timing.PassStart)
	d.timing.Phase, d.timing.PassStart = "", time.Time{}
	if failed {
		d.timing.Errors++
	}
}

type cachedList struct {
	atWrites int
	items    []*unstructuredObj
}

// New returns a Driver. It starts nothing: call Step or Run.
func New(opts Options) (*Driver, error) {
	if opts.Client == nil {
		return nil, errors.New("world: Options.Client is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.ReportedHostname == "" {
		opts.ReportedHostname = "localhost"
	}
	scope := map[string]struct{}{}
	for _, ns := range opts.Namespaces {
		scope[ns] = struct{}{}
	}
	return &Driver{
		scope: scope,
		c:     opts.Client, vc: opts.VSphere, opts: opts, clock: opts.Clock, log: opts.Logger,
		binding:      !opts.BindingDisabled,
		register:     opts.Register,
		firstSeen:    map[string]time.Time{},
		registered:   map[string]types.NamespacedName{},
		registeredAt: map[types.NamespacedName]time.Time{},
		static:       &staticWorld{bySHA: map[string]int{}, bootedWithout: map[string]string{}, reported: map[string]string{}},
	}, nil
}

// SetBinding turns the provider's automatic binding of waiting AgentMachines on or off.
// ReserveAgent works either way.
func (d *Driver) SetBinding(enabled bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.binding = enabled
}

// SetRegistrationFilter replaces Options.Register: VMs for which f returns false never register.
func (d *Driver) SetRegistrationFilter(f func(VM) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.register = f
}

// Writes returns how many API writes the world has made (for "idle" checks and benches).
func (d *Driver) Writes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writes
}

// Step runs one pass of every behaviour, in the order the real systems would react:
// HyperShift renders Machines for NodePool replicas, CAPI/provider process deletions,
// assisted-service registers and updates Agents, the provider binds waiting AgentMachines,
// assisted-service reports installations. It returns the number of API writes made.
func (d *Driver) Step(ctx context.Context) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.passCache = map[schemaGVK]cachedList{}
	defer func() { d.passCache = nil }()
	before := d.writes
	var errs []error
	for _, phase := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"nodepools", d.reconcileNodePools}, // HyperShift + CAPI MachineSet
		{"deletions", d.processDeletions},
		{"ipam", d.allocateAddresses},  // Cluster API IPAM provider
		{"images", d.regenerateImages}, // assisted-service image regeneration (NMStateConfigs)
		{"registration", d.registerAgents},
		{"agent-status", d.updateAgentStatus},
		{"binding", d.bindWaiting},
		{"installation", d.completeInstallations},
	} {
		d.startPhase(phase.name, d.now())
		err := phase.run(ctx)
		if apierrors.IsConflict(err) {
			// Someone else wrote first, as happens between real controllers: re-read next pass.
			d.writes++
			d.endPhase(d.now(), nil)
			continue
		}
		d.endPhase(d.now(), err)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", phase.name, err))
		}
	}
	d.endPass(d.now(), len(errs) > 0)
	return d.writes - before, errors.Join(errs...)
}

// Settle calls Step until a pass makes no write, at most maxSteps times. It returns the number of
// passes run; an error from a pass stops it.
func (d *Driver) Settle(ctx context.Context, maxSteps int) (int, error) {
	for i := 1; i <= maxSteps; i++ {
		n, err := d.Step(ctx)
		if err != nil {
			return i, err
		}
		if n == 0 {
			return i, nil
		}
	}
	return maxSteps, fmt.Errorf("world: still changing after %d steps", maxSteps)
}

// Run calls Step every interval (on the Driver's clock) until ctx is done. Errors are logged, not
// returned: the real systems keep going too. It returns when ctx is done and leaves no goroutine.
func (d *Driver) Run(ctx context.Context, interval time.Duration) {
	for {
		if _, err := d.Step(ctx); err != nil && ctx.Err() == nil {
			d.log.Error(err, "world step failed")
		}
		t := d.clock.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// namespaces returns the namespaces to list in; [""] means all.
func (d *Driver) namespaces() []string {
	if len(d.opts.Namespaces) == 0 {
		return []string{""}
	}
	return d.opts.Namespaces
}

func (d *Driver) inScope(ns string) bool {
	if len(d.opts.Namespaces) == 0 {
		return true
	}
	_, ok := d.scope[ns]
	return ok
}

// list lists objects of a kind in every namespace in scope. With many namespaces one
// cluster-wide list filtered here is far cheaper than a list per namespace.
func (d *Driver) list(ctx context.Context, gvk schemaGVK, opts ...client.ListOption) ([]*unstructuredObj, error) {
	var out []*unstructuredObj
	if len(d.opts.Namespaces) > 4 {
		l := newList(gvk)
		if err := d.c.List(ctx, l, opts...); err != nil {
			return nil, err
		}
		for i := range l.Items {
			if d.inScope(l.Items[i].GetNamespace()) {
				out = append(out, &l.Items[i])
			}
		}
		return out, nil
	}
	for _, ns := range d.namespaces() {
		l := newList(gvk)
		lo := append([]client.ListOption{}, opts...)
		if ns != "" {
			lo = append(lo, client.InNamespace(ns))
		}
		if err := d.c.List(ctx, l, lo...); err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out, nil
}

// listInPass is list, reusing a list of the same kind taken earlier in this Step when nothing
// has been written since. Callers must not modify the returned objects without writing them.
func (d *Driver) listInPass(ctx context.Context, gvk schemaGVK) ([]*unstructuredObj, error) {
	if d.passCache != nil {
		if c, ok := d.passCache[gvk]; ok && c.atWrites == d.writes {
			return c.items, nil
		}
	}
	items, err := d.list(ctx, gvk)
	if err != nil {
		return nil, err
	}
	if d.passCache != nil {
		d.passCache[gvk] = cachedList{atWrites: d.writes, items: items}
	}
	return items, nil
}

func (d *Driver) now() time.Time { return d.clock.Now() }

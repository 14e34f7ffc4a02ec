package world

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/vim25"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure a Driver. Only Client is required.
type Options struct {
	// Client talks to the API server (unstructured objects only; any scheme works).
	Client client.Client
	// Reader serves the world's lists when set: an informer cache, as the real controllers read
	// (it may lag the API server; the world keeps expectations of its own writes, as CAPI's MachineSet
	// controller does). Nil: every list goes to the API server.
	Reader client.Reader
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

	// Kubeconfig reaches this API server: HyperShift's kubeconfig Secrets carry it, so CAPI's ClusterCache
	// reads the hosted cluster's Nodes here. Required once a NodePool is rendered.
	Kubeconfig []byte
	// Provider is the Agent CAPI provider generation the world plays (default: the current one).
	Provider ProviderGeneration
	// UnbindInstalled is what assisted-service does with an installed host whose Agent is unbound.
	UnbindInstalled UnbindOutcome
	// ReclaimDelay is how long a reclaimed host takes to come back unbound (UnbindReclaim).
	ReclaimDelay time.Duration
	// InfraEnvFor narrows which hub a powered-on VM reaches (tests sharing one simulator give each world
	// its VMs): the VM registers with the returned InfraEnv only if the ISO it boots is one of that
	// InfraEnv's images (by content). Return false to skip the VM. Nil: InfraEnv when set, else the
	// InfraEnv in scope whose image the VM boots.
	InfraEnvFor func(VM) (types.NamespacedName, bool)
	// InfraEnv, when InfraEnvFor is nil, is the only InfraEnv VMs register with (again only when they boot
	// one of its images).
	InfraEnv *types.NamespacedName
	// Register decides whether a VM ever registers (false: the host never calls home). Nil: all do.
	Register func(VM) bool
	// RegistrationDelay is how long a VM must be powered on before its Agent appears.
	RegistrationDelay time.Duration
	// ValidationDelay is how long a new Agent reports Validated=Unknown before True.
	ValidationDelay time.Duration
	// InstallDelay is how long after Bound=True the Agent reports Installed=True and its Node registers.
	InstallDelay time.Duration
	// NTPUnreachable says which hosts reach no NTP server (a firewall, no reachable source in the network
	// or the InfraEnv's additionalNTPSources): their agent reports every source unreachable
	// (status.ntpSources) and assisted-service's ntp-synced validation fails for as long as that lasts.
	// Nil: every host syncs.
	NTPUnreachable func(VM) bool
	// ReportedHostname is the inventory hostname a new host reports. Default: what the discovery agent
	// reports for a host whose DHCP gave it no name (its NIC's MAC with dashes, e.g. 00-50-56-aa-bb-cc).
	ReportedHostname string
	// WorkerRequirements and MasterRequirements are the hub's hardware requirements
	// (HW_VALIDATOR_REQUIREMENTS); zero values take the documented defaults (DefaultWorkerRequirements,
	// DefaultMasterRequirements). A spec that wants a failing host raises them or makes a small VM.
	WorkerRequirements, MasterRequirements Requirements
	// ClusterPlatform is the platform of the cluster deployment hosts bind to; the vSphere disk UUID
	// validation runs only on PlatformVSphere, the default (cautious: see the world's docs).
	ClusterPlatform string
	// ManualMachines stops Step from following NodePool replicas into the MachineDeployment (only
	// SetReplicas does), for tests that scale the MachineDeployment themselves.
	ManualMachines bool
	// BindingDisabled starts the world with the provider's automatic binding off (see SetBinding).
	BindingDisabled bool
	// StaticIP plays static addressing (image regeneration with NMStateConfigs, an IPAM provider); nil: DHCP.
	StaticIP *StaticIPOptions

	// Loops makes Run run every behaviour as its own loop (RunLoops), side by side as the real
	// controllers run, instead of one serial pass of all of them.
	Loops bool
	// Workers is how many objects one behaviour works on at once (a controller's
	// MaxConcurrentReconciles; CAPI and the Agent provider default to 10). 0 or 1: one after another,
	// in a stable order.
	Workers int
	// ProviderWorkers overrides Workers for the Agent CAPI provider's binding (upstream registers its
	// AgentMachine controller without options: controller-runtime's one worker). 0: Workers.
	ProviderWorkers int
}

// Driver plays HyperShift/CAPI, the Agent CAPI provider and assisted-service.
// All methods are safe for concurrent use. Each behaviour (a phase of Step) runs under its own lock,
// so it never runs twice at once; Step runs them one after another, RunLoops side by side.
type Driver struct {
	c     client.Client
	vc    *vim25.Client
	opts  Options
	clock clock.Clock
	log   logr.Logger

	// behaviours are the phases of a pass in the order the real systems react, each with its lock.
	behaviours []behaviour

	// writes counts API writes (atomic: workers of several behaviours write at once).
	writes atomic.Int64

	vmReads vmReads // the VMs' last full reads (registerAgents)

	stateMu  sync.Mutex // guards the fields below; never held across an API or SOAP call
	binding  bool
	register func(VM) bool
	// firstSeen is when a VM (by BIOS UUID) was first seen powered on.
	firstSeen map[string]time.Time
	// rebooted holds the registered hosts (by BIOS UUID) seen off or gone since: their next power-on
	// is a boot, at which the agent registers again.
	rebooted map[string]bool
	// bootTimes is each powered-on VM's summary.runtime.bootTime as last seen (by BIOS UUID): a change
	// is a boot the world did not see as off-then-on (a reset).
	bootTimes map[string]time.Time
	// registered are the VMs (by BIOS UUID) that got an Agent: a host registers once; an installed
	// host whose Agent is deleted does not come back.
	registered map[string]types.NamespacedName
	// registeredAt is when the world created each Agent (drives ValidationDelay).
	registeredAt map[types.NamespacedName]time.Time
	// isoSHAs caches the content hash of each ISO file read from a datastore, by datastore path.
	isoSHAs map[string]string
	// images are the discovery images (content SHA-256) each InfraEnv has had, current and earlier.
	images map[types.NamespacedName]map[string]bool
	// foreign records VMs that booted an ISO no InfraEnv in scope generated (VM name -> what it booted).
	foreign map[string]string
	// vms are the powered-on VMs the registration behaviour saw last, by lower-case BIOS UUID
	// (valid when vmsListed).
	vms       map[string]VM
	vmsListed bool
	// renderedOnce are the HyperShift objects written once (hosted cluster infra, templates).
	renderedOnce map[string]bool
	// bootstraps are the bootstrap data Secrets the provider has processed, by namespace/name.
	bootstraps map[string]bootstrap
	// nodesWithProviderID are the Nodes whose providerID the provider has set (name|providerID).
	nodesWithProviderID map[string]bool
	scope               map[string]struct{}
	static              *staticWorld

	// timing is the driver's own pacing (benches attribute plateaus with it).
	timingMu sync.Mutex
	timing   PassTiming
}

// behaviour is one thing a real system does, run under its own lock.
type behaviour struct {
	name string
	run  func(context.Context) error
	mu   *sync.Mutex
}

// New returns a Driver. It starts nothing: call Step, Run or RunLoops.
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
	if opts.WorkerRequirements == (Requirements{}) {
		opts.WorkerRequirements = DefaultWorkerRequirements
	}
	if opts.MasterRequirements == (Requirements{}) {
		opts.MasterRequirements = DefaultMasterRequirements
	}
	if opts.ClusterPlatform == "" {
		opts.ClusterPlatform = PlatformVSphere
	}
	scope := map[string]struct{}{}
	for _, ns := range opts.Namespaces {
		scope[ns] = struct{}{}
	}
	d := &Driver{
		scope: scope,
		c:     opts.Client, vc: opts.VSphere, opts: opts, clock: opts.Clock, log: opts.Logger,
		binding:             !opts.BindingDisabled,
		register:            opts.Register,
		firstSeen:           map[string]time.Time{},
		rebooted:            map[string]bool{},
		bootTimes:           map[string]time.Time{},
		registered:          map[string]types.NamespacedName{},
		registeredAt:        map[types.NamespacedName]time.Time{},
		isoSHAs:             map[string]string{},
		images:              map[types.NamespacedName]map[string]bool{},
		foreign:             map[string]string{},
		renderedOnce:        map[string]bool{},
		bootstraps:          map[string]bootstrap{},
		nodesWithProviderID: map[string]bool{},
		static:              &staticWorld{bySHA: map[string]int{}, bootedWithout: map[string]string{}, reported: map[string]string{}, reportedNICs: map[string]map[string]NICAddresses{}},
	}
	for _, b := range []struct {
		name string
		run  func(context.Context) error
	}{
		{phaseNodePools, d.reconcileNodePools}, // HyperShift (CAPI itself runs as a real process)
		{phaseIPAM, d.allocateAddresses},       // Cluster API IPAM provider
		{phaseImages, d.regenerateImages},      // assisted-service image regeneration (NMStateConfigs)
		{phaseRegistration, d.registerAgents},  // hosts booting the ISO, assisted-service creating Agents
		{phaseAgentStatus, d.updateAgentStatus},
		{phaseBinding, d.reconcileAgentMachines}, // the Agent CAPI provider's AgentMachine controller
		{phaseAgentBinding, d.syncBindings},      // assisted-service binding and unbinding Agents
		{phaseInstallation, d.completeInstallations},
		{phaseNodeProviderID, d.setNodeProviderIDs}, // the provider's NodeProviderID controller
	} {
		d.behaviours = append(d.behaviours, behaviour{name: b.name, run: b.run, mu: &sync.Mutex{}})
	}
	return d, nil
}

// Phase names: the behaviours of a pass, also the loops of RunLoops.
const (
	phaseNodePools      = "nodepools"
	phaseIPAM           = "ipam"
	phaseImages         = "images"
	phaseRegistration   = "registration"
	phaseAgentStatus    = "agent-status"
	phaseBinding        = "binding"
	phaseAgentBinding   = "agent-binding"
	phaseInstallation   = "installation"
	phaseNodeProviderID = "node-provider-id"
)

// lock takes a behaviour's lock (for the public methods that act as that behaviour) and returns
// its unlock.
func (d *Driver) lock(name string) func() {
	for _, b := range d.behaviours {
		if b.name == name {
			b.mu.Lock()
			return b.mu.Unlock
		}
	}
	panic("world: unknown behaviour " + name)
}

// SetBinding turns the provider's automatic binding of waiting AgentMachines on or off.
// ReserveAgent works either way.
func (d *Driver) SetBinding(enabled bool) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	d.binding = enabled
}

func (d *Driver) bindingEnabled() bool {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return d.binding
}

// SetRegistrationFilter replaces Options.Register: VMs for which f returns false never register.
func (d *Driver) SetRegistrationFilter(f func(VM) bool) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	d.register = f
}

// Writes returns how many API writes the world has made (for "idle" checks and benches).
func (d *Driver) Writes() int { return int(d.writes.Load()) }

// wrote counts one API write.
func (d *Driver) wrote() { d.writes.Add(1) }

// Step runs one pass of every behaviour, in the order the real systems would react:
// HyperShift renders MachineDeployments for NodePool replicas, assisted-service registers and updates
// Agents, the provider reserves Agents for waiting AgentMachines (and unbinds them on deletion),
// assisted-service binds and installs, the provider sets Node providerIDs. CAPI's Machine, MachineSet,
// MachineDeployment and Cluster controllers run on their own (a real process). It returns the number of API writes made (by this pass
// and, in loop mode, by the loops meanwhile).
func (d *Driver) Step(ctx context.Context) (int, error) {
	ctx = withPassCache(ctx)
	before := d.writes.Load()
	var errs []error
	for _, b := range d.behaviours {
		d.startPhase(b.name, d.now())
		err := d.runBehaviour(ctx, b)
		d.endPhase(d.now(), err)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.name, err))
		}
	}
	d.endPass(d.now(), len(errs) > 0)
	return int(d.writes.Load() - before), errors.Join(errs...)
}

// runBehaviour runs one behaviour under its lock. A conflict is not an error: someone else wrote
// first, as happens between real controllers, and the next run re-reads (counted as a write so
// Settle does not take the pass for a quiet one).
func (d *Driver) runBehaviour(ctx context.Context, b behaviour) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.run(ctx)
	if apierrors.IsConflict(err) {
		d.wrote()
		return nil
	}
	return err
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

// Run calls Step every interval (on the Driver's clock) until ctx is done, or runs the behaviours
// as independent loops when Options.Loops is set. Errors are logged, not returned: the real systems
// keep going too. It returns when ctx is done and leaves no goroutine.
func (d *Driver) Run(ctx context.Context, interval time.Duration) {
	if d.opts.Loops {
		d.RunLoops(ctx, interval)
		return
	}
	for {
		if _, err := d.Step(ctx); err != nil && ctx.Err() == nil {
			d.log.Error(err, "world step failed")
		}
		if !d.sleep(ctx, interval) {
			return
		}
	}
}

// sleep waits interval on the Driver's clock; false when ctx ended first.
func (d *Driver) sleep(ctx context.Context, interval time.Duration) bool {
	t := d.clock.NewTimer(interval)
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-t.C():
		return true
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

// read gets one object as the real controllers read it: from Options.Reader (an informer cache) when
// set, else from the API server. Only for objects the caller does not write back from the read: a
// cache may lag, and the real controllers' writes after such a read are resourceVersion-checked.
func (d *Driver) read(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	if d.opts.Reader != nil && !liveReads(ctx) {
		return d.opts.Reader.Get(ctx, key, obj)
	}
	return d.c.Get(ctx, key, obj)
}

// list lists objects of a kind in every namespace in scope. With many namespaces one
// cluster-wide list filtered here is far cheaper than a list per namespace.
func (d *Driver) list(ctx context.Context, gvk schemaGVK, opts ...client.ListOption) ([]*unstructuredObj, error) {
	var reader client.Reader = d.c
	if d.opts.Reader != nil && !liveReads(ctx) {
		// A cache's objects are shared: the world copies what it changes (see listInPass).
		reader, opts = d.opts.Reader, append(opts[:len(opts):len(opts)], client.UnsafeDisableDeepCopy)
	}
	var out []*unstructuredObj
	if len(d.opts.Namespaces) > 4 {
		l := newList(gvk)
		if err := reader.List(ctx, l, opts...); err != nil {
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
		if err := reader.List(ctx, l, lo...); err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out, nil
}

type liveReadsKey struct{}

// withLiveReads makes the world's reads under ctx go to the API server even when it has a cache: for
// what a test asks of the world directly (SetReplicas), which acts once on what the test just wrote
// instead of reacting again at the next change as a controller would.
func withLiveReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, liveReadsKey{}, true)
}

func liveReads(ctx context.Context) bool { v, _ := ctx.Value(liveReadsKey{}).(bool); return v }

// passCache holds lists taken during one pass (Step) or one run of a loop, valid while the world
// has written nothing since (an idle pass lists each kind once).
type passCache struct {
	mu    sync.Mutex
	lists map[schemaGVK]cachedList
}

type cachedList struct {
	atWrites int64
	items    []*unstructuredObj
}

type passCacheKey struct{}

func withPassCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, passCacheKey{}, &passCache{lists: map[schemaGVK]cachedList{}})
}

func passCacheFrom(ctx context.Context) *passCache {
	pc, _ := ctx.Value(passCacheKey{}).(*passCache)
	return pc
}

// listInPass is list, reusing a list of the same kind taken earlier in this pass when nothing
// has been written since. The objects may be shared with a cache: callers copy before they change one.
func (d *Driver) listInPass(ctx context.Context, gvk schemaGVK) ([]*unstructuredObj, error) {
	pc := passCacheFrom(ctx)
	if pc != nil {
		pc.mu.Lock()
		c, ok := pc.lists[gvk]
		pc.mu.Unlock()
		if ok && c.atWrites == d.writes.Load() {
			return c.items, nil
		}
	}
	at := d.writes.Load()
	items, err := d.list(ctx, gvk)
	if err != nil {
		return nil, err
	}
	if pc != nil {
		pc.mu.Lock()
		pc.lists[gvk] = cachedList{atWrites: at, items: items}
		pc.mu.Unlock()
	}
	return items, nil
}

func (d *Driver) now() time.Time { return d.clock.Now() }

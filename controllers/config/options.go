package config

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/credentials"
	"github.com/containeroo/agent-forge-operator/internal/liveness"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Options configure the controllers: what the flags set, the services the wiring hands over and the
// test seams, each its own type (their fields are promoted, so r.Opts.Clock reads as before). Zero
// values are production defaults.
type Options struct {
	Settings
	Services
	Hooks
}

// Settings are the values the operator's flags (cmd/) or a test set: namespaces, intervals, windows,
// timeouts and worker counts. Zero values are production defaults (Defaults).
type Settings struct {
	// CredentialsSecretNamespaces are the namespaces whose Secrets a pool in another namespace may name
	// as its credentialsSecretRef (empty: none; a pool's own namespace is always allowed).
	CredentialsSecretNamespaces []string
	// TrustedCABundleFile is the cluster's injected trusted CA bundle (PEM; OpenShift fills the
	// ConfigMap labelled config.openshift.io/inject-trusted-cabundle). It is trusted, with the system
	// roots, for the ISO download and for vCenter, and re-read when it changes. Empty or absent: system
	// roots only.
	TrustedCABundleFile string
	// DebounceIdle and DebounceMax batch bursts of demand: creation waits until demand was stable for
	// DebounceIdle, or DebounceMax after the first change (defaults 1s / 10s; negative disables).
	DebounceIdle, DebounceMax time.Duration
	// OrphanScanInterval is how often a pool lists its VMs in vCenter to find orphans (default 10m).
	OrphanScanInterval time.Duration
	// FailedRetention is how long a VsphereAgent that failed registration is kept as evidence that
	// stops further creation (default 1h).
	FailedRetention time.Duration
	// RegistrationFailureThreshold is how many failed registrations in a row stop creation (default 3).
	RegistrationFailureThreshold int
	// RegistrationBackoff is how long the registration breaker's first trip holds creation, doubled for
	// each further trip in a row, at most RegistrationBackoffMax (defaults 1h and 24h).
	RegistrationBackoff, RegistrationBackoffMax time.Duration
	// CRDPollInterval is how often the manager checks for missing external CRDs (default 30s).
	CRDPollInterval time.Duration
	// PoolWorkers and VMWorkers are the controllers' concurrent reconciles (defaults 4 and 16): vCenter
	// calls take seconds, so VMs are created in parallel.
	PoolWorkers, VMWorkers int
	// VMPassTimeout bounds one VsphereAgent pass's work (vCenter calls, task waits, hub writes) so a
	// call that hangs does not hold a VM worker for good (default 10m); the pass's status is still
	// written, and the retry adopts a VM a cut-off create left behind (by its instance UUID).
	VMPassTimeout time.Duration
	// PoolPassTimeout bounds one pool pass's work (vCenter login and calls, preflight, ISO, creates)
	// so a vCenter that accepts connections and never answers holds a pool worker for that long at
	// most (default 2m); the pass's status is still written, with VSphereReachable=False/VCenterTimeout,
	// and the pool is retried with backoff.
	PoolPassTimeout time.Duration
	// StatusBatchInterval and StatusBatchMax batch pool status writes that only move counters, the VM
	// list or messages: such a change is written once the status stood still for StatusBatchInterval,
	// or StatusBatchMax after the first unwritten change (defaults 2s / 1m; a negative interval
	// disables batching). Conditions changing status or reason are written at once. A steady scale-up
	// moves a pool's counters every few seconds, so its status is written about once per StatusBatchMax.
	StatusBatchInterval, StatusBatchMax time.Duration
	// EventBatchIdle and EventBatchMax batch a pool's batch Events (VMCreated, ISOEjected, CopyFound): one goes out
	// once no VM joined it for EventBatchIdle, at the latest EventBatchMax after its first VM (defaults
	// 10s / 2m; a negative idle writes each line at once). A steady scale-up adds a VM every few seconds
	// to each pool, and shorter windows wrote an Event per pool and reason every window (figures:
	// docs/performance.md, "Two of the three taken"). Kubernetes' own event correlator folds similar
	// Events of an object within 10 minutes.
	EventBatchIdle, EventBatchMax time.Duration
	// AvailableHoldMax is how long a prepared VM's Available write may wait while AgentMachines of its
	// pool wait (the provider is about to bind it, and then Provisioning -> Bound is one write); default
	// 30s; a negative value holds it for StatusBatchInterval only.
	AvailableHoldMax time.Duration
	// VMCheckInterval is how often a VsphereAgent looks its VM up in vCenter (by instance UUID) to see
	// whether someone else deleted, powered off, renamed or moved it (default 2m).
	VMCheckInterval time.Duration
	// SchemaCheckInterval is how often the served VsphereAgent CRD is checked for the ejection recovery
	// fields (default 1m; also checked at start).
	SchemaCheckInterval time.Duration
	// Namespace is the manager's own namespace (where its leader-election Lease lives); a Lease of the
	// same name in any other namespace is another manager's (internal/exclusion).
	Namespace string
	// LeaderElection is true when the manager elects a leader (then its own Lease is marked and its age
	// decides between two installs of this operator).
	LeaderElection bool
	// ManagerCheckInterval is how often the other managers' Leases are read (default 30s).
	ManagerCheckInterval time.Duration
}

// Services are the process-wide clients, clocks and memories the wiring hands both controllers; nil
// fields are made by Defaults.
type Services struct {
	// Clock drives every time-based decision (registration timeout, debounce, ISO checks); tests inject a fake.
	Clock clock.WithTicker
	// Sessions hands out vSphere clients (default: a process-wide session cache).
	Sessions vsphere.Sessions
	// Credentials shares the credentials a pool's pass read with its VM passes for a short time
	// (default: credentials.DefaultMaxAge on Clock; see credentials.Cache).
	Credentials *credentials.Cache
	// NoVMYet passes the VsphereAgents the pool created to the VsphereAgent controller (see poolmemory.NoVMYet).
	NoVMYet *poolmemory.NoVMYet
	// DestroyedHosts passes the VMs a cleanup destroyed before their Agent appeared to the pool, which
	// deletes such an Agent when it shows up late (see poolmemory.LateRegistrationWindow).
	DestroyedHosts *poolmemory.DestroyedHosts
	// Liveness, when set, is told when each pool and VsphereAgent pass starts and ends; the manager's
	// healthz check "reconcilers" fails while a pass runs beyond twice its pass timeout.
	Liveness *liveness.Tracker
	// BatchClock drives write batching on the StatusBatch windows: the pool's status batch, the pools'
	// batch Events (VMCreated, ISOEjected, CopyFound) and the deferred Available phase. Batching is a rate limit on
	// writes, so it runs in real time by default even where Clock is faked (the scenario suite freezes
	// Clock for the registration timeout); the specs of batching inject a fake one.
	BatchClock clock.WithTicker
}

// Hooks are test seams; nil (the shipped binary) disables each.
type Hooks struct {
	// BeforeUnapprove is a test seam called between the fresh read of a surplus Agent and its Unapprove patch.
	BeforeUnapprove func(ctx context.Context, agentNamespace, agentName string)
	// CrashPoint is a test seam called at every crash point (internal/crashpoint: VsphereAgent created,
	// VM create task started, ..., pool status written) with the object the pass works on (the pool or
	// the VsphereAgent); a seam that waits until ctx ends simulates the operator dying there. Nil (the
	// shipped binary) disables it.
	CrashPoint func(ctx context.Context, point string, key types.NamespacedName)
}

// WithCrashPoint returns ctx carrying the crash-point seam bound to key (ctx unchanged without a seam).
func (o *Hooks) WithCrashPoint(ctx context.Context, key types.NamespacedName) context.Context {
	if o.CrashPoint == nil {
		return ctx
	}
	seam := o.CrashPoint
	return crashpoint.With(ctx, func(ctx context.Context, point string) { seam(ctx, point, key) })
}

// Defaults fills in the production default of every zero field.
func (o *Options) Defaults() {
	o.Settings.Defaults()
	o.Services.Defaults(o.TrustedCABundleFile)
}

// Defaults makes every nil service: real clocks, the credentials cache, the pool memories and
// a session cache that trusts trustedCABundleFile with the system roots.
func (o *Services) Defaults(trustedCABundleFile string) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.BatchClock == nil {
		o.BatchClock = clock.RealClock{}
	}
	if o.Credentials == nil {
		o.Credentials = credentials.NewCache(o.Clock, credentials.DefaultMaxAge)
	}
	if o.NoVMYet == nil {
		o.NoVMYet = &poolmemory.NoVMYet{}
	}
	if o.DestroyedHosts == nil {
		o.DestroyedHosts = &poolmemory.DestroyedHosts{}
	}
	if o.Sessions == nil {
		o.Sessions = vsphere.NewSessions(vsphere.SessionOptions{Logger: ctrl.Log.WithName("vsphere"), Clock: o.Clock, ExtraCAFile: trustedCABundleFile})
	}
}

// Defaults fills in the production default of every zero setting.
func (o *Settings) Defaults() {
	if o.DebounceIdle == 0 {
		o.DebounceIdle = time.Second
	}
	if o.DebounceMax == 0 {
		o.DebounceMax = 10 * time.Second
	}
	if o.OrphanScanInterval == 0 {
		o.OrphanScanInterval = 10 * time.Minute
	}
	if o.FailedRetention == 0 {
		o.FailedRetention = time.Hour
	}
	if o.RegistrationFailureThreshold == 0 {
		o.RegistrationFailureThreshold = 3
	}
	if o.RegistrationBackoff == 0 {
		o.RegistrationBackoff = time.Hour
	}
	if o.RegistrationBackoffMax == 0 {
		o.RegistrationBackoffMax = 24 * time.Hour
	}
	if o.PoolWorkers == 0 {
		o.PoolWorkers = 4
	}
	if o.VMWorkers == 0 {
		o.VMWorkers = 16
	}
	if o.VMPassTimeout == 0 {
		o.VMPassTimeout = 10 * time.Minute
	}
	if o.PoolPassTimeout == 0 {
		o.PoolPassTimeout = 2 * time.Minute
	}
	if o.StatusBatchInterval == 0 {
		o.StatusBatchInterval = 2 * time.Second
	}
	if o.StatusBatchMax == 0 {
		o.StatusBatchMax = time.Minute
	}
	if o.EventBatchIdle == 0 {
		o.EventBatchIdle = 10 * time.Second
	}
	if o.EventBatchMax == 0 {
		o.EventBatchMax = 2 * time.Minute
	}
	if o.AvailableHoldMax == 0 {
		o.AvailableHoldMax = 30 * time.Second
	}
	if o.CRDPollInterval == 0 {
		o.CRDPollInterval = 30 * time.Second
	}
	if o.ManagerCheckInterval == 0 {
		o.ManagerCheckInterval = 30 * time.Second
	}
	if o.SchemaCheckInterval == 0 {
		o.SchemaCheckInterval = time.Minute
	}
	if o.VMCheckInterval == 0 {
		o.VMCheckInterval = 2 * time.Minute
	}
}

// ClientOptions makes the manager's client serve unstructured external objects from its cache too
// (controller-runtime reads unstructured objects live by default).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true}}
}

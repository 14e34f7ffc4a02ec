// Package controllers holds the thin reconcilers: one per kind, each delegating decisions to
// internal packages (planner, vsphere, agents) and carrying out the result.
package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// LeaderElectionID names the Lease the manager's replicas compete for (in the operator's namespace).
const LeaderElectionID = "agent-forge-operator.containeroo.ch"

// Options configure the controllers. Zero values are production defaults.
type Options struct {
	// AllowCrossNamespaceSecrets lets a pool read a credentials Secret outside its namespace.
	AllowCrossNamespaceSecrets bool
	// Clock drives every time-based decision (registration timeout, debounce, ISO checks); tests inject a fake.
	Clock clock.WithTicker
	// Sessions hands out vSphere clients (default: a process-wide session cache).
	Sessions vsphere.Sessions
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
	// CRDPollInterval is how often the manager checks for missing external CRDs (default 30s).
	CRDPollInterval time.Duration
	// PoolWorkers and VMWorkers are the controllers' concurrent reconciles (defaults 4 and 16): vCenter
	// calls take seconds, so VMs are created in parallel.
	PoolWorkers, VMWorkers int
	// VMPassTimeout bounds one VsphereAgent pass's work (vCenter calls, task waits, hub writes) so a
	// call that hangs does not hold a VM worker for good (default 10m); the pass's status is still
	// written, and the retry adopts a VM a cut-off create left behind (by its instance UUID).
	VMPassTimeout time.Duration
	// StatusBatchInterval and StatusBatchMax batch pool status writes that only move counters, the VM
	// list or messages: such a change is written once the status stood still for StatusBatchInterval,
	// or StatusBatchMax after the first unwritten change (defaults 2s / 30s; a negative interval
	// disables batching). Conditions changing status or reason are written at once.
	StatusBatchInterval, StatusBatchMax time.Duration
	// BeforeUnapprove is a test seam called between the fresh read of a surplus Agent and its unapprove patch.
	BeforeUnapprove func(ctx context.Context, agentNamespace, agentName string)
	// SchemaCheckInterval is how often the served VsphereAgent CRD is checked for the ejection recovery
	// fields (default 1m; also checked at start).
	SchemaCheckInterval time.Duration
	// CrashPoint is a test seam called at every crash point (internal/crashpoint: VsphereAgent created,
	// VM create task started, ..., pool status written) with the object the pass works on (the pool or
	// the VsphereAgent); a seam that waits until ctx ends simulates the operator dying there. Nil (the
	// shipped binary) disables it.
	CrashPoint func(ctx context.Context, point string, key types.NamespacedName)
}

// withCrashPoint returns ctx carrying the crash-point seam bound to key (ctx unchanged without a seam).
func (o *Options) withCrashPoint(ctx context.Context, key types.NamespacedName) context.Context {
	if o.CrashPoint == nil {
		return ctx
	}
	seam := o.CrashPoint
	return crashpoint.With(ctx, func(ctx context.Context, point string) { seam(ctx, point, key) })
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Sessions == nil {
		o.Sessions = vsphere.NewSessions(vsphere.SessionOptions{Logger: ctrl.Log.WithName("vsphere")})
	}
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
	if o.PoolWorkers == 0 {
		o.PoolWorkers = 4
	}
	if o.VMWorkers == 0 {
		o.VMWorkers = 16
	}
	if o.VMPassTimeout == 0 {
		o.VMPassTimeout = 10 * time.Minute
	}
	if o.StatusBatchInterval == 0 {
		o.StatusBatchInterval = 2 * time.Second
	}
	if o.StatusBatchMax == 0 {
		o.StatusBatchMax = 30 * time.Second
	}
	if o.CRDPollInterval == 0 {
		o.CRDPollInterval = 30 * time.Second
	}
	if o.SchemaCheckInterval == 0 {
		o.SchemaCheckInterval = time.Minute
	}
}

// ClientOptions makes the manager's client serve unstructured external objects from its cache too
// (controller-runtime reads unstructured objects live by default).
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true}}
}

// Setup registers every controller with the manager. When the external CRDs (HyperShift, CAPI, Assisted)
// are not installed yet, the manager still starts: it reports the missing kinds and registers the
// controllers once they appear, instead of crash-looping.
func Setup(mgr ctrl.Manager, opts Options) error {
	opts.defaults()
	if err := metrics.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		opts.Sessions.Close(context.Background())
		return nil
	})); err != nil {
		return err
	}
	missing := missingKinds(mgr.GetRESTMapper())
	if len(missing) == 0 {
		return setupControllers(mgr, opts)
	}
	log := ctrl.Log.WithName("setup")
	log.Error(fmt.Errorf("external CRDs not installed"), "waiting for HyperShift/CAPI/Assisted Installer CRDs before starting controllers", "missing", missing)
	metrics.ExternalCRDsMissing.Set(float64(len(missing)))
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		ticker := opts.Clock.NewTicker(opts.CRDPollInterval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-ticker.C():
			}
			if missing := missingKinds(mgr.GetRESTMapper()); len(missing) > 0 {
				metrics.ExternalCRDsMissing.Set(float64(len(missing)))
				log.Info("external CRDs still missing", "missing", missing)
				continue
			}
			metrics.ExternalCRDsMissing.Set(0)
			log.Info("external CRDs installed; starting controllers")
			return setupControllers(mgr, opts)
		}
	}))
}

// missingKinds lists external kinds the API server serves at none of the versions the operator reads.
func missingKinds(mapper meta.RESTMapper) []string {
	var missing []string
	for _, k := range agents.ExternalGroupKinds {
		served := false
		for _, v := range k.Versions {
			if _, err := mapper.RESTMapping(k.GroupKind, v); err == nil {
				served = true
				break
			}
		}
		if !served {
			missing = append(missing, k.Kind+"."+k.Group)
		}
	}
	return missing
}

func setupControllers(mgr ctrl.Manager, opts Options) error {
	ctx := context.Background()
	machine, err := agents.UseServedMachineVersion(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("reading Machines at the version the hub serves", "version", machine.GroupVersion().String())
	if err := setupIndexes(ctx, mgr); err != nil {
		return err
	}
	poolRecorder := mgr.GetEventRecorderFor("agent-forge-pool") //nolint:staticcheck // events.k8s.io recorder migration tracked in issue #26
	poolEvents := make(chan event.GenericEvent, 4096)
	isoCache, isoRunnable, err := NewISOCache(opts.Clock, poolRecorder, ctrl.Log.WithName("iso"), func(key types.NamespacedName) {
		pool := &afv1.VsphereAgentPool{}
		pool.Namespace, pool.Name = key.Namespace, key.Name
		select { // never block a download goroutine; the pool also polls while a job runs
		case poolEvents <- event.GenericEvent{Object: pool}:
		default:
		}
	}, opts.CrashPoint)
	if err != nil {
		return err
	}
	if err := mgr.Add(isoRunnable); err != nil {
		return err
	}
	guard := &crdGuard{reader: mgr.GetAPIReader(), clock: opts.Clock, interval: opts.SchemaCheckInterval, log: ctrl.Log.WithName("crd-guard")}
	guard.onChange = func() { // every pool's CRDsCurrent condition follows the verdict
		var pools afv1.VsphereAgentPoolList
		if err := mgr.GetAPIReader().List(ctx, &pools); err != nil {
			return
		}
		for i := range pools.Items {
			select {
			case poolEvents <- event.GenericEvent{Object: &pools.Items[i]}:
			default:
			}
		}
	}
	if err := mgr.Add(manager.RunnableFunc(guard.Start)); err != nil {
		return err
	}
	if err := (&PoolReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: poolRecorder, Opts: opts,
		ISO: isoCache, isoEvents: poolEvents, expectations: newExpectations(opts.Clock), Guard: guard}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("pool controller: %w", err)
	}
	vmRecorder := mgr.GetEventRecorderFor("agent-forge-vm") //nolint:staticcheck // events.k8s.io recorder migration tracked in issue #26
	if err := (&VsphereAgentReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: vmRecorder, Opts: opts, Guard: guard}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("vsphereagent controller: %w", err)
	}
	return nil
}

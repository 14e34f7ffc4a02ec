// Package controllers wires the operator's controllers into a manager (Setup): the pool controller
// (package pool), the VsphereAgent controller (package vsphereagent) and what they share (the ISO cache's
// runnable, the CRD guard of package ejection, the field indexes of package watch). The controllers
// themselves live in the subpackages, one responsibility each; this package also holds the scenario
// suite that runs the whole operator against the simulated world.
package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/controllers/ejection"
	"github.com/containeroo/agent-forge-operator/controllers/pool"
	"github.com/containeroo/agent-forge-operator/controllers/vsphereagent"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/exclusion"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/periodic"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
)

// The aliases spare cmd/ and cmd/app an import of controllers/config.
type (
	// Options configure the controllers (see config.Options).
	Options = config.Options
	// Settings are the values from flags (config.Settings).
	Settings = config.Settings
	// Services are what the wiring hands the controllers: clients, clocks, memories (config.Services).
	Services = config.Services
	// Hooks are the test seams (config.Hooks).
	Hooks = config.Hooks
)

// ClientOptions makes the manager's client serve unstructured external objects from its cache too
// (controller-runtime reads unstructured objects live by default).
func ClientOptions() client.Options { return config.ClientOptions() }

// LeaderElectionID names the Lease the manager's replicas compete for (in the operator's namespace).
const LeaderElectionID = "agent-forge-operator.containeroo.ch"

// Setup registers every controller with the manager. When the external CRDs (HyperShift, CAPI, Assisted)
// are not installed yet, the manager still starts: it reports the missing kinds and registers the
// controllers once they appear, instead of crash-looping.
func Setup(mgr ctrl.Manager, opts Options) error {
	opts.Defaults()
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
	// The pools' generic events: ISO downloads, the CRD guard's and the exclusion watcher's verdicts.
	poolEvents := make(chan event.GenericEvent, 4096)
	watcher := &exclusion.Watcher{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Clock: opts.Clock, Interval: opts.ManagerCheckInterval,
		LeaseName: LeaderElectionID, Namespace: opts.Namespace, LeaderElection: opts.LeaderElection, Log: ctrl.Log.WithName("exclusion")}
	watcher.OnChange = func() { requeuePools(mgr.GetClient(), poolEvents) }
	if err := mgr.Add(watcher); err != nil {
		return err
	}
	missing := missingKinds(mgr.GetRESTMapper())
	if len(missing) == 0 {
		return setupControllers(mgr, opts, watcher, poolEvents)
	}
	log := ctrl.Log.WithName("setup")
	log.Error(fmt.Errorf("external CRDs not installed"), "waiting for HyperShift/CAPI/Assisted Installer CRDs before starting controllers", "missing", missing)
	metrics.ExternalCRDsMissing.Set(float64(len(missing)))
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		ctx, installed := context.WithCancel(ctx)
		defer installed()
		var err error
		_ = periodic.Every(ctx, opts.Clock, opts.CRDPollInterval, func(context.Context) {
			if missing := missingKinds(mgr.GetRESTMapper()); len(missing) > 0 {
				metrics.ExternalCRDsMissing.Set(float64(len(missing)))
				log.Info("external CRDs still missing", "missing", missing)
				return
			}
			metrics.ExternalCRDsMissing.Set(0)
			log.Info("external CRDs installed; starting controllers")
			err = setupControllers(mgr, opts, watcher, poolEvents)
			installed()
		})
		return err
	}))
}

// requeuePools sends every pool to the pool controller (a verdict that concerns them all changed). It
// lists from the cache: a pass rereads what it decides on, and the cache spans exactly the watched
// namespaces, where an uncached list without a namespace would need pools readable cluster-wide (a
// MultiNamespace install grants them only in its target namespaces). Before the cache has started it
// lists nothing, and the controllers' first sync sends every pool anyway.
func requeuePools(reader client.Reader, poolEvents chan<- event.GenericEvent) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pools afv1.VsphereAgentPoolList
	if err := reader.List(ctx, &pools); err != nil {
		return // each pool's pass also rechecks on its own
	}
	for i := range pools.Items {
		select {
		case poolEvents <- event.GenericEvent{Object: &pools.Items[i]}:
		default:
		}
	}
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

func setupControllers(mgr ctrl.Manager, opts Options, watcher *exclusion.Watcher, poolEvents chan event.GenericEvent) error {
	ctx := context.Background()
	machine, err := agents.UseServedMachineVersion(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("reading Machines at the version the hub serves", "version", machine.GroupVersion().String())
	if err := watch.SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	// events.k8s.io/v1 recorders; the names are the Events' reportingController.
	poolRecorder := events.NewRecorder(mgr.GetEventRecorder("agent-forge-pool"))
	// CopyFound: one Event per pool and batch naming each copy (the recorder would fold one per copy).
	if err := mgr.Add(poolRecorder.BatchEvents(mgr.GetClient(), "agent-forge-pool", opts.BatchClock, opts.EventBatchIdle, opts.EventBatchMax,
		ctrl.Log.WithName("events"))); err != nil {
		return err
	}
	isoCache, isoRunnable, err := pool.NewISOCache(opts.Clock, opts.TrustedCABundleFile, poolRecorder, ctrl.Log.WithName("iso"), func(key types.NamespacedName) {
		p := &afv1.VsphereAgentPool{}
		p.Namespace, p.Name = key.Namespace, key.Name
		select { // never block a download goroutine; the pool also polls while a job runs
		case poolEvents <- event.GenericEvent{Object: p}:
		default:
		}
	}, opts.CrashPoint)
	if err != nil {
		return err
	}
	if err := mgr.Add(isoRunnable); err != nil {
		return err
	}
	guard := &ejection.Guard{Reader: mgr.GetAPIReader(), Clock: opts.Clock, Interval: opts.SchemaCheckInterval, Log: ctrl.Log.WithName("crd-guard")}
	guard.OnChange = func() { requeuePools(mgr.GetClient(), poolEvents) } // every pool's CRDsCurrent follows the verdict
	if err := mgr.Add(manager.RunnableFunc(guard.Start)); err != nil {
		return err
	}
	// What the process remembers per pool: both controllers register their records, and the pool
	// controller's one Forget drops them all once a pool is gone.
	memory := poolmemory.NewRegistry()
	if err := (&pool.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: poolRecorder, Opts: opts,
		ISO: isoCache, ISOEvents: poolEvents, Guard: guard, Exclusion: watcher, Memory: memory}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("pool controller: %w", err)
	}
	vmRecorder := events.NewRecorder(mgr.GetEventRecorder("agent-forge-vm"))
	// VMCreated and ISOEjected: one Event per pool and batch (the VsphereAgents' conditions keep each VM's).
	if err := mgr.Add(vmRecorder.BatchEvents(mgr.GetClient(), "agent-forge-vm", opts.BatchClock, opts.EventBatchIdle, opts.EventBatchMax,
		ctrl.Log.WithName("events"))); err != nil {
		return err
	}
	if err := (&vsphereagent.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: vmRecorder, Opts: opts, Guard: guard, Exclusion: watcher,
		Memory: memory}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("vsphereagent controller: %w", err)
	}
	return nil
}

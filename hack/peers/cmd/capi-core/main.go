// Command capi-core runs the real Cluster API core controllers (sigs.k8s.io/cluster-api v1.14.2:
// Cluster, Machine, MachineSet, MachineDeployment, with the ClusterCache they need) in one
// controller-runtime manager against a kube-apiserver, for tests and the demo. It is CAPI's own
// core/main.go cut down: no webhooks, no leader election, no conversion, no CRD migrator, no
// ClusterClass/topology, RuntimeSDK, MachinePool, ClusterResourceSet or MachineHealthCheck.
//
// It prints one line, "capi-core ready version=<v>", on stdout once its caches have synced and its
// controllers run; logs go to stderr. It exits on SIGTERM/SIGINT and when its stdin reaches EOF (the
// parent holds a pipe open for as long as it wants us; pass --exit-on-stdin-eof=false to run it by hand).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controllers/remote"
	"sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	"sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/apiwarnings"
	"sigs.k8s.io/cluster-api/util/index"
	"sigs.k8s.io/cluster-api/version"
)

// controllerName is CAPI's: the user agent and informer names read as upstream's.
const controllerName = "cluster-api-controller-manager"

// ReadyPrefix starts the readiness line on stdout.
const ReadyPrefix = "capi-core ready"

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "capi-core: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("capi-core", flag.ContinueOnError)
	klog.InitFlags(fs) // -v and friends; klog writes to stderr
	var (
		kubeconfig  = fs.String("kubeconfig", "", "kubeconfig of the management cluster (required)")
		namespace   = fs.String("namespace", "", "watch only this namespace (empty: all)")
		metricsAddr = fs.String("metrics-bind-address", "0", "metrics endpoint (0 disables it)")
		healthAddr  = fs.String("health-addr", "0", "health probe endpoint (0 disables it)")
		concurrency = fs.Int("concurrency", 0, "workers of every controller (0: each controller's own flag, CAPI's defaults)")
		workers     = controllerWorkers{
			cluster:           fs.Int("cluster-concurrency", 50, "Cluster workers (CAPI's default)"),
			clusterCache:      fs.Int("clustercache-concurrency", 100, "ClusterCache workers (CAPI's default)"),
			machine:           fs.Int("machine-concurrency", 100, "Machine workers (CAPI's default)"),
			machineSet:        fs.Int("machineset-concurrency", 50, "MachineSet workers (CAPI's default)"),
			machineDeployment: fs.Int("machinedeployment-concurrency", 50, "MachineDeployment workers (CAPI's default)"),
		}
		apiQPS         = fs.Float64("kube-api-qps", 100, "client QPS to the API server (CAPI's default)")
		apiBurst       = fs.Int("kube-api-burst", 200, "client burst to the API server (CAPI's default)")
		syncPeriod     = fs.Duration("sync-period", 10*time.Minute, "informer resync period (CAPI's default)")
		connGrace      = fs.Duration("remote-connection-grace-period", 50*time.Second, "see CAPI's flag")
		condGrace      = fs.Duration("remote-conditions-grace-period", 5*time.Minute, "see CAPI's flag (at least 2m)")
		preflight      = fs.Bool("machineset-preflight-checks", true, "run all MachineSet preflight checks (CAPI's default); false runs none")
		exitOnStdinEOF = fs.Bool("exit-on-stdin-eof", true, "exit when stdin reaches EOF (the parent died)")
	)
	if err := fs.Set("v", "2"); err != nil { // CAPI's default log level
		return err
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	if *concurrency < 0 {
		return fmt.Errorf("--concurrency must not be negative, got %d", *concurrency)
	}
	if *concurrency > 0 {
		workers.setAll(*concurrency)
	}
	if err := workers.validate(); err != nil {
		return err
	}
	if *condGrace < 2*time.Minute || *condGrace <= *connGrace {
		return fmt.Errorf("--remote-conditions-grace-period (%s) must be at least 2m and above --remote-connection-grace-period (%s)", *condGrace, *connGrace)
	}
	// MachinePool is on by default upstream; its CRD is not installed here (HyperShift's Agent platform
	// uses MachineDeployments), and with the gate on the Cluster controller watches MachinePools.
	if err := feature.MutableGates.Set("MachinePool=false"); err != nil {
		return err
	}

	ctrl.SetLogger(klog.Background())
	log := ctrl.Log.WithName("setup")
	log.Info("Starting", "version", version.Get().String())

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		storagev1.AddToScheme, clusterv1beta1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}

	restConfig, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", *kubeconfig, err)
	}
	restConfig.QPS = float32(*apiQPS)
	restConfig.Burst = *apiBurst
	restConfig.UserAgent = remote.DefaultClusterAPIUserAgent(controllerName)
	restConfig.WarningHandler = apiwarnings.DefaultHandler(klog.Background().WithName("API Server Warning"))
	if err := version.CheckKubernetesVersion(restConfig, version.MinimumKubernetesVersion); err != nil {
		return err
	}

	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Controller: config.Controller{
			UsePriorityQueue: ptr.To(feature.Gates.Enabled(feature.PriorityQueue)),
			CacheSyncTimeout: 5 * time.Minute,
		},
		Scheme:                 scheme,
		LeaderElection:         false,
		HealthProbeBindAddress: *healthAddr,
		Metrics:                metricsserver.Options{BindAddress: *metricsAddr},
		Cache:                  setup.ManagerCacheOptions(scheme, controllerName, *namespace, *syncPeriod),
		Client:                 setup.ManagerClientOptions(),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if *healthAddr != "0" && *healthAddr != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sigs
		log.Info("Stopping", "signal", s.String())
		cancel()
	}()
	if *exitOnStdinEOF {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			log.Info("Stopping: stdin closed")
			cancel()
		}()
	}

	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("adding indexes: %w", err)
	}
	if err := setupReconcilers(ctx, mgr, workers, *connGrace, *condGrace, *preflight); err != nil {
		return err
	}
	// Start the informers every controller watches before the manager starts, so the manager's cache
	// group waits for them to sync before the readiness runnable runs.
	for _, obj := range []client.Object{&clusterv1.Cluster{}, &clusterv1.Machine{}, &clusterv1.MachineSet{},
		&clusterv1.MachineDeployment{}, &corev1.Secret{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
	}
	if err := mgr.Add(readiness{mgr: mgr}); err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	log.Info("Stopped")
	return nil
}

// readiness prints the ready line once the manager's caches have synced and the controllers have been
// started (without leader election, Elected closes once they are launched; their sources share the
// already-synced informers, and a handler added to a synced informer is replayed every object).
type readiness struct{ mgr ctrl.Manager }

func (readiness) NeedLeaderElection() bool { return false }

func (r readiness) Start(ctx context.Context) error {
	select {
	case <-r.mgr.Elected():
	case <-ctx.Done():
		return nil
	}
	if !r.mgr.GetCache().WaitForCacheSync(ctx) {
		return nil
	}
	fmt.Fprintf(os.Stdout, "%s version=%s\n", ReadyPrefix, version.Get().String())
	return nil
}

// controllerWorkers is each controller's worker count, flag by flag as CAPI's own main.go names them.
type controllerWorkers struct {
	cluster, clusterCache, machine, machineSet, machineDeployment *int
}

func (w controllerWorkers) all() map[string]*int {
	return map[string]*int{"cluster": w.cluster, "clustercache": w.clusterCache, "machine": w.machine,
		"machineset": w.machineSet, "machinedeployment": w.machineDeployment}
}

func (w controllerWorkers) setAll(n int) {
	for _, p := range w.all() {
		*p = n
	}
}

func (w controllerWorkers) validate() error {
	for name, p := range w.all() {
		if *p < 1 {
			return fmt.Errorf("--%s-concurrency must be at least 1, got %d", name, *p)
		}
	}
	return nil
}

func setupReconcilers(ctx context.Context, mgr ctrl.Manager, workers controllerWorkers, connGrace, condGrace time.Duration, preflight bool) error {
	opts := func(n *int) controller.Options { return controller.Options{MaxConcurrentReconciles: *n} }
	secretCachingClient, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return fmt.Errorf("creating the secret caching client: %w", err)
	}
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretCachingClient,
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions(controllerName, 20, 30), // CAPI's clustercache-client-qps/-burst defaults
	}, opts(workers.clusterCache))
	if err != nil {
		return fmt.Errorf("creating the ClusterCache: %w", err)
	}
	if err := (&cluster.Reconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		ClusterCache:                clusterCache,
		RemoteConnectionGracePeriod: connGrace,
	}).SetupWithManager(ctx, mgr, opts(workers.cluster)); err != nil {
		return fmt.Errorf("creating the Cluster controller: %w", err)
	}
	if err := (&machine.Reconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		ClusterCache:                clusterCache,
		RemoteConditionsGracePeriod: condGrace,
	}).SetupWithManager(ctx, mgr, opts(workers.machine)); err != nil {
		return fmt.Errorf("creating the Machine controller: %w", err)
	}
	checks := sets.Set[clusterv1.MachineSetPreflightCheck]{}
	if preflight {
		checks.Insert(clusterv1.MachineSetPreflightCheckAll)
	}
	if err := (&machineset.Reconciler{
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		ClusterCache:    clusterCache,
		PreflightChecks: checks,
	}).SetupWithManager(ctx, mgr, opts(workers.machineSet)); err != nil {
		return fmt.Errorf("creating the MachineSet controller: %w", err)
	}
	if err := (&machinedeployment.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
	}).SetupWithManager(ctx, mgr, opts(workers.machineDeployment)); err != nil {
		return fmt.Errorf("creating the MachineDeployment controller: %w", err)
	}
	return nil
}

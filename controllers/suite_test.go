package controllers_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	gtypes "github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/internal/liveness"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/capicore"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/testenv"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var (
	env              *testenv.Env
	operatorIdentity *testenv.Identity
	k8s              client.Client
	vc               *vcsim.Env
	isoServer        *sim.ISOServer
	vs               vsphere.Client
	sessions         *vsphere.SessionCache
	nsCounter        atomic.Int32
	// capi is Cluster API core running for real (its own process): it turns each scenario's
	// MachineDeployment into Machines and picks which go on scale-down; kubeconfig reaches the API server
	// for it and for the world's hosted-cluster Secrets.
	capi       *capicore.Process
	kubeconfig []byte
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	if setting := os.Getenv(ShardEnv); setting != "" {
		files, seconds, err := shardRecord()
		if err != nil {
			t.Fatal(err)
		}
		focus, err := shardFocus(setting, files, seconds)
		if err != nil {
			t.Fatal(err)
		}
		suiteConfig.FocusFiles = append(suiteConfig.FocusFiles, focus...)
		t.Logf("shard %s: %d of %d spec files", setting, len(focus), len(files))
	}
	RunSpecs(t, "Controllers Suite", suiteConfig, reporterConfig)
}

// The seconds each spec file took, for the shards' deal (shard_test.go); written only when asked.
var _ = ReportAfterSuite("spec file seconds", func(r Report) {
	path := os.Getenv(SpecTimesEnv)
	if path == "" {
		return
	}
	seconds := map[string]float64{}
	for _, s := range r.SpecReports {
		if s.LeafNodeType != gtypes.NodeTypeIt || s.State.Is(gtypes.SpecStateSkipped|gtypes.SpecStatePending) {
			continue
		}
		seconds[filepath.Base(s.LeafNodeLocation.FileName)] += s.RunTime.Seconds()
	}
	Expect(os.WriteFile(path, []byte(formatSpecSeconds(seconds)), 0o600)).To(Succeed())
})

var _ = BeforeSuite(func() {
	// Every manager log line also goes to managerLog, so specs can assert what the manager logged.
	ctrl.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(GinkgoWriter, &managerLog)), zap.UseDevMode(true)))
	var err error
	env, err = testenv.Start(testenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(env.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	// The operator runs as its ServiceAccount with the shipped permissions; the fixtures (k8s) as admin.
	operatorIdentity, err = env.OperatorIdentity(context.Background(), testenv.IdentityOptions{})
	Expect(err).NotTo(HaveOccurred())
	// The simulator runs in its own process (not built with -race), so the operator runs its production
	// VM worker count against it over a real socket; see vcsim.StartProcess.
	vc, err = vcsim.StartProcess(context.Background(), vcsim.Options{})
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err = capicore.Kubeconfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	capi, err = capicore.Start(context.Background(), env.Config, capicore.Options{LogPath: filepath.Join(os.TempDir(), fmt.Sprintf("controllers-capi-core-%d.log", os.Getpid()))})
	Expect(err).NotTo(HaveOccurred())
	isoServer = sim.NewISOServer(sim.ISOServerOptions{Seed: 1, Size: 64 * 1024, Token: "s3cr3t-token"})
	sessions = vsphere.NewSessions(vsphere.SessionOptions{})
	vs, err = sessions.Get(context.Background(), vc.Credentials)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if capi != nil {
		Expect(capi.Stop()).To(Succeed())
	}
	if sessions != nil {
		sessions.Close(context.Background())
	}
	if isoServer != nil {
		isoServer.Close()
	}
	if vc != nil {
		vc.Close()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// operator is one running manager with our controllers.
type operator struct {
	clock  *clocktesting.FakeClock
	cancel context.CancelFunc
	done   chan struct{}
}

type operatorOptions struct {
	beforeUnapprove func(ctx context.Context, ns, name string)
	orphanScan      time.Duration
	// hideAgents, while true, makes the operator's cached reads miss every Agent: a cache that has not
	// seen a registration yet. Its live reads (APIReader) are unaffected.
	hideAgents *atomic.Bool
	// crashPoint and schemaCheckInterval are passed to controllers.Options.
	crashPoint          func(ctx context.Context, point string, key types.NamespacedName)
	schemaCheckInterval time.Duration
	// vmPassTimeout is controllers.Options.VMPassTimeout.
	vmPassTimeout time.Duration
	// poolPassTimeout and liveness are controllers.Options.PoolPassTimeout and Liveness.
	poolPassTimeout time.Duration
	liveness        *liveness.Tracker
	// namespace and managerCheck are controllers.Options.Namespace and ManagerCheckInterval.
	namespace    string
	managerCheck time.Duration
	// batchClock is controllers.Options.BatchClock (nil: real time).
	batchClock clock.WithTicker
	// availableHoldMax is controllers.Options.AvailableHoldMax; 0 here holds Available for the batch
	// interval only: most specs turn the provider's binding off while AgentMachines wait, and a hold up
	// to the production 30 s would only slow them (the spec "API writes per VM" runs the default).
	availableHoldMax time.Duration
}

// laggingCache is the operator's cached client with Agents hidden while hide is set.
type laggingCache struct {
	client.Client
	hide *atomic.Bool
}

func (c laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c.hide.Load() && obj.GetObjectKind().GroupVersionKind().Kind == "Agent" {
		return apierrors.NewNotFound(schema.GroupResource{Group: "agent-install.openshift.io", Resource: "agents"}, key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if u, ok := list.(*unstructured.UnstructuredList); ok && c.hide.Load() && u.GetKind() == "AgentList" {
		u.Items = nil
	}
	return nil
}

// startOperator runs the real controllers in a manager against envtest and the simulator, with a fake
// clock for time-based behaviour (registration timeout).
func startOperator(o operatorOptions) *operator {
	clk := clocktesting.NewFakeClock(time.Now())
	mgr, err := ctrl.NewManager(rest.CopyConfig(operatorIdentity.Config), ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Client:                 controllers.ClientOptions(),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient: func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.New(cfg, opts)
			if err != nil || o.hideAgents == nil {
				return c, err
			}
			return laggingCache{Client: c, hide: o.hideAgents}, nil
		},
	})
	Expect(err).NotTo(HaveOccurred())
	if o.orphanScan == 0 {
		o.orphanScan = time.Hour
	}
	Expect(controllers.Setup(mgr, controllers.Options{
		Settings: controllers.Settings{
			// VMWorkers: the production default (16); the simulator's own races stay in its process.
			DebounceIdle: -1, OrphanScanInterval: o.orphanScan, SchemaCheckInterval: o.schemaCheckInterval,
			VMPassTimeout: o.vmPassTimeout, PoolPassTimeout: o.poolPassTimeout,
			Namespace: o.namespace, ManagerCheckInterval: o.managerCheck,
			AvailableHoldMax: cmp.Or(o.availableHoldMax, -1),
			// The batch windows the specs were written against (production: status 2s / 1m, Events 10s / 2m):
			// the windows are the batcher's and the status batch's unit tests' to vary, and a spec that waits
			// for an Event or a pool counter should not wait two minutes for it.
			StatusBatchMax: 30 * time.Second, EventBatchIdle: 2 * time.Second, EventBatchMax: 30 * time.Second,
		},
		Services: controllers.Services{Clock: clk, Sessions: vsphere.NewSessions(vsphere.SessionOptions{Logger: ctrl.Log.WithName("vsphere")}),
			Liveness: o.liveness, BatchClock: o.batchClock},
		Hooks: controllers.Hooks{BeforeUnapprove: o.beforeUnapprove, CrashPoint: o.crashPoint},
	})).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{clock: clk, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(op.done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return op
}

func (o *operator) stop() {
	o.cancel()
	Eventually(o.done, 90*time.Second).Should(BeClosed())
}

// scenario creates a hub (namespaces, HostedCluster, NodePool, InfraEnv with the ISO URL, Secret).
func newScenario() *world.Scenario { return newScenarioOn(vc) }

// newScenarioOn is newScenario with the credentials Secret naming simulator sim.
func newScenarioOn(sim *vcsim.Env) *world.Scenario {
	GinkgoHelper()
	return newScenarioOf(sim, world.UpgradeTypeReplace)
}

// newScenarioOf is newScenarioOn with the NodePool's spec.management.upgradeType.
func newScenarioOf(sim *vcsim.Env, upgradeType string) *world.Scenario {
	GinkgoHelper()
	n := nsCounter.Add(1)
	u := *sim.URL
	u.User = url.UserPassword(vcsim.Username, vcsim.Password)
	s, err := world.Setup(context.Background(), k8s, world.SetupOptions{
		Namespace: fmt.Sprintf("t%d", n), HostedCluster: "hc", NodePool: "np", InfraEnv: "ie",
		AgentLabels: map[string]string{"example.com/pool": fmt.Sprintf("t%d", n)},
		ISOURL:      isoServer.URL(), VCenter: &u, UpgradeType: upgradeType,
	})
	Expect(err).NotTo(HaveOccurred())
	// The pools' VM folder exists before the operator and the world run (see vcsim.EnsureFolder).
	Expect(sim.EnsureFolder(context.Background(), "agent-forge/"+s.Namespace)).To(Succeed())
	return s
}

// startWorld runs a world driver for the scenario until the test ends.
func startWorld(s *world.Scenario, o world.Options) *world.Driver { return startWorldOn(vc, s, o) }

// startWorldOn is startWorld on simulator sim.
func startWorldOn(sim *vcsim.Env, s *world.Scenario, o world.Options) *world.Driver {
	GinkgoHelper()
	gc, err := sim.Login(context.Background())
	Expect(err).NotTo(HaveOccurred())
	o.Client, o.VSphere, o.Datacenter, o.Kubeconfig = k8s, gc.Client, vcsim.Datacenter, kubeconfig
	o.Namespaces = s.Namespaces()
	if o.InfraEnv == nil && o.InfraEnvFor == nil {
		// One simulator serves every test: only VMs in this scenario's folder (see newPool) register here.
		ie := s.InfraEnv
		o.InfraEnvFor = func(vm world.VM) (types.NamespacedName, bool) { return ie, vm.Folder == s.Namespace }
	}
	d, err := world.New(o)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx, 100*time.Millisecond)
	}()
	DeferCleanup(func() {
		cancel()
		<-done
		_ = gc.Logout(context.Background())
	})
	return d
}

// newPool returns a pool for the scenario on the simulator's inventory.
func newPool(s *world.Scenario, name string) *afv1.VsphereAgentPool {
	labels := map[string]afv1.LabelValue{}
	for k, v := range s.AgentLabels {
		labels[k] = afv1.LabelValue(v)
	}
	return &afv1.VsphereAgentPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name},
		Spec: afv1.VsphereAgentPoolSpec{
			HostedClusterRef:      afv1.HostedClusterReference{Name: s.HostedCluster.Name},
			NodePoolRef:           afv1.NodePoolReference{Name: s.NodePool.Name},
			InfraEnvRef:           afv1.InfraEnvReference{Name: s.InfraEnv.Name},
			ControlPlaneNamespace: s.ControlPlaneNamespace,
			VSphere: afv1.VSphereSpec{
				CredentialsSecretRef: afv1.SecretReference{Name: s.Secret.Name},
				Datacenter:           vcsim.Datacenter, DatastoreCluster: vcsim.Datastore, ISODatastore: vcsim.Datastore,
				ResourcePool: vcsim.ResourcePool, Network: vcsim.Network, Folder: "agent-forge/" + s.Namespace,
			},
			Template: afv1.VMTemplateSpec{NumCPUs: 2, MemoryMiB: 8192, DiskGiB: 100}, // assisted-service's worker minimums (thin disk)
			Agent:    afv1.AgentBindingSpec{Labels: labels},
			// The suite's image server (sim.NewISOServer) is plain HTTP, which a pool must opt in to.
			ISO: afv1.ISOSpec{AllowPlainHTTP: true},
		},
	}
}

func createPool(p *afv1.VsphereAgentPool) *afv1.VsphereAgentPool {
	Expect(k8s.Create(context.Background(), p)).To(Succeed())
	return p
}

func getPool(p *afv1.VsphereAgentPool) *afv1.VsphereAgentPool {
	out := &afv1.VsphereAgentPool{}
	Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(p), out)).To(Succeed())
	return out
}

// poolVMs lists the pool's VMs in the simulator (by our ownership marker).
func poolVMs(p *afv1.VsphereAgentPool) []vsphere.VMInfo {
	GinkgoHelper()
	fresh := getPool(p)
	vms, err := vs.ListPoolVMs(context.Background(), vcsim.Datacenter, string(fresh.UID))
	Expect(err).NotTo(HaveOccurred())
	return vms
}

func vsphereAgents(p *afv1.VsphereAgentPool) []afv1.VsphereAgent {
	GinkgoHelper()
	var list afv1.VsphereAgentList
	Expect(k8s.List(context.Background(), &list, client.InNamespace(p.Namespace), client.MatchingLabels{afv1.LabelPool: p.Name})).To(Succeed())
	return list.Items
}

func phaseCount(p *afv1.VsphereAgentPool, phase afv1.VMPhase) int {
	n := 0
	for _, va := range vsphereAgents(p) {
		if va.Status.VM.Phase == phase {
			n++
		}
	}
	return n
}

func boundAgentsOf(p *afv1.VsphereAgentPool) int {
	GinkgoHelper()
	list := newAgentList()
	Expect(k8s.List(context.Background(), list, client.InNamespace(p.Namespace), client.MatchingLabels{afv1.LabelPool: p.Name})).To(Succeed())
	n := 0
	for _, a := range list.Items {
		if a.GetLabels()["agentMachineRef"] != "" {
			n++
		}
	}
	return n
}

func agentsOf(p *afv1.VsphereAgentPool) int {
	GinkgoHelper()
	list := newAgentList()
	Expect(k8s.List(context.Background(), list, client.InNamespace(p.Namespace), client.MatchingLabels{afv1.LabelPool: p.Name})).To(Succeed())
	return len(list.Items)
}

// startPoolWithISO is startPoolScenario, returning once the pool has cached its discovery ISO (the point
// from which a scale-up creates VMs).
func startPoolWithISO(o operatorOptions, customize func(*afv1.VsphereAgentPool)) (*operator, *world.Scenario, *world.Driver, *afv1.VsphereAgentPool) {
	GinkgoHelper()
	op, s, d, pool := startPoolScenario(o, customize)
	Eventually(func() string { return isoPath(getPool(pool)) }, 90*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())
	return op, s, d, pool
}

// startPoolScenario starts the operator and a world for a new hub scenario and creates the pool
// "workers" (changed by customize, when given); after the spec the pool is deleted, then the operator
// stopped.
func startPoolScenario(o operatorOptions, customize func(*afv1.VsphereAgentPool)) (*operator, *world.Scenario, *world.Driver, *afv1.VsphereAgentPool) {
	GinkgoHelper()
	return startPoolScenarioWith(o, world.Options{}, customize)
}

// startPoolScenarioWith is startPoolScenario with a world of those options.
func startPoolScenarioWith(o operatorOptions, wo world.Options, customize func(*afv1.VsphereAgentPool)) (*operator, *world.Scenario, *world.Driver, *afv1.VsphereAgentPool) {
	GinkgoHelper()
	op := startOperator(o)
	DeferCleanup(op.stop)
	s := newScenario()
	d := startWorld(s, wo)
	p := newPool(s, "workers")
	if customize != nil {
		customize(p)
	}
	pool := createPool(p)
	DeferCleanup(deletePoolAndWait, pool)
	return op, s, d, pool
}

// deletePoolAndWait deletes a pool (tests end clean) and waits for it to go.
func deletePoolAndWait(p *afv1.VsphereAgentPool) {
	ctx := context.Background()
	_ = k8s.Delete(ctx, p)
	Eventually(func() bool {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(p), &afv1.VsphereAgentPool{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}, 60*time.Second, 200*time.Millisecond).Should(BeTrue())
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// pokePool changes an annotation (triggering a reconcile) and returns the resulting resourceVersion.
func pokePool(p *afv1.VsphereAgentPool) string {
	GinkgoHelper()
	fresh := getPool(p)
	patch := client.MergeFrom(fresh.DeepCopy())
	if fresh.Annotations == nil {
		fresh.Annotations = map[string]string{}
	}
	fresh.Annotations["test.agent-forge/poke"] = time.Now().Format(time.RFC3339Nano)
	Expect(k8s.Patch(context.Background(), fresh, patch)).To(Succeed())
	return fresh.ResourceVersion
}

func isoPath(p *afv1.VsphereAgentPool) string {
	if p.Status.ISO == nil {
		return ""
	}
	return p.Status.ISO.Path
}

func conditionReason(p *afv1.VsphereAgentPool, condType string) string {
	for _, c := range p.Status.Conditions {
		if c.Type == condType {
			return c.Reason
		}
	}
	return ""
}

// setPool applies a change to the pool's spec with retries on conflict.
func setPool(p *afv1.VsphereAgentPool, change func(*afv1.VsphereAgentPool)) {
	GinkgoHelper()
	Eventually(func() error {
		fresh := getPool(p)
		change(fresh)
		return k8s.Update(context.Background(), fresh)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

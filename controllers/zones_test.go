package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ktypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// zoneNames are the failure domains of the specs, one per simulated cluster (vcsim.ZoneOf(i)).
var zoneNames = []string{"zone-a", "zone-b", "zone-c"}

// vmPlacement is where the simulator put a VM.
type vmPlacement struct{ Cluster, Datastore, Folder string }

// placementsOf lists the cluster, datastore and folder of every VM in sim whose folder's name starts
// with prefix (a scenario's namespace).
func placementsOf(ctx context.Context, sim *vcsim.Env, prefix string) map[string]vmPlacement {
	GinkgoHelper()
	gc, err := sim.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = gc.Logout(ctx) }()
	v, err := view.NewManager(gc.Client).CreateContainerView(ctx, gc.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = v.Destroy(ctx) }()
	var vms []mo.VirtualMachine
	Expect(v.Retrieve(ctx, []string{"VirtualMachine"}, []string{"name", "resourcePool", "datastore", "parent"}, &vms)).To(Succeed())
	name := func(ref types.ManagedObjectReference) string {
		var e mo.ManagedEntity
		Expect(gc.PropertyCollector().RetrieveOne(ctx, ref, []string{"name"}, &e)).To(Succeed())
		return e.Name
	}
	out := map[string]vmPlacement{}
	for _, vm := range vms {
		if vm.ResourcePool == nil || len(vm.Datastore) == 0 || vm.Parent == nil {
			continue
		}
		folder := name(*vm.Parent)
		if !strings.HasPrefix(folder, prefix) {
			continue
		}
		var rp mo.ResourcePool
		Expect(gc.PropertyCollector().RetrieveOne(ctx, *vm.ResourcePool, []string{"owner"}, &rp)).To(Succeed())
		out[vm.Name] = vmPlacement{Cluster: name(rp.Owner), Datastore: name(vm.Datastore[0]), Folder: folder}
	}
	return out
}

// headroom reads the pool's headroom metric of one domain.
func headroom(p *afv1.VsphereAgentPool, domain string) float64 {
	GinkgoHelper()
	var pb dto.Metric
	Expect(metrics.PoolHeadroom.WithLabelValues(p.Namespace, p.Name, domain).Write(&pb)).To(Succeed())
	return pb.GetGauge().GetValue()
}

// domainCounts counts the pool's VsphereAgents (not deleting) per failure domain.
func domainCounts(p *afv1.VsphereAgentPool) map[string]int {
	out := map[string]int{}
	for _, va := range vsphereAgents(p) {
		if va.DeletionTimestamp.IsZero() {
			out[va.Spec.FailureDomain]++
		}
	}
	return out
}

// eventReasons lists the reasons of the pool's Events.
func eventReasons(ctx context.Context, p *afv1.VsphereAgentPool) []string {
	var out []string
	for _, e := range poolEvents(ctx, p) {
		out = append(out, e.Reason)
	}
	return out
}

func poolCondition(p *afv1.VsphereAgentPool, condType string) (status, reason, message string) {
	for _, c := range getPool(p).Status.Conditions {
		if c.Type == condType {
			return string(c.Status), c.Reason, c.Message
		}
	}
	return "", "", ""
}

var _ = Describe("Failure domains", Ordered, func() {
	var zones *vcsim.Env
	BeforeAll(func(ctx context.Context) {
		var err error
		zones, err = vcsim.StartProcess(ctx, vcsim.Options{Clusters: len(zoneNames)})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(zones.Close)
	})

	// start runs an operator and a world on the 3-cluster simulator and creates a pool with one failure
	// domain per cluster (its own datastore; zone-b also its own folder, so a fault can target it).
	start := func(customize func(*afv1.VsphereAgentPool)) (*operator, *world.Scenario, *world.Driver, *afv1.VsphereAgentPool) {
		GinkgoHelper()
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenarioOn(zones)
		Expect(zones.EnsureFolder(context.Background(), "agent-forge/"+s.Namespace+"/"+s.Namespace+"-b")).To(Succeed())
		ns := s.Namespace
		d := startWorldOn(zones, s, world.Options{InfraEnvFor: func(vm world.VM) (ktypes.NamespacedName, bool) {
			return s.InfraEnv, strings.HasPrefix(vm.Folder, ns)
		}})
		p := newPool(s, "workers")
		for i, name := range zoneNames {
			z := vcsim.ZoneOf(i)
			fd := afv1.FailureDomain{Name: name, Region: "region-1", ComputeCluster: z.Cluster, Datastore: z.Datastore}
			if name == "zone-b" {
				fd.Folder = "agent-forge/" + ns + "/" + ns + "-b"
			}
			p.Spec.VSphere.FailureDomains = append(p.Spec.VSphere.FailureDomains, fd)
		}
		if customize != nil {
			customize(p)
		}
		pool := createPool(p)
		DeferCleanup(deletePoolAndWait, pool)
		Eventually(func() string { return isoPath(getPool(pool)) }, 90*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())
		return op, s, d, pool
	}

	It("spreads a burst of 9 as 3 per domain, each VM in its domain's cluster and datastore, its Agent labelled with the zone", func(ctx context.Context) {
		_, s, d, pool := start(nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 9)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(9))
		Expect(domainCounts(pool)).To(Equal(map[string]int{"zone-a": 3, "zone-b": 3, "zone-c": 3}))

		By("each VM sits in its domain's cluster and datastore")
		placed := placementsOf(ctx, zones, s.Namespace)
		for _, va := range vsphereAgents(pool) {
			i := map[string]int{"zone-a": 0, "zone-b": 1, "zone-c": 2}[va.Spec.FailureDomain]
			Expect(placed).To(HaveKeyWithValue(va.Status.VM.Name, HaveField("Cluster", vcsim.ZoneOf(i).Cluster)), va.Name)
			Expect(placed[va.Status.VM.Name].Datastore).To(Equal(vcsim.ZoneOf(i).Datastore), va.Name)
			Expect(va.Labels).To(HaveKeyWithValue(afv1.LabelFailureDomain, va.Spec.FailureDomain))
		}

		By("each Agent carries the zone and region as labels and as spec.nodeLabels for its node")
		list := newAgentList()
		Expect(k8s.List(ctx, list, client.InNamespace(pool.Namespace), client.MatchingLabels{afv1.LabelPool: pool.Name})).To(Succeed())
		Expect(list.Items).To(HaveLen(9))
		domainOfVA := map[string]string{}
		for _, va := range vsphereAgents(pool) {
			domainOfVA[va.Name] = va.Spec.FailureDomain
		}
		for _, a := range list.Items {
			zone := domainOfVA[a.GetLabels()[afv1.LabelVsphereAgent]]
			Expect(zone).NotTo(BeEmpty())
			Expect(a.GetLabels()).To(HaveKeyWithValue(afv1.LabelTopologyZone, zone))
			Expect(a.GetLabels()).To(HaveKeyWithValue(afv1.LabelTopologyRegion, "region-1"))
			nodeLabels, _, _ := unstructured.NestedStringMap(a.Object, "spec", "nodeLabels")
			Expect(nodeLabels).To(Equal(map[string]string{afv1.LabelTopologyZone: zone, afv1.LabelTopologyRegion: "region-1"}))
		}

		By("status reports every domain")
		Eventually(func(g Gomega) {
			fds := getPool(pool).Status.FailureDomains
			g.Expect(fds).To(HaveLen(3))
			for _, fd := range fds {
				g.Expect(fd.VMs).To(BeEquivalentTo(3), fd.Name)
				g.Expect(fd.Available).To(BeTrue(), fd.Name)
				g.Expect(fd.Headroom).NotTo(BeNil(), fd.Name)
			}
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		st, reason, _ := poolCondition(pool, afv1.ConditionFailureDomainsAvailable)
		Expect([]string{st, reason}).To(Equal([]string{"True", afv1.ReasonAllAvailable}))
	})

	It("runs the placement preflight per failure domain and names the domain", func(_ context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenarioOn(zones)
		p := newPool(s, "workers")
		p.Spec.VSphere.FailureDomains = []afv1.FailureDomain{
			{Name: "zone-a", ComputeCluster: vcsim.ZoneOf(0).Cluster, Datastore: vcsim.ZoneOf(0).Datastore},
			{Name: "zone-c", ComputeCluster: vcsim.ZoneOf(2).Cluster, Datastore: "NoSuchDatastore"},
		}
		pool := createPool(p)
		DeferCleanup(deletePoolAndWait, pool)
		Eventually(func(g Gomega) {
			st, reason, msg := poolCondition(pool, afv1.ConditionPlacementValid)
			g.Expect([]string{st, reason}).To(Equal([]string{"False", afv1.ReasonDatastoreNotFound}))
			g.Expect(msg).To(ContainSubstring("failure domain zone-c: "))
			g.Expect(msg).To(ContainSubstring("NoSuchDatastore"))
			g.Expect(msg).NotTo(ContainSubstring("zone-a"))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(vsphereAgents(pool)).To(BeEmpty())
	})

	It("releases surplus from the most populated domain first", func(ctx context.Context) {
		_, s, d, pool := start(func(p *afv1.VsphereAgentPool) {
			one := int32(1)
			p.Spec.VSphere.FailureDomains[2].MaxVMs = &one // zone-c takes one VM
		})
		d.SetBinding(false) // the Agents stay free: scale-down leaves surplus, not released workers
		Expect(d.SetReplicas(ctx, s.NodePool, 5)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 90*time.Second, 250*time.Millisecond).Should(Equal(5))
		Expect(domainCounts(pool)).To(Equal(map[string]int{"zone-a": 2, "zone-b": 2, "zone-c": 1}), "zone-c stops at its maxVMs")

		By("5 → 3: the two surplus VMs come from zone-a and zone-b, the most populated, not zone-c")
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		Eventually(func() map[string]int { return domainCounts(pool) }, 90*time.Second, 250*time.Millisecond).Should(
			Equal(map[string]int{"zone-a": 1, "zone-b": 1, "zone-c": 1}))
		Eventually(func() int { return len(placementsOf(ctx, zones, s.Namespace)) }, 90*time.Second, 250*time.Millisecond).Should(Equal(3))
	})

	It("creates nothing in a domain whose datastore is full: InsufficientCapacity with the numbers, the others take the demand, retried on a timer", func(ctx context.Context) {
		full := vcsim.ZoneOf(1).Datastore
		Expect(zones.SetDatastoreSpace(full, 1<<40, 10<<30)).To(Succeed()) // 10 GiB free of 1 TiB
		DeferCleanup(func() {
			Expect(zones.SetDatastoreSpace(full, vcsim.DefaultDatastoreBytes, vcsim.DefaultDatastoreBytes)).To(Succeed())
		})
		op, s, d, pool := start(nil)

		By("the condition names the domain with the numbers; an Event says so")
		Eventually(func(g Gomega) {
			st, reason, msg := poolCondition(pool, afv1.ConditionFailureDomainsAvailable)
			g.Expect(st).To(Equal("False"))
			g.Expect(reason).To(Equal(afv1.ReasonInsufficientCapacity))
			g.Expect(msg).To(ContainSubstring("failure domain zone-b: no room for one more VM of 2 vCPU, 8192 MiB"))
			g.Expect(msg).To(ContainSubstring("disk: 8 GiB needed plus 10% of the datastore kept free (" + full + " 10 GiB free of 1024 GiB)"))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() []string { return eventReasons(ctx, pool) }, 90*time.Second, 250*time.Millisecond).Should(ContainElement(afv1.ReasonInsufficientCapacity))
		Expect(headroom(pool, "zone-b")).To(BeZero())
		Expect(headroom(pool, "zone-a")).To(BeNumerically(">", 100))

		By("a burst of 4 goes to the other domains")
		Expect(d.SetReplicas(ctx, s.NodePool, 4)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(4))
		Expect(domainCounts(pool)).To(Equal(map[string]int{"zone-a": 2, "zone-c": 2}))
		for name, pl := range placementsOf(ctx, zones, s.Namespace) {
			Expect(pl.Datastore).NotTo(Equal(full), name)
			Expect(pl.Cluster).NotTo(Equal(vcsim.ZoneOf(1).Cluster), name)
		}

		By("space freed: the next reading, after the capacity timer, makes the domain available again")
		Expect(zones.SetDatastoreSpace(full, vcsim.DefaultDatastoreBytes, vcsim.DefaultDatastoreBytes)).To(Succeed())
		op.clock.Step(31 * time.Second)
		pokePool(pool)
		Eventually(func() string { st, _, _ := poolCondition(pool, afv1.ConditionFailureDomainsAvailable); return st }, 90*time.Second, 250*time.Millisecond).Should(Equal("True"))
		Expect(d.SetReplicas(ctx, s.NodePool, 5)).To(Succeed())
		Eventually(func() map[string]int { return domainCounts(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(map[string]int{"zone-a": 2, "zone-b": 1, "zone-c": 2}))
	})

	It("skips a domain whose creations fail, the others take the demand, and tries it again after its backoff", func(ctx context.Context) {
		op, s, d, pool := start(nil)
		zb := s.Namespace + "-b"
		zones.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "CreateVM_Task", ObjectType: "Folder",
			ObjectName: zb, Probability: 1, FaultType: simulator.FaultTypeCustom, Enabled: true, Fault: &types.NoDiskSpace{Datastore: vcsim.ZoneOf(1).Datastore}})
		DeferCleanup(func() { zones.Service().ClearFaultRules() })

		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		By("zone-b's creation fails: the domain is skipped with a condition and an Event naming it")
		Eventually(func(g Gomega) {
			st, reason, msg := poolCondition(pool, afv1.ConditionFailureDomainsAvailable)
			g.Expect([]string{st, reason}).To(Equal([]string{"False", afv1.ReasonCreationsFailing}))
			g.Expect(msg).To(ContainSubstring("failure domain zone-b: VM creation failed 1 time(s) in a row"))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() []string { return eventReasons(ctx, pool) }, 90*time.Second, 250*time.Millisecond).Should(ContainElement(afv1.ReasonCreationsFailing))

		By("the others take its demand; zone-b holds no VM")
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(3))
		Eventually(func() int { return domainCounts(pool)["zone-b"] }, 90*time.Second, 250*time.Millisecond).Should(BeZero())
		for name, pl := range placementsOf(ctx, zones, s.Namespace) {
			Expect(pl.Folder).NotTo(Equal(zb), name)
		}

		By("fault gone, but within the backoff: more demand still goes elsewhere")
		zones.Service().ClearFaultRules()
		Expect(d.SetReplicas(ctx, s.NodePool, 4)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(4))
		Expect(domainCounts(pool)["zone-b"]).To(BeZero())

		By("after the backoff (1 min on the injected clock) zone-b is tried again and serves")
		op.clock.Step(61 * time.Second)
		pokePool(pool)
		Eventually(func() string { st, _, _ := poolCondition(pool, afv1.ConditionFailureDomainsAvailable); return st }, 90*time.Second, 250*time.Millisecond).Should(Equal("True"))
		Expect(d.SetReplicas(ctx, s.NodePool, 5)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(5))
		Expect(domainCounts(pool)["zone-b"]).To(Equal(1))
		folders := map[string]int{}
		for _, pl := range placementsOf(ctx, zones, s.Namespace) {
			folders[pl.Folder]++
		}
		Expect(folders[zb]).To(Equal(1))
	})
})

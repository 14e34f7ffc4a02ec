package controllers_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// staticScenario is a static-IP pool on its own discovery image server (the world regenerates that
// image whenever the InfraEnv's selected NMStateConfigs change) and its own IPAM pool "vm-net".
type staticScenario struct {
	op   *operator
	s    *world.Scenario
	d    *world.Driver
	pool *afv1.VsphereAgentPool
	iso  *sim.ISOServer
}

var (
	ipamClaimGVK   = schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1beta2", Kind: "IPAddressClaim"}
	ipamAddressGVK = schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1beta2", Kind: "IPAddress"}
)

// startStaticScenario starts the operator (o), a hub scenario whose InfraEnv selects NMStateConfigs
// labelled example.com/static=<namespace>, a world serving IPAM pool vm-net with addresses, and a pool
// with spec.network (spare leases).
func startStaticScenario(o operatorOptions, addresses []string, spare int32) *staticScenario {
	GinkgoHelper()
	return startStaticScenarioWith(o, world.IPPool{Name: "vm-net", Addresses: addresses, Prefix: 24, Gateway: "10.0.0.1"}, spare)
}

// startStaticScenarioWith is startStaticScenario with the IPAM pool's addresses, prefix and gateway
// given (its namespace is the scenario's).
func startStaticScenarioWith(o operatorOptions, ipPool world.IPPool, spare int32) *staticScenario {
	GinkgoHelper()
	return startStaticScenarioPools(o, []world.IPPool{ipPool}, func(p *afv1.VsphereAgentPool) {
		p.Spec.Network = &afv1.NetworkSpec{
			AddressesFromPools: []afv1.IPPoolReference{{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: ipPool.Name}},
			Nameservers:        []string{"10.0.0.53"}, SpareLeases: spare,
		}
	})
}

// startStaticScenarioPools is startStaticScenario with the world's IPAM pools (their namespace is the
// scenario's) and the pool's static addressing (customize sets spec.network and any NICs).
func startStaticScenarioPools(o operatorOptions, ipPools []world.IPPool, customize func(*afv1.VsphereAgentPool)) *staticScenario {
	GinkgoHelper()
	ctx := context.Background()
	sc := &staticScenario{iso: sim.NewISOServer(sim.ISOServerOptions{Seed: 1, Size: 64 * 1024, Token: "static-token"})}
	DeferCleanup(sc.iso.Close)
	sc.op = startOperator(o)
	DeferCleanup(func() { sc.op.stop() })
	n := nsCounter.Add(1)
	u := *vc.URL
	u.User = url.UserPassword(vcsim.Username, vcsim.Password)
	s, err := world.Setup(ctx, k8s, world.SetupOptions{
		Namespace: fmt.Sprintf("t%d", n), HostedCluster: "hc", NodePool: "np", InfraEnv: "ie",
		AgentLabels: map[string]string{"example.com/pool": fmt.Sprintf("t%d", n)},
		ISOURL:      sc.iso.URL(), VCenter: &u,
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(vc.EnsureFolder(ctx, "agent-forge/"+s.Namespace)).To(Succeed())
	ie := &unstructured.Unstructured{}
	ie.SetGroupVersionKind(world.InfraEnvGVK)
	Expect(k8s.Get(ctx, s.InfraEnv, ie)).To(Succeed())
	Expect(unstructured.SetNestedStringMap(ie.Object, map[string]string{"example.com/static": s.Namespace}, "spec", "nmStateConfigLabelSelector", "matchLabels")).To(Succeed())
	Expect(k8s.Update(ctx, ie)).To(Succeed())
	sc.s = s
	pools := make([]world.IPPool, 0, len(ipPools))
	for _, ipPool := range ipPools {
		ipPool.Namespace = s.Namespace
		pools = append(pools, ipPool)
	}
	sc.d = startWorld(s, world.Options{StaticIP: &world.StaticIPOptions{
		InfraEnv: s.InfraEnv, Images: sc.iso,
		Pools: pools,
	}})
	p := newPool(s, "workers")
	customize(p)
	sc.pool = createPool(p)
	DeferCleanup(deletePoolAndWait, sc.pool)
	return sc
}

func (sc *staticScenario) list(gvk schema.GroupVersionKind) []unstructured.Unstructured {
	GinkgoHelper()
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	Expect(k8s.List(context.Background(), l, client.InNamespace(sc.s.Namespace))).To(Succeed())
	return l.Items
}

func (sc *staticScenario) leases() (claims, configs, addresses int) {
	return len(sc.list(ipamClaimGVK)), len(sc.list(world.NMStateConfigGVK)), len(sc.list(ipamAddressGVK))
}

// checkInvariants: no VM booted an image without its config, no address on two live VMs, every created
// VM's image is newer than its lease's NMStateConfig, and every held lease's holder exists.
func (sc *staticScenario) checkInvariants() {
	GinkgoHelper()
	Expect(sc.d.BootedWithoutConfig()).To(BeEmpty(), "a VM booted an image without its NMStateConfig")
	seen := map[string]string{}
	live := map[string]bool{}
	for _, va := range vsphereAgents(sc.pool) {
		live[va.Name] = true
		ip := va.Status.StaticIP
		if ip == nil || va.Status.VM.InstanceUUID == "" {
			continue
		}
		Expect(ip.ImageCreatedAt.After(ip.ConfigCreatedAt.Time)).To(BeTrue(), "VM %s created with image %s, config %s", va.Name, ip.ImageCreatedAt, ip.ConfigCreatedAt)
		Expect(seen).NotTo(HaveKey(ip.Address), "address %s on %s and %s", ip.Address, seen[ip.Address], va.Name)
		seen[ip.Address] = va.Name
	}
	for _, c := range sc.list(ipamClaimGVK) {
		if holder := c.GetLabels()[afv1.LabelVsphereAgent]; holder != "" && c.GetLabels()["agent-forge.containeroo.ch/lease-state"] == "" {
			Expect(live).To(HaveKey(holder), "lease %s held by a VsphereAgent that is gone", c.GetName())
		}
	}
}

// agentAddresses maps each bound or free Agent of the pool to the IPv4 addresses its inventory reports.
func (sc *staticScenario) agentAddresses() map[string]string {
	GinkgoHelper()
	list := newAgentList()
	Expect(k8s.List(context.Background(), list, client.InNamespace(sc.s.Namespace), client.MatchingLabels{afv1.LabelPool: sc.pool.Name})).To(Succeed())
	out := map[string]string{}
	for _, a := range list.Items {
		ifaces, _, _ := unstructured.NestedSlice(a.Object, "status", "inventory", "interfaces")
		for _, i := range ifaces {
			m, _ := i.(map[string]any)
			addrs, _ := m["ipV4Addresses"].([]any)
			for _, ad := range addrs {
				out[a.GetLabels()[afv1.LabelVsphereAgent]] = fmt.Sprint(ad)
			}
		}
	}
	return out
}

func (sc *staticScenario) readyLeases() int32 {
	p := getPool(sc.pool)
	if p.Status.Leases == nil || p.Status.ISO == nil || p.Status.ISO.SourceCreatedTime == nil {
		return 0
	}
	return p.Status.Leases.Ready
}

var _ = Describe("Static IPs", func() {
	It("serves a burst of 10 with 3 spare leases from few image regenerations, then scale-down releases the leases", func(ctx context.Context) {
		sc := startStaticScenario(operatorOptions{}, []string{"10.0.0.10-10.0.0.60"}, 3)
		Eventually(sc.readyLeases, 60*time.Second, 250*time.Millisecond).Should(BeEquivalentTo(3), "3 spare leases prepared ahead of demand")
		Eventually(func() int { c, _, _ := sc.leases(); return c }).Should(Equal(3))
		before := sc.d.ImageRegenerations()

		Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 10)).To(Succeed())
		Eventually(func(g Gomega) {
			sc.checkInvariants() // fails at once, naming the VM, if the ordering rule is broken
			g.Expect(boundAgentsOf(sc.pool)).To(Equal(10))
		}, 180*time.Second, 500*time.Millisecond).Should(Succeed())
		Expect(poolVMs(sc.pool)).To(HaveLen(10))
		burst := sc.d.ImageRegenerations() - before
		GinkgoWriter.Printf("static IPs: burst of 10 with 3 spare leases: %d image regenerations (%d before the burst)\n", burst, before)
		// The 3 spares serve at once; the other 7 leases (plus 3 new spares) are claimed together and their
		// NMStateConfigs written in one batch: one regeneration, two if a batch straddles a pass.
		Expect(burst).To(BeNumerically("<=", 3), "image regenerations during the burst")

		addrOf := sc.agentAddresses()
		for _, va := range vsphereAgents(sc.pool) {
			Expect(va.Status.StaticIP).NotTo(BeNil())
			Expect(va.Status.StaticIP.Address).To(HavePrefix("10.0.0."))
			Expect(addrOf[va.Name]).To(Equal(va.Status.StaticIP.Address), "Agent of %s reports its lease's address", va.Name)
			Expect(strings.HasPrefix(va.Status.VM.MACAddress, "00:50:56:")).To(BeTrue(), va.Status.VM.MACAddress)
		}
		// The pool's VM list is a summary written on the pool's own pass, so it may trail the
		// VsphereAgents by a pass: wait for it, then it must show every VM's lease address.
		Eventually(func(g Gomega) {
			shown := map[string]string{}
			for _, o := range getPool(sc.pool).Status.OwnedVMs {
				shown[o.Name] = o.Address
			}
			for _, va := range vsphereAgents(sc.pool) {
				g.Expect(shown).To(HaveKeyWithValue(va.Name, va.Status.StaticIP.Address), "the pool's VM list shows %s's address", va.Name)
			}
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())

		By("scaling down to 4: the leases of the destroyed VMs are released, in one batch")
		beforeDown := sc.d.ImageRegenerations()
		Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 4)).To(Succeed())
		Eventually(func() int { return len(poolVMs(sc.pool)) }, 120*time.Second, 250*time.Millisecond).Should(Equal(4))
		Eventually(func(g Gomega) {
			// Released leases wait for 10 s without a further release (one batch for the whole
			// scale-down); the operator's clock is a fake one: move it on.
			sc.op.clock.Step(3 * time.Second)
			claims, configs, addrs := sc.leases()
			g.Expect(claims).To(BeNumerically("<=", 4+3), "claims: 4 held + at most 3 spare")
			g.Expect(configs).To(Equal(claims))
			g.Expect(addrs).To(Equal(claims))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		sc.checkInvariants()
		down := sc.d.ImageRegenerations() - beforeDown
		GinkgoWriter.Printf("static IPs: scale-down 10 -> 4 released 6 leases with %d image regenerations\n", down)
		Expect(down).To(BeNumerically("<=", 2), "released leases go in a batch, not one regeneration each")
	})

	It("blocks creation with a condition naming the IPAM pool when it is exhausted", func(ctx context.Context) {
		sc := startStaticScenario(operatorOptions{}, nil, 1)
		Eventually(func() string { return conditionReason(getPool(sc.pool), afv1.ConditionStaticIPsReady) }, 90*time.Second, 250*time.Millisecond).
			Should(Equal(afv1.ReasonIPPoolExhausted))
		c := findPoolCondition(getPool(sc.pool), afv1.ConditionStaticIPsReady)
		Expect(c).NotTo(BeNil())
		Expect(c.Message).To(ContainSubstring("InClusterIPPool vm-net"))
		Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 2)).To(Succeed())
		Eventually(func() int32 { return getPool(sc.pool).Status.WaitingAgentMachines }, 90*time.Second, 250*time.Millisecond).Should(BeEquivalentTo(2))
		Consistently(func() int { return len(vsphereAgents(sc.pool)) }, 3*time.Second, 250*time.Millisecond).Should(BeZero())
		Expect(poolVMs(sc.pool)).To(BeEmpty())
		Expect(conditionReason(getPool(sc.pool), afv1.ConditionReady)).To(Equal(afv1.ReasonIPPoolExhausted))
		exhausted := 0
		for _, e := range poolEvents(ctx, sc.pool) {
			if e.Reason == afv1.ReasonIPPoolExhausted && e.Type == "Warning" {
				exhausted++
			}
		}
		Expect(exhausted).To(BeNumerically(">", 0), "a Warning Event names the exhausted pool")
	})

	for _, point := range crashpoint.StaticIP {
		It("recovers from a crash at "+point+" without a duplicate or leaked lease", func(ctx context.Context) {
			hook, reached := crashHook(point)
			sc := startStaticScenario(operatorOptions{crashPoint: hook}, []string{"10.0.0.10-10.0.0.30"}, 1)
			Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 2)).To(Succeed())
			Eventually(reached, 60*time.Second).Should(BeClosed())
			sc.op.stop()
			sc.op = startOperator(operatorOptions{})
			Eventually(func(g Gomega) {
				sc.checkInvariants()
				g.Expect(boundAgentsOf(sc.pool)).To(Equal(2))
			}, 120*time.Second, 500*time.Millisecond).Should(Succeed())
			Expect(poolVMs(sc.pool)).To(HaveLen(2))
			// 2 held + 1 spare: a claim made before the crash is reused, never doubled.
			Eventually(func() int { c, _, _ := sc.leases(); return c }, 90*time.Second, 250*time.Millisecond).Should(Equal(3))
			macs := map[string]bool{}
			for _, c := range sc.list(ipamClaimGVK) {
				mac := c.GetAnnotations()["agent-forge.containeroo.ch/mac"]
				Expect(macs).NotTo(HaveKey(mac))
				macs[mac] = true
			}
			held := 0
			for _, va := range vsphereAgents(sc.pool) {
				if va.Status.StaticIP != nil {
					held++
				}
			}
			Expect(held).To(Equal(2))
		})
	}
})

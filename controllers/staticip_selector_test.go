package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// setNMStateSelector replaces the InfraEnv's spec.nmStateConfigLabelSelector.
func (sc *staticScenario) setNMStateSelector(ctx context.Context, selector map[string]any) {
	GinkgoHelper()
	Eventually(func() error {
		ie := &unstructured.Unstructured{}
		ie.SetGroupVersionKind(world.InfraEnvGVK)
		if err := k8s.Get(ctx, sc.s.InfraEnv, ie); err != nil {
			return err
		}
		if err := unstructured.SetNestedMap(ie.Object, selector, "spec", "nmStateConfigLabelSelector"); err != nil {
			return err
		}
		return k8s.Update(ctx, ie)
	}).Should(Succeed())
}

// configUIDs maps each NMStateConfig's name to its UID.
func (sc *staticScenario) configUIDs() map[string]types.UID {
	out := map[string]types.UID{}
	for _, c := range sc.list(world.NMStateConfigGVK) {
		out[c.GetName()] = c.GetUID()
	}
	return out
}

// heldLease is the name of the lease (claim and NMStateConfig) the VsphereAgent holds ("" if none).
func (sc *staticScenario) heldLease(va string) string {
	for _, c := range sc.list(ipamClaimGVK) {
		if c.GetLabels()[afv1.LabelVsphereAgent] == va {
			return c.GetName()
		}
	}
	return ""
}

// theVA is the pool's only VsphereAgent.
func (sc *staticScenario) theVA(g Gomega) afv1.VsphereAgent {
	vas := vsphereAgents(sc.pool)
	g.Expect(vas).To(HaveLen(1))
	return vas[0]
}

var _ = Describe("Static IPs when the InfraEnv's nmStateConfigLabelSelector changes", func() {
	It("rewrites the spare leases' NMStateConfigs for the new selector and creates no VM before the image carries its config", func(ctx context.Context) {
		sc := startStaticScenario(operatorOptions{}, []string{"10.0.0.10-10.0.0.40"}, 3)
		oldLabel := "example.com/static"
		By("3 spare leases in the cached image, labelled for the old selector")
		Eventually(func(g Gomega) {
			g.Expect(sc.readyLeases()).To(BeEquivalentTo(3))
			image := getPool(sc.pool).Status.ISO.SourceCreatedTime.Time
			configs := sc.list(world.NMStateConfigGVK)
			g.Expect(configs).To(HaveLen(3))
			for _, c := range configs {
				g.Expect(c.GetLabels()).To(HaveKeyWithValue(oldLabel, sc.s.Namespace))
				g.Expect(image.After(c.GetCreationTimestamp().Time)).To(BeTrue(), "the cached image carries %s", c.GetName())
			}
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		before := sc.configUIDs()

		By("changing the selector, then asking for 2 VMs at once")
		changed := time.Now().Truncate(time.Second)
		newLabel := "example.com/static-v2"
		sc.setNMStateSelector(ctx, map[string]any{"matchLabels": map[string]any{newLabel: "yes"}})
		Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 2)).To(Succeed())
		Eventually(func(g Gomega) {
			sc.checkInvariants() // no VM booted an image without its config
			g.Expect(boundAgentsOf(sc.pool)).To(Equal(2))
		}, 180*time.Second, 500*time.Millisecond).Should(Succeed())

		addrOf := sc.agentAddresses()
		for _, va := range vsphereAgents(sc.pool) {
			ip := va.Status.StaticIP
			Expect(ip).NotTo(BeNil())
			Expect(ip.ConfigCreatedAt.Time.Before(changed)).To(BeFalse(), "VM %s was created with a config written before the selector changed (%s)", va.Name, ip.ConfigCreatedAt)
			Expect(addrOf[va.Name]).To(Equal(ip.Address), "the Agent of %s reports its lease's address: the image it booted carried its config", va.Name)
		}
		By("every lease's NMStateConfig carries the new selector, under a new UID (rewritten, not relabelled)")
		Eventually(func(g Gomega) {
			configs := sc.list(world.NMStateConfigGVK)
			g.Expect(configs).NotTo(BeEmpty())
			for _, c := range configs {
				g.Expect(c.GetLabels()).To(HaveKeyWithValue(newLabel, "yes"), "NMStateConfig %s", c.GetName())
				if uid, ok := before[c.GetName()]; ok {
					g.Expect(c.GetUID()).NotTo(Equal(uid), "NMStateConfig %s was kept with its old creation", c.GetName())
				}
			}
			g.Expect(conditionOf(getPool(sc.pool).Status.Conditions, afv1.ConditionStaticIPsReady)).To(Equal("True/" + afv1.ReasonLeasesReady))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolEventReasons(ctx, sc.pool)).To(ContainElement("LeasesFollowSelector"))
		sc.checkInvariants()
	})

	It("gives a VM whose lease no image carries an exit: rewritten after the deadline, given back when the InfraEnv cannot select it", func(ctx context.Context) {
		sc := startStaticScenario(operatorOptions{}, []string{"10.0.0.10-10.0.0.40"}, 0)
		Eventually(func() *afv1.ISOStatus { return getPool(sc.pool).Status.ISO }, 60*time.Second, 250*time.Millisecond).ShouldNot(BeNil())
		sc.d.FailImageGeneration("no space left on device")
		Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 1)).To(Succeed())

		By("the VM waits for an image that carries its lease; the pool does not say StaticIPsReady=True")
		var held string
		var firstUID types.UID
		var created time.Time
		Eventually(func(g Gomega) {
			va := sc.theVA(g)
			g.Expect(conditionOf(va.Status.Conditions, afv1.ConditionVMCreated)).To(Equal("False/" + afv1.ReasonWaitingForImageWithLease))
			g.Expect(conditionOf(getPool(sc.pool).Status.Conditions, afv1.ConditionStaticIPsReady)).To(Equal("False/" + afv1.ReasonLeasesPending))
			held = sc.heldLease(va.Name)
			g.Expect(held).NotTo(BeEmpty())
			for _, c := range sc.list(world.NMStateConfigGVK) {
				if c.GetName() == held {
					created, firstUID = c.GetCreationTimestamp().Time, c.GetUID()
				}
			}
			g.Expect(firstUID).NotTo(BeEmpty())
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func() int { return len(poolVMs(sc.pool)) }, 2*time.Second, 250*time.Millisecond).Should(BeZero())

		By("past the deadline (10 min after the config's creation, by the operator's clock): a Warning Event, the config written again; still no VM")
		sc.op.clock.SetTime(created.Add(10*time.Minute + 500*time.Millisecond))
		Eventually(func(g Gomega) {
			va := sc.theVA(g)
			g.Expect(strings.Join(vaEvents(ctx, &va), "\n")).To(ContainSubstring(afv1.ReasonLeaseNotInImage + ": no discovery image of InfraEnv ie carried NMStateConfig"))
			uids := sc.configUIDs()
			g.Expect(uids).To(HaveKey(held))
			g.Expect(uids[held]).NotTo(Equal(firstUID), "NMStateConfig %s written again", held)
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolVMs(sc.pool)).To(BeEmpty())

		By("the InfraEnv switched to matchExpressions: the hold is given back, the VM is not created")
		sc.setNMStateSelector(ctx, map[string]any{"matchExpressions": []any{map[string]any{"key": "example.com/static", "operator": "Exists"}}})
		Eventually(func(g Gomega) {
			va := sc.theVA(g)
			g.Expect(conditionOf(va.Status.Conditions, afv1.ConditionVMCreated)).To(Equal("False/" + afv1.ReasonLeaseNotInImage))
			g.Expect(strings.Join(vaEvents(ctx, &va), "\n")).To(ContainSubstring("gave back lease"))
			for _, c := range sc.list(ipamClaimGVK) {
				g.Expect(c.GetLabels()).NotTo(HaveKey(afv1.LabelVsphereAgent), "claim %s still held", c.GetName())
			}
			g.Expect(conditionOf(getPool(sc.pool).Status.Conditions, afv1.ConditionStaticIPsReady)).To(Equal("False/" + afv1.ReasonInfraEnvSelectsNoNMStateConfig))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolVMs(sc.pool)).To(BeEmpty())

		By("a usable selector and a working image service: the VM is created with a config its image carries")
		sc.d.FailImageGeneration("")
		sc.setNMStateSelector(ctx, map[string]any{"matchLabels": map[string]any{"example.com/static": sc.s.Namespace}})
		Eventually(func(g Gomega) {
			sc.checkInvariants()
			g.Expect(boundAgentsOf(sc.pool)).To(Equal(1))
		}, 120*time.Second, 500*time.Millisecond).Should(Succeed())
		Eventually(func() string { return conditionOf(getPool(sc.pool).Status.Conditions, afv1.ConditionStaticIPsReady) }, 30*time.Second, 250*time.Millisecond).
			Should(Equal("True/" + afv1.ReasonLeasesReady))
	})
})

var _ = Describe("Static IPs with an IPAM address that cannot work", func() {
	It("refuses an address whose gateway is outside its prefix: condition and Warning Event naming the claim, no NMStateConfig, no VM", func(ctx context.Context) {
		sc := startStaticScenarioWith(operatorOptions{}, world.IPPool{Name: "vm-net", Addresses: []string{"10.0.0.10-10.0.0.20"}, Prefix: 24, Gateway: "10.0.1.1"}, 1)
		sc.expectAddressRefused(ctx, "gateway 10.0.1.1 is not inside", "IPAddressClaim workers-ip-0")
	})
})

// expectAddressRefused waits for the pool to refuse the lease workers-ip-0's address (StaticIPsReady=False
// InvalidIPAddress naming the claim and why), then asks for a VM and checks that nothing is made for it
// (no VsphereAgent, NMStateConfig or VM), that Ready says why and that a Warning Event's message holds event.
func (sc *staticScenario) expectAddressRefused(ctx context.Context, why, event string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := findPoolCondition(getPool(sc.pool), afv1.ConditionStaticIPsReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(afv1.ReasonInvalidIPAddress))
		g.Expect(c.Message).To(ContainSubstring("IPAddressClaim workers-ip-0"))
		g.Expect(c.Message).To(ContainSubstring(why))
	}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
	Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 1)).To(Succeed())
	Eventually(func() int32 { return getPool(sc.pool).Status.WaitingAgentMachines }, 90*time.Second, 250*time.Millisecond).Should(BeEquivalentTo(1))
	Consistently(func(g Gomega) {
		g.Expect(vsphereAgents(sc.pool)).To(BeEmpty())
		g.Expect(sc.list(world.NMStateConfigGVK)).To(BeEmpty())
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
	Expect(poolVMs(sc.pool)).To(BeEmpty())
	Expect(conditionReason(getPool(sc.pool), afv1.ConditionReady)).To(Equal(afv1.ReasonInvalidIPAddress))
	var warned bool
	for _, e := range poolEvents(ctx, sc.pool) {
		warned = warned || (e.Type == "Warning" && e.Reason == afv1.ReasonInvalidIPAddress && strings.Contains(e.Message, event))
	}
	Expect(warned).To(BeTrue(), "a Warning Event says why: %s", event)
}

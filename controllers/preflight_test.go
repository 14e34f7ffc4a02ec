package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Preflight at the pool: an unknown placement", func() {
	It("an unknown network: PlacementValid=False NetworkNotFound, Ready says so, a Warning Event, no VsphereAgent; fixed, the NodePool is served", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.VSphere.Network = "no-such-network"
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionPlacementValid)).To(Equal("False/" + afv1.ReasonNetworkNotFound))
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionReady)).To(Equal("False/" + afv1.ReasonNetworkNotFound))
			g.Expect(p.Status.WaitingAgentMachines).To(BeEquivalentTo(1))
			g.Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonNetworkNotFound))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(poolEventMessages(ctx, pool)).To(ContainElement(ContainSubstring("no-such-network")))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 3*time.Second, 250*time.Millisecond).Should(BeZero())

		By("fixing spec.vsphere.network (a new generation is checked at once)")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.VSphere.Network = vcsim.Network })
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(conditionOf(getPool(pool).Status.Conditions, afv1.ConditionPlacementValid)).To(Equal("True/" + afv1.ReasonPlacementValid))
	})

	It("an unknown tag and resource pool are named, each with its reason", func(_ context.Context) {
		_, _, _, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.VSphere.ResourcePool = "DC0_C0/no-such-pool"
			p.Spec.VSphere.VMTags = []string{vcsim.TagCategory + "/no-such-tag"}
		})
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionPlacementValid)).To(Equal("False/" + afv1.ReasonResourcePoolNotFound))
			c := findPoolCondition(p, afv1.ConditionPlacementValid)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(And(ContainSubstring("no-such-pool"), ContainSubstring("no-such-tag")))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
	})
})

func findPoolCondition(p *afv1.VsphereAgentPool, t string) *metav1.Condition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

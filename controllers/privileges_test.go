package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Preflight at the pool: vCenter privileges", func() {
	It("Network.Assign and Datastore.AllocateSpace withheld: PrivilegesSufficient=False InsufficientPrivileges naming both, Ready says so, a Warning Event, no VsphereAgent and no VM; granted again, the NodePool is served", func(ctx context.Context) {
		DeferCleanup(vc.ResetPrivileges)
		vc.DenyPrivilege(vcsim.Network, "Network.Assign")
		vc.DenyPrivilege(vcsim.Datastore, "Datastore.AllocateSpace")

		op, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionPlacementValid)).To(Equal("True/" + afv1.ReasonPlacementValid))
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionPrivilegesSufficient)).To(Equal("False/" + afv1.ReasonInsufficientPrivileges))
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionReady)).To(Equal("False/" + afv1.ReasonInsufficientPrivileges))
			g.Expect(p.Status.WaitingAgentMachines).To(BeEquivalentTo(1))
			g.Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonInsufficientPrivileges))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		c := findPoolCondition(getPool(pool), afv1.ConditionPrivilegesSufficient)
		Expect(c.Message).To(And(
			ContainSubstring("network "+vcsim.Network+": Network.Assign"),
			ContainSubstring("datastore "+vcsim.Datastore+": Datastore.AllocateSpace"),
			Not(ContainSubstring("VirtualMachine.")), Not(ContainSubstring("Resource.")), Not(ContainSubstring("Datastore.Browse"))))
		Expect(poolEventMessages(ctx, pool)).To(ContainElement(And(ContainSubstring("Network.Assign"), ContainSubstring("Datastore.AllocateSpace"))))
		Consistently(func() int { return len(vsphereAgents(pool)) + len(poolVMs(pool)) }, 3*time.Second, 250*time.Millisecond).Should(BeZero())

		By("granting the privileges again: the next check (slow timer) passes and the NodePool is served")
		vc.ResetPrivileges()
		op.clock.Step(placementRecheck + time.Minute)
		pokePool(pool)
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(conditionOf(getPool(pool).Status.Conditions, afv1.ConditionPrivilegesSufficient)).To(Equal("True/" + afv1.ReasonPrivilegesSufficient))
		Expect(eventCount(ctx, pool, afv1.ReasonInsufficientPrivileges)).To(BeEquivalentTo(1))
	})
})

// placementRecheck is the preflight's slow timer (controllers.placementRecheckInterval).
const placementRecheck = 10 * time.Minute

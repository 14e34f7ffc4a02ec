package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/sim/world"
)

var _ = Describe("Scaling a NodePool", func() {
	var (
		op *operator
		s  *world.Scenario
		d  *world.Driver
	)
	BeforeEach(func() {
		op = startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s = newScenario()
		d = startWorld(s, world.Options{})
	})

	It("scales 0 → 5: exactly 5 VMs, 5 Agents prepared and bound, counters right, then 5 → 2 destroys 3 VMs and deletes 3 Agents", func(ctx context.Context) {
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.ISO).NotTo(BeNil())
			g.Expect(p.Status.ISO.Path).NotTo(BeEmpty())
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

		Expect(d.SetReplicas(ctx, s.NodePool, 5)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(5))
		Expect(poolVMs(pool)).To(HaveLen(5))
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.WaitingAgentMachines).To(BeZero())
			g.Expect(p.Status.BoundAgents).To(BeEquivalentTo(5))
			g.Expect(p.Status.VMs).To(BeEquivalentTo(5))
			g.Expect(p.Status.AgentMachines).To(BeEquivalentTo(5))
			g.Expect(phaseCount(pool, afv1.VMPhaseBound)).To(Equal(5))
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())

		By("leaving status unwritten on a no-change resync")
		Eventually(func() string {
			rv := getPool(pool).ResourceVersion
			time.Sleep(time.Second) // settle: the world finishes installing; a real-time quiet window, not a timing assertion
			return rv
		}, 30*time.Second).Should(Equal(getPool(pool).ResourceVersion))
		poked := pokePool(pool) // an annotation change triggers a reconcile that observes nothing new
		Consistently(func() string { return getPool(pool).ResourceVersion }, 3*time.Second, 250*time.Millisecond).Should(Equal(poked))

		By("scaling down to 2 after drain")
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return len(poolVMs(pool)) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func() int { return agentsOf(pool) }, 30*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(vsphereAgents(pool)).To(HaveLen(2))
		Expect(boundAgentsOf(pool)).To(Equal(2))
	})
})

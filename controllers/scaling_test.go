package controllers_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
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
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())

		Expect(d.SetReplicas(ctx, s.NodePool, 5)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(5))
		Expect(poolVMs(pool)).To(HaveLen(5))
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.WaitingAgentMachines).To(BeZero())
			g.Expect(p.Status.BoundAgents).To(BeEquivalentTo(5))
			g.Expect(p.Status.VMs).To(BeEquivalentTo(5))
			g.Expect(p.Status.AgentMachines).To(BeEquivalentTo(5))
			g.Expect(p.Status.UnreadyAgentMachines).To(BeZero(), "installed workers make their AgentMachines ready")
			g.Expect(p.Status.AgentMachinesWithoutAgent).To(BeZero())
			g.Expect(phaseCount(pool, afv1.VMPhaseBound)).To(Equal(5))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())

		By("leaving status unwritten on a no-change resync, the pool's and every VsphereAgent's")
		versions := func() map[string]string {
			m := map[string]string{"pool": getPool(pool).ResourceVersion}
			for _, va := range vsphereAgents(pool) {
				m[va.Name] = va.ResourceVersion
			}
			return m
		}
		// Settle: wait for a real-time quiet window (not a timing assertion): nothing rewritten for 3 s,
		// longer than the 2 s quiet spell that batches counter-only pool status writes.
		var settled map[string]string
		Eventually(func() bool {
			settled = versions()
			time.Sleep(3 * time.Second)
			ok, err := Equal(settled).Match(versions())
			return ok && err == nil
		}, 40*time.Second).Should(BeTrue())
		poked := pokePool(pool) // an annotation change triggers a pool pass and a pass of each VsphereAgent, observing nothing new
		settled["pool"] = poked
		Consistently(versions, 3*time.Second, 250*time.Millisecond).Should(Equal(settled))

		By("scaling down to 2 after drain")
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return len(poolVMs(pool)) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func() int { return agentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(vsphereAgents(pool)).To(HaveLen(2))
		Expect(boundAgentsOf(pool)).To(Equal(2))
	})
})

var _ = Describe("Cleanup policy Retain", func() {
	It("scales 3 → 1 without deleting anything external", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) { p.Spec.CleanupPolicy = afv1.CleanupPolicyRetain })
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(3))
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Consistently(func() int { return len(poolVMs(pool)) }, 3*time.Second, 250*time.Millisecond).Should(Equal(3))
		Expect(agentsOf(pool)).To(Equal(3))
		Expect(vsphereAgents(pool)).To(HaveLen(3))
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseReleased) }, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
	})
})

var _ = Describe("A burst of demand", func() {
	It("never has more VMs than waiting AgentMachines while 20 arrive over 2 s", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Eventually(func() string { p := getPool(pool); return isoPath(p) }, 90*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())

		var maxVAs, maxVMs atomic.Int32
		sampleCtx, stopSampling := context.WithCancel(ctx)
		sampled := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(sampled)
			for sampleCtx.Err() == nil {
				if n := int32(len(vsphereAgents(pool))); n > maxVAs.Load() {
					maxVAs.Store(n)
				}
				if n := int32(len(poolVMs(pool))); n > maxVMs.Load() {
					maxVMs.Store(n)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		for i := 1; i <= 20; i++ {
			Expect(d.SetReplicas(ctx, s.NodePool, i)).To(Succeed())
			time.Sleep(100 * time.Millisecond) // the burst arrives over 2 s, as the scenario specifies
		}
		Eventually(func() int { return boundAgentsOf(pool) }, 120*time.Second, 500*time.Millisecond).Should(Equal(20))
		stopSampling()
		<-sampled
		Expect(maxVAs.Load()).To(BeNumerically("<=", 20))
		Expect(maxVMs.Load()).To(BeNumerically("<=", 20))
		Expect(poolVMs(pool)).To(HaveLen(20))
	})
})

var _ = Describe("Limits and pause", func() {
	It("honours maxConcurrentProvisioning and maxVMs, and paused stops all actions", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Limits = &afv1.LimitsSpec{MaxVMs: ptr.To[int32](3), MaxConcurrentProvisioning: ptr.To[int32](2)}
		})
		d.SetRegistrationFilter(func(world.VM) bool { return false }) // before any VM exists
		Expect(d.SetReplicas(ctx, s.NodePool, 5)).To(Succeed())
		Eventually(func() int { return len(poolVMs(pool)) }, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 2*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionCapacitySatisfied) }, 10*time.Second).Should(Equal("MaxConcurrentProvisioningReached"))

		By("letting VMs register: the cap moves to maxVMs")
		d.SetRegistrationFilter(func(world.VM) bool { return true })
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(3))
		Consistently(func() int { return len(poolVMs(pool)) }, 2*time.Second, 250*time.Millisecond).Should(Equal(3))
		Expect(conditionReason(getPool(pool), afv1.ConditionCapacitySatisfied)).To(Equal("MaxVMsReached"))

		By("pausing: raising the cap creates nothing, scale-down removes nothing")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Paused = true; p.Spec.Limits = nil })
		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionReady) }, 10*time.Second).Should(Equal("Paused"))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 2*time.Second, 250*time.Millisecond).Should(Equal(3))
		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(0))
		Consistently(func() int { return len(poolVMs(pool)) }, 2*time.Second, 250*time.Millisecond).Should(Equal(3))

		By("unpausing: the released VMs are cleaned up")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Paused = false })
		Eventually(func() int { return len(poolVMs(pool)) }, 60*time.Second, 250*time.Millisecond).Should(Equal(0))
	})
})

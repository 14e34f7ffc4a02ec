package controllers_test

import (
	"context"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

var _ = Describe("Warm standby", func() {
	It("keeps 2 ready Agents, serves a burst from them at once, refills, keeps a short standby through a scale-down, lowers it newest first, and never touches a bound VM", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Standby = 2
			p.Spec.Limits = &afv1.LimitsSpec{MaxVMs: ptr.To[int32](10)}
		})
		// everBound collects every VsphereAgent seen Bound (name → UID): none may ever be destroyed.
		everBound := map[string]string{}
		bound := func() []string {
			var out []string
			for _, va := range vsphereAgents(pool) {
				if va.Status.VM.Phase == afv1.VMPhaseBound {
					everBound[va.Name] = string(va.UID)
					out = append(out, va.Name)
				}
			}
			return out
		}
		standby := func() []afv1.VsphereAgent {
			var out []afv1.VsphereAgent
			for _, va := range vsphereAgents(pool) {
				if va.Status.VM.Phase == afv1.VMPhaseAvailable {
					out = append(out, va)
				}
			}
			return out
		}
		names := func(vas []afv1.VsphereAgent) []string {
			out := make([]string, 0, len(vas))
			for _, va := range vas {
				out = append(out, va.Name)
			}
			return out
		}
		standbyFull := func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.Standby).NotTo(BeNil())
			g.Expect(p.Status.Standby.Desired).To(BeEquivalentTo(p.Spec.Standby))
			g.Expect(p.Status.Standby.Ready).To(BeEquivalentTo(p.Spec.Standby))
			g.Expect(conditionReason(p, afv1.ConditionStandbyReady)).To(Equal(afv1.ReasonStandbyFull))
			g.Expect(standby()).To(HaveLen(int(p.Spec.Standby)))
		}
		machinesWithNode := func() int {
			ms, err := d.Observe(ctx, s.NodePool)
			Expect(err).NotTo(HaveOccurred())
			n := 0
			for _, m := range ms {
				if m.Node != "" && !m.Deleting {
					n++
				}
			}
			return n
		}

		By("no demand: 2 VMs whose Agents are ready for the provider, and no more")
		Eventually(standbyFull, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func() int { return len(vsphereAgents(pool)) }, 2*time.Second, 250*time.Millisecond).Should(Equal(2))
		first := names(standby())

		By("a burst of 3 while no new VM can register: the 2 standby Agents are bound at once, the third waits")
		d.SetRegistrationFilter(func(world.VM) bool { return false })
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		Eventually(bound, 60*time.Second, 250*time.Millisecond).Should(ConsistOf(first))
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.WaitingAgentMachines).To(BeEquivalentTo(1))
			g.Expect(p.Status.Standby.Ready).To(BeZero())
			g.Expect(conditionReason(p, afv1.ConditionStandbyReady)).To(Equal(afv1.ReasonStandbyFilling))
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
		By("creating the third's VM and both replacements in the same pass")
		Eventually(func() int { return len(vsphereAgents(pool)) }, 30*time.Second, 250*time.Millisecond).Should(Equal(5))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 2*time.Second, 250*time.Millisecond).Should(Equal(5))

		By("letting VMs register: the third binds on a new VM and the standby refills to 2")
		d.SetRegistrationFilter(nil)
		Eventually(func() int { return len(bound()) }, 90*time.Second, 250*time.Millisecond).Should(Equal(3))
		Eventually(standbyFull, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(vsphereAgents(pool)).To(HaveLen(5))

		By("a burst of 3 more while no new VM can register: 2 bound from the standby, the sixth waits, 3 VMs in flight")
		Eventually(machinesWithNode, 90*time.Second, 250*time.Millisecond).Should(Equal(3))
		d.SetRegistrationFilter(func(world.VM) bool { return false })
		Expect(d.SetReplicas(ctx, s.NodePool, 6)).To(Succeed())
		Eventually(func() int { return len(bound()) }, 60*time.Second, 250*time.Millisecond).Should(Equal(5))
		Eventually(func() int { return len(vsphereAgents(pool)) }, 30*time.Second, 250*time.Millisecond).Should(Equal(8))
		Eventually(machinesWithNode, 90*time.Second, 250*time.Millisecond).Should(Equal(5))

		By("scaling down to 5 while the standby is short: the waiting Machine goes, 2 of the 3 VMs in flight stay as standby")
		Expect(d.SetReplicas(ctx, s.NodePool, 5)).To(Succeed())
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.AgentMachines).To(BeEquivalentTo(5))
			g.Expect(p.Status.WaitingAgentMachines).To(BeZero())
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() int { return len(vsphereAgents(pool)) }, 30*time.Second, 250*time.Millisecond).Should(Equal(7))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 3*time.Second, 250*time.Millisecond).Should(Equal(7))
		Expect(poolVMs(pool)).To(HaveLen(7))
		Expect(bound()).To(HaveLen(5))

		By("letting them register: they become the standby")
		d.SetRegistrationFilter(nil)
		Eventually(standbyFull, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(vsphereAgents(pool)).To(HaveLen(7))

		By("lowering the standby to 1: the newest standby VM is destroyed, and only it")
		left := standby()
		sort.Slice(left, func(i, j int) bool {
			if !left[i].CreationTimestamp.Equal(&left[j].CreationTimestamp) {
				return left[i].CreationTimestamp.After(left[j].CreationTimestamp.Time)
			}
			return left[i].Name < left[j].Name
		})
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Standby = 1 })
		Eventually(func() []string { return names(vsphereAgents(pool)) }, 60*time.Second, 250*time.Millisecond).ShouldNot(ContainElement(left[0].Name))
		Eventually(standbyFull, 30*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(names(standby())).To(ConsistOf(left[1].Name))
		Eventually(func() int { return len(poolVMs(pool)) }, 60*time.Second, 250*time.Millisecond).Should(Equal(6))

		By("lowering it to 0: the last standby VM goes, StandbyReady says why")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Standby = 0 })
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.Standby).To(BeNil())
			g.Expect(conditionReason(p, afv1.ConditionStandbyReady)).To(Equal(afv1.ReasonStandbyDisabled))
			g.Expect(standby()).To(BeEmpty())
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() int { return len(poolVMs(pool)) }, 60*time.Second, 250*time.Millisecond).Should(Equal(5))

		By("no VM that was ever bound was touched")
		Expect(everBound).To(HaveLen(5))
		running := map[string]bool{}
		for _, vm := range poolVMs(pool) {
			running[vm.InstanceUUID] = vm.PoweredOn
		}
		vas := map[string]string{}
		for _, va := range vsphereAgents(pool) {
			Expect(running).To(HaveKeyWithValue(va.Status.VM.InstanceUUID, true), "the VM of %s still runs", va.Name)
			vas[va.Name] = string(va.UID)
			Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound), va.Name)
			Expect(va.DeletionTimestamp).To(BeNil(), va.Name)
		}
		Expect(vas).To(Equal(everBound))
		Expect(boundAgentsOf(pool)).To(Equal(5))
	})
})

var _ = Describe("Warm standby at limits.maxVMs", func() {
	It("says StandbyLimited with one Warning Event when the standby's Agents are bound and maxVMs leaves no room, and fills again once it is raised", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Standby = 2
			p.Spec.Limits = &afv1.LimitsSpec{MaxVMs: ptr.To[int32](2)}
		})
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.Standby).NotTo(BeNil())
			g.Expect(p.Status.Standby.Ready).To(BeEquivalentTo(2))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())

		By("2 AgentMachines take both standby Agents: no room left for a replacement")
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionReason(p, afv1.ConditionStandbyReady)).To(Equal(afv1.ReasonStandbyLimited))
			g.Expect(p.Status.Standby.Ready).To(BeZero())
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() int32 { return eventCount(ctx, pool, afv1.ReasonStandbyLimited) }, 10*time.Second, 250*time.Millisecond).Should(BeEquivalentTo(1))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 2*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(eventCount(ctx, pool, afv1.ReasonStandbyLimited)).To(BeEquivalentTo(1), "one Event when the limit starts to bite, not one per pass")

		By("raising maxVMs: the standby fills again")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Limits.MaxVMs = ptr.To[int32](4) })
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionReason(p, afv1.ConditionStandbyReady)).To(Equal(afv1.ReasonStandbyFull))
			g.Expect(p.Status.Standby.Ready).To(BeEquivalentTo(2))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(boundAgentsOf(pool)).To(Equal(2))
	})
})

package controllers_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

var _ = Describe("Hard limits", func() {
	It("never has more than maxVMs of the pool's VMs in vCenter: held destroys count, and a VsphereAgent beyond the limit, whoever made it, gets no VM", func(ctx context.Context) {
		_, s, d, pool := startPoolWithISO(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Limits = &afv1.LimitsSpec{MaxVMs: ptr.To[int32](3)}
		})
		most := samplePoolVMs(pool)
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(3))

		By("vCenter refuses every destroy (another task, a backup's snapshot, holds the VMs); the NodePool scales down")
		var held atomic.Bool
		held.Store(true)
		// ObjectName "*": the simulator matches an empty ObjectName against the VM's name, so a rule
		// without it never fires.
		vc.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "Destroy_Task", ObjectType: "VirtualMachine",
			ObjectName: "*", Probability: 1, FaultType: simulator.FaultTypeCustom, Enabled: true,
			InclusionPropertyFilter: func(mo.Reference) bool { return held.Load() }, Fault: &types.TaskInProgress{}})
		DeferCleanup(func() { vc.Service().ClearFaultRules() })
		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		Eventually(func() int {
			n := 0
			for _, va := range vsphereAgents(pool) {
				if !va.DeletionTimestamp.IsZero() {
					n++
				}
			}
			return n
		}, 90*time.Second, 250*time.Millisecond).Should(Equal(3), "the three VsphereAgents are being deleted, their destroys held")
		Expect(poolVMs(pool)).To(HaveLen(3))

		By("new demand while the three VMs still exist: nothing is created")
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionCapacitySatisfied) }, 60*time.Second, 250*time.Millisecond).
			Should(Equal(afv1.ReasonMaxVMsReached))
		Consistently(func() int { return len(poolVMs(pool)) }, 5*time.Second, 250*time.Millisecond).Should(Equal(3))
		Expect(most()).To(Equal(3), "never more than maxVMs of the pool's VMs in the simulator")

		By("the destroys go through: the demand is served, still never more than 3")
		held.Store(false)
		pokeVsphereAgents(pool)
		Eventually(func() int { return boundAgentsOf(pool) }, 120*time.Second, 250*time.Millisecond).Should(Equal(3))
		Expect(most()).To(Equal(3))

		By("one more AgentMachine waits: the pool stops at maxVMs")
		Expect(d.SetReplicas(ctx, s.NodePool, 4)).To(Succeed())
		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionCapacitySatisfied) }, 60*time.Second, 250*time.Millisecond).
			Should(Equal(afv1.ReasonMaxVMsReached))

		By("a VsphereAgent made by hand, naming the pool as its controller: no VM, a condition and an Event")
		va := &afv1.VsphereAgent{}
		va.Namespace, va.Name = s.Namespace, "hand-made-beyond"
		va.Labels = map[string]string{afv1.LabelPool: pool.Name}
		va.Spec.PoolRef.Name = pool.Name
		createdBy(va, getPool(pool))
		Expect(k8s.Create(ctx, va)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = k8s.Delete(ctx, va) })
		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(va), va)).To(Succeed())
			if c := meta.FindStatusCondition(va.Status.Conditions, afv1.ConditionVMCreated); c != nil && c.Status == "False" {
				return c.Reason
			}
			return ""
		}, 60*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonMaxVMsReached))
		Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhasePending))
		Eventually(func() int { return objectEvents(ctx, s.Namespace, va.Name, afv1.ReasonMaxVMsReached) }, 30*time.Second, 250*time.Millisecond).
			Should(BeNumerically(">=", 1))
		Consistently(func() int { return vc.CountVMsNamed(va.Name) }, 3*time.Second, 250*time.Millisecond).Should(BeZero())
		Expect(most()).To(Equal(3))

		By("room appears (maxVMs raised to 4): the hand-made VsphereAgent gets its VM")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Limits.MaxVMs = ptr.To[int32](4) })
		Eventually(func() int { return vc.CountVMsNamed(va.Name) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(4))
		Expect(most()).To(Equal(4))
	})

	It("bounds the VMs an image whose hosts never register costs over 24 simulated hours (the registration breaker's backoff)", func(ctx context.Context) {
		const demand = 4
		op, s, d, pool := startPoolWithISO(operatorOptions{}, nil) // no limits: the defaults apply
		creates := countPoolCreates(pool)
		d.SetRegistrationFilter(func(world.VM) bool { return false })
		Expect(d.SetReplicas(ctx, s.NodePool, demand)).To(Succeed())
		Eventually(creates, 90*time.Second, 250*time.Millisecond).Should(Equal(demand))
		// The registration timeout counts from status.vm.createdAt (the injected clock when the status is
		// written, possibly after the CreateVM call): step the clock only once every VM's is recorded.
		Eventually(func() int {
			n := 0
			for _, va := range vsphereAgents(pool) {
				if va.Status.VM.CreatedAt != nil {
					n++
				}
			}
			return n
		}, 60*time.Second, 250*time.Millisecond).Should(Equal(demand))

		breaker := func() afv1.RegistrationBreakerStatus {
			if b := getPool(pool).Status.RegistrationBreaker; b != nil {
				return *b
			}
			return afv1.RegistrationBreakerStatus{}
		}
		// step moves the injected clock on and lets every VsphereAgent and the pool look again.
		step := func(by time.Duration) {
			op.clock.Step(by)
			pokeVsphereAgents(pool)
			pokePool(pool)
		}
		inFlight := func() int { return phaseCount(pool, afv1.VMPhaseProvisioning) + phaseCount(pool, afv1.VMPhasePending) }

		start := op.clock.Now()
		trips := int32(0)
		for op.clock.Since(start) < 24*time.Hour {
			By("the VMs in flight reach their registration timeout: the breaker trips")
			step(21 * time.Minute)
			Eventually(func() int32 { return breaker().Trips }, 60*time.Second, 250*time.Millisecond).Should(Equal(trips + 1))
			trips++
			Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionRegistrationOK) }, 30*time.Second, 250*time.Millisecond).
				Should(Equal(afv1.ReasonRegistrationFailing))
			heldUntil := breaker().HeldUntil.Time
			Expect(heldUntil).To(BeTemporally(">", op.clock.Now()))

			By("during the hold: what was in flight fails, the Failed VsphereAgents expire, nothing is created")
			step(heldUntil.Sub(op.clock.Now()) - time.Minute)
			Eventually(inFlight, 60*time.Second, 250*time.Millisecond).Should(BeZero())
			before := creates()
			Consistently(creates, 2*time.Second, 250*time.Millisecond).Should(Equal(before))
			if op.clock.Since(start) >= 24*time.Hour {
				break
			}

			By("the hold is over: one VM probes the image")
			step(2 * time.Minute)
			Eventually(creates, 60*time.Second, 250*time.Millisecond).Should(Equal(before + 1))
			Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionRegistrationOK) }, 30*time.Second, 250*time.Millisecond).
				Should(Equal(afv1.ReasonRegistrationProbing))
			Consistently(creates, 2*time.Second, 250*time.Millisecond).Should(Equal(before+1), "one probe at a time")
		}
		// The bound docs/pools.md states: min(demand, maxConcurrentProvisioning) + threshold − 1 for the first trip,
		// then one probe per hold that ends within the day (holds of 1, 2, 4 and 8 h): 4 + 2 + 4 = 10.
		GinkgoWriter.Printf("%d VMs created in 24 simulated hours, %d trips\n", creates(), trips)
		Expect(creates()).To(BeNumerically("<=", 10))
		Expect(trips).To(BeNumerically(">=", 5), "each probe failed and tripped the breaker again, holding twice as long")
	})
})

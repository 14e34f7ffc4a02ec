package controllers_test

import (
	"context"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// CAPI's MachineSet (running for real) picks the Machines a scale-down deletes: one marked with the
// delete-machine annotation goes first. The Agent CAPI provider holds that Machine's pre-terminate hook
// until the Agent it unbinds reaches an unbound state; here assisted-service reclaims the installed host and
// the host comes back unbound only after ReclaimDelay on the world's clock, so the hook stays held until the
// test moves that clock.
var _ = Describe("A scale-down decided by CAPI", func() {
	It("deletes the Machine marked delete-machine, keeps its VM while the pre-terminate hook is held, then destroys only that VM", func(ctx context.Context) {
		clk := &steppedClock{}
		_, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{Clock: clk, ReclaimDelay: time.Hour}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())

		var vas []afv1.VsphereAgent
		Eventually(func(g Gomega) {
			vas = vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(3))
			for _, va := range vas {
				g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
				g.Expect(va.Status.VM.MachineName).NotTo(BeEmpty())
				g.Expect(agents.AgentFrom(getAgent(ctx, s.Namespace, va.Status.VM.AgentName)).IsInstalled()).To(BeTrue())
			}
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		sort.Slice(vas, func(i, j int) bool { return vas[i].Name < vas[j].Name })
		victim, kept := vas[1], []afv1.VsphereAgent{vas[0], vas[2]}
		victimMachine := key(s.ControlPlaneNamespace, victim.Status.VM.MachineName)

		By("marking the middle Machine delete-machine and scaling 3 -> 2: CAPI deletes exactly that Machine")
		markDeleteMachine(ctx, victimMachine)
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func(g Gomega) {
			m := agents.New(agents.MachineGVK())
			g.Expect(k8s.Get(ctx, victimMachine, m)).To(Succeed())
			g.Expect(m.GetDeletionTimestamp()).NotTo(BeNil(), "CAPI deletes the marked Machine")
			g.Expect(m.GetAnnotations()).To(HaveKey(world.AnnotationPreTerminateHook), "the provider's hook holds it")
			g.Expect(agents.AgentFrom(getAgent(ctx, s.Namespace, victim.Status.VM.AgentName)).State).To(Equal(agents.StateReclaiming))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		for _, va := range kept {
			m := agents.New(agents.MachineGVK())
			Expect(k8s.Get(ctx, key(s.ControlPlaneNamespace, va.Status.VM.MachineName), m)).To(Succeed())
			Expect(m.GetDeletionTimestamp()).To(BeNil(), "CAPI deletes only the marked Machine")
		}

		By("while the hook is held the operator releases the VM but keeps it: its Machine references the Agent")
		Eventually(func() afv1.VMPhase { return getVA(&victim).Status.VM.Phase }, 60*time.Second, 250*time.Millisecond).
			Should(Equal(afv1.VMPhaseReleased))
		Eventually(func() []string { return poolEventMessagesWith(ctx, pool, "SurplusKept") }, 90*time.Second, 250*time.Millisecond).
			Should(ContainElement(ContainSubstring("Machine " + victimMachine.Name + " references its Agent")))
		Consistently(func(g Gomega) {
			g.Expect(poolVMs(pool)).To(HaveLen(3), "a VM is destroyed while the hook holds its Machine")
			g.Expect(getVA(&victim).DeletionTimestamp.IsZero()).To(BeTrue(), "the VsphereAgent is deleted while the hook holds its Machine")
			m := agents.New(agents.MachineGVK())
			g.Expect(k8s.Get(ctx, victimMachine, m)).To(Succeed())
			g.Expect(m.GetAnnotations()).To(HaveKey(world.AnnotationPreTerminateHook))
		}, 5*time.Second, 250*time.Millisecond).Should(Succeed())

		By("the host comes back unbound: the provider releases the hook, CAPI finishes, the operator destroys that VM only")
		clk.Step(time.Hour)
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, victimMachine, agents.New(agents.MachineGVK()))) }, 90*time.Second, 250*time.Millisecond).
			Should(BeTrue(), "CAPI deletes the Machine once the hook is released")
		Eventually(func() bool { return poolHasVMOf(pool, &victim) }, 90*time.Second, 250*time.Millisecond).Should(BeFalse(), "the VM of the deleted Machine is destroyed")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: victim.Namespace, Name: victim.Name}, &afv1.VsphereAgent{}))
		}, 90*time.Second, 250*time.Millisecond).Should(BeTrue())
		Expect(poolVMs(pool)).To(HaveLen(2))
		for _, va := range kept {
			Expect(poolHasVMOf(pool, &va)).To(BeTrue(), "the VM of a kept Machine survives")
			Expect(getVA(&va).Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
		}
	})
})

// steppedClock is the real clock moved forward by Step: the world's timers keep running in real time
// while the delays it measures on Now (ReclaimDelay here) pass when the test says so.
type steppedClock struct {
	clock.RealClock
	mu     sync.Mutex
	offset time.Duration
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *steppedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Step moves the clock forward by d.
func (c *steppedClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

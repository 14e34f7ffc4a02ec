package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/test/sim/bindable"
)

// batchLines lists the lines naming VsphereAgent va in the pool's batch Events with reason (VMCreated,
// ISOEjected: "<summary>: line; line", each line "<vm> (VsphereAgent <name>..."), each as
// "<summary>: <line>" (an ISOEjected summary names the ISO its VMs had).
func batchLines(ctx context.Context, p *afv1.VsphereAgentPool, reason string, va *afv1.VsphereAgent) []string {
	var out []string
	for _, e := range poolEvents(ctx, p) {
		if e.Reason != reason {
			continue
		}
		head, body, _ := strings.Cut(strings.TrimSpace(e.Message), ": ")
		for _, l := range strings.Split(body, "; ") {
			if strings.Contains(l, "(VsphereAgent "+va.Name+",") || strings.Contains(l, "(VsphereAgent "+va.Name+")") {
				out = append(out, head+": "+l)
			}
		}
	}
	return out
}

var _ = Describe("API writes per VM", func() {
	It("holds the Available write for the batch interval without creating another VM, binds a held VM in one write, and names every VM in one VMCreated Event of the pool", func(ctx context.Context) {
		batch := clocktesting.NewFakeClock(time.Now()) // frozen until stepped: the batch interval never ends by itself
		_, s, d, pool := startPoolScenario(operatorOptions{batchClock: batch, availableHoldMax: 30 * time.Second},
			func(p *afv1.VsphereAgentPool) { p.Spec.Standby = 2 })

		By("standby 2: both VMs' Agents registered and prepared, their Available write held")
		prepared := func(g Gomega) {
			list := newAgentList()
			g.Expect(k8s.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels{afv1.LabelPool: pool.Name})).To(Succeed())
			n := 0
			for i := range list.Items {
				if a := &list.Items[i]; a.GetLabels()[afv1.LabelVsphereAgent] != "" && bindable.Agent(a) {
					n++
				}
			}
			g.Expect(n).To(Equal(2))
		}
		Eventually(prepared, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		// Long past the batch interval in real time (the pass comes back every interval): while held, the
		// VMs count as in flight, never as missing, so no third VM is created.
		Consistently(func(g Gomega) {
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(2))
			for _, va := range vas {
				g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseProvisioning), va.Name)
			}
		}, 5*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolVMs(pool)).To(HaveLen(2))
		Expect(poolEventReasons(ctx, pool)).NotTo(ContainElement("VMCreated"), "the batch stands until the interval passed")

		By("an AgentMachine takes a held VM: Provisioning -> Bound in one write, AgentPrepared recorded; one replacement refills the standby")
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		var taken afv1.VsphereAgent
		Eventually(func(g Gomega) {
			n := 0
			for _, va := range vsphereAgents(pool) {
				if va.Status.VM.Phase == afv1.VMPhaseBound {
					taken, n = va, n+1
				}
			}
			g.Expect(n).To(Equal(1))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		c := conditions.FindCondition(taken.Status.Conditions, afv1.ConditionAgentPrepared)
		Expect(c).NotTo(BeNil(), "AgentPrepared is written with Bound")
		Expect(string(c.Status)).To(Equal("True"))
		Expect(conditions.FindCondition(taken.Status.Conditions, afv1.ConditionAgentRegistered).Status).To(BeEquivalentTo("True"))
		Eventually(func() int { return len(vsphereAgents(pool)) }, 30*time.Second, 250*time.Millisecond).Should(Equal(3))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 3*time.Second, 250*time.Millisecond).Should(Equal(3))
		Eventually(prepared, 60*time.Second, 250*time.Millisecond).Should(Succeed(), "the replacement's Agent is prepared (and held) too")

		By("the hold ends: the standby VMs nobody bound are written Available, and one VMCreated Event names all three VMs")
		Eventually(batch.HasWaiters, 10*time.Second, 100*time.Millisecond).Should(BeTrue(), "the Event batcher waits on the batch clock")
		// The batch maximum: the replacement was prepared while the pool's stored status may still have
		// counted the AgentMachine as waiting, and then its Available write is held up to that long. Its
		// pass comes back on a real-time requeue of up to 30 s.
		batch.Step(30 * time.Second)
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func(g Gomega) {
			for _, va := range vsphereAgents(pool) {
				g.Expect(batchLines(ctx, pool, "VMCreated", &va)).To(ConsistOf(ContainSubstring(va.Status.VM.InstanceUUID)), va.Name)
			}
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
		var created []string
		for _, e := range poolEvents(ctx, pool) {
			if e.Reason == "VMCreated" {
				created = append(created, e.Message)
				Expect(e.Type).To(Equal("Normal"))
				Expect(e.Action).To(Equal(events.ActionCreateVM))
			}
		}
		Expect(created).To(ConsistOf(HavePrefix("created and powered on 3 VM(s): ")), "one Event for the batch")
		for _, va := range vsphereAgents(pool) {
			Expect(objectEventReasons(ctx, va.Namespace, "VsphereAgent", va.Name)).NotTo(ContainElement("VMCreated"))
		}
		Expect(vsphereAgents(pool)).To(HaveLen(3))

		By("a later batch of the same pool is an Event of its own that names its VM (not folded into the first Event's series)")
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseBound) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		var fourth afv1.VsphereAgent
		Eventually(func(g Gomega) {
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(4))
			for _, va := range vas {
				if len(batchLines(ctx, pool, "VMCreated", &va)) == 0 {
					fourth = va
				}
			}
			g.Expect(fourth.Status.VM.InstanceUUID).NotTo(BeEmpty(), "the replacement's VM is created")
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		// Stepped until the batch is out: the pool's VMRequested batch waits on the same clock, so a waiter
		// on it does not mean the VM controller's batcher has armed its timer yet.
		Eventually(func() []string {
			batch.Step(2 * time.Second)
			return batchLines(ctx, pool, "VMCreated", &fourth)
		}, 30*time.Second, 500*time.Millisecond).Should(ConsistOf(ContainSubstring(fourth.Status.VM.InstanceUUID)))
		created = nil
		for _, e := range poolEvents(ctx, pool) {
			if e.Reason == "VMCreated" {
				created = append(created, e.Message)
			}
		}
		Expect(created).To(ConsistOf(HavePrefix("created and powered on 3 VM(s): "), HavePrefix("created and powered on 1 VM(s): "+fourth.Name+" ")))
	})
})

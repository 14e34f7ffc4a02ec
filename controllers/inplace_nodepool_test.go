package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// HyperShift renders an InPlace NodePool as a MachineSet of its own (no MachineDeployment); the pool reads
// demand from AgentMachines and their Machines, so it serves one the same way.
var _ = Describe("An InPlace NodePool", func() {
	It("is served from the MachineSet HyperShift renders: its waiting AgentMachines get VMs, and a scale-down destroys the surplus VM", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenarioOf(vc, world.UpgradeTypeInPlace)
		d := startWorld(s, world.Options{})
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)

		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func(g Gomega) {
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(2))
			for _, va := range vas {
				g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
				g.Expect(va.Status.VM.MachineName).NotTo(BeEmpty())
				m := agents.New(agents.MachineGVK())
				g.Expect(k8s.Get(ctx, key(s.ControlPlaneNamespace, va.Status.VM.MachineName), m)).To(Succeed())
				owners := m.GetOwnerReferences()
				g.Expect(owners).To(HaveLen(1))
				g.Expect(owners[0].Kind).To(Equal("MachineSet"))
				g.Expect(owners[0].Name).To(Equal(world.MachineSetOf(s).Name), "CAPI made the Machine from the NodePool's own MachineSet")
			}
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())

		By("scaling 2 -> 1: CAPI deletes one Machine, the operator destroys its VM and keeps the other")
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(poolVMs(pool)).To(HaveLen(1))
			g.Expect(vsphereAgents(pool)).To(HaveLen(1))
			g.Expect(vsphereAgents(pool)[0].Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
		}, 120*time.Second, 250*time.Millisecond).Should(Succeed())
	})
})

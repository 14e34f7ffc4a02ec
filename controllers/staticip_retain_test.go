package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

var _ = Describe("Static IPs under cleanupPolicy Retain", func() {
	It("keeps the lease of every VM it keeps, also when the pool is deleted", func(ctx context.Context) {
		sc := startStaticScenario(operatorOptions{}, []string{"10.0.0.10-10.0.0.30"}, 1)
		fresh := getPool(sc.pool)
		patch := client.MergeFrom(fresh.DeepCopy())
		fresh.Spec.CleanupPolicy = afv1.CleanupPolicyRetain
		Expect(k8s.Patch(ctx, fresh, patch)).To(Succeed())

		Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 2)).To(Succeed())
		Eventually(func(g Gomega) {
			sc.checkInvariants()
			g.Expect(boundAgentsOf(sc.pool)).To(Equal(2))
		}, 120*time.Second, 500*time.Millisecond).Should(Succeed())
		held := map[string]string{} // VsphereAgent -> address
		for _, va := range vsphereAgents(sc.pool) {
			Expect(va.Status.StaticIP).NotTo(BeNil())
			held[va.Name] = va.Status.StaticIP.Address
		}
		Expect(held).To(HaveLen(2))

		By("scaling down to 1: the released VM is kept, and so is its lease")
		Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(sc.pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Consistently(func(g Gomega) {
			sc.op.clock.Step(3 * time.Second) // past the release batch window: nothing may be released
			g.Expect(poolVMs(sc.pool)).To(HaveLen(2), "Retain keeps the VM")
			heldNow := map[string]string{}
			for _, c := range sc.list(ipamClaimGVK) {
				if h := c.GetLabels()[afv1.LabelVsphereAgent]; h != "" {
					heldNow[h] = c.GetName()
				}
			}
			for name := range held {
				g.Expect(heldNow).To(HaveKey(name), "the lease of kept VM %s stays", name)
			}
		}, 5*time.Second, 250*time.Millisecond).Should(Succeed())
		sc.checkInvariants()

		By("deleting the pool: kept VMs keep their leases, no longer owned by the pool; the spare is removed")
		deletePoolAndWait(sc.pool)
		Eventually(func(g Gomega) {
			retained := 0
			for _, c := range sc.list(ipamClaimGVK) {
				h := c.GetLabels()[afv1.LabelVsphereAgent]
				if h == "" {
					continue
				}
				g.Expect(c.GetLabels()["agent-forge.containeroo.ch/lease-state"]).To(Equal("Retained"), "lease %s", c.GetName())
				for _, ref := range c.GetOwnerReferences() {
					g.Expect(ref.UID).NotTo(Equal(sc.pool.UID), "a retained lease is not owned by the deleted pool")
				}
				retained++
			}
			g.Expect(retained).To(Equal(2))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func() int {
			n := 0
			for _, c := range sc.list(ipamClaimGVK) {
				if c.GetLabels()[afv1.LabelVsphereAgent] != "" && c.GetDeletionTimestamp() == nil {
					n++
				}
			}
			return n
		}, 3*time.Second, 250*time.Millisecond).Should(Equal(2), "garbage collection does not free an address a kept VM uses")
	})
})

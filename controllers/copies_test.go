package controllers_test

import (
	"context"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Copies of the pool's VMs", func() {
	It("keeps a clone, a template and a powered-off replica through scale-down, the orphan scan and pool deletion under Delete, each reported once", func(ctx context.Context) {
		op, s, d, p := startPoolWithISO(operatorOptions{orphanScan: time.Minute}, func(p *afv1.VsphereAgentPool) {
			p.Spec.CleanupPolicy = afv1.CleanupPolicyDelete
		})
		poolFolder, otherFolder := "agent-forge/"+s.Namespace, "agent-forge/"+s.Namespace+"-dr"
		Expect(vc.EnsureFolder(ctx, otherFolder)).To(Succeed())

		By("scaling up to one worker")
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(p) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		vas := vsphereAgents(p)
		Expect(vas).To(HaveLen(1))
		orig := vas[0].Status.VM
		Expect(orig.InstanceUUID).To(Equal(string(vas[0].UID)))

		By("copying its VM with vCenter's clone call: a powered-on clone elsewhere, a template and a powered-off replica in the pool's folder")
		copies := map[string]vcsim.CloneOptions{
			"clone":    {Name: orig.Name + "-clone", Folder: otherFolder, PowerOn: true},
			"template": {Name: orig.Name + "-template", Folder: poolFolder, Template: true},
			"replica":  {Name: orig.Name + "-replica", Folder: poolFolder},
		}
		uuids := map[string]string{} // instance UUID -> name
		for _, opts := range copies {
			uuid, err := vc.CloneVM(ctx, orig.InstanceUUID, opts)
			Expect(err).NotTo(HaveOccurred())
			uuids[uuid] = opts.Name
		}
		DeferCleanup(func(ctx context.Context) {
			for uuid := range uuids {
				destroyInSimulator(ctx, uuid)
			}
		})
		// Every destroy the simulator receives, checked at the call: never one of a copy.
		var mu sync.Mutex
		destroyed := map[string]bool{}
		vc.OnVMCall(func(c vcsim.VMCall) {
			if c.Method == vcsim.MethodDestroyVM {
				mu.Lock()
				destroyed[c.InstanceUUID] = true
				mu.Unlock()
			}
		})
		DeferCleanup(func() { vc.OnVMCall(nil) }) // not DeferCleanup(vc.OnVMCall, nil): Ginkgo calls it through reflect, which refuses an untyped nil
		poolUID := string(getPool(p).UID)
		marked := func() []string {
			var names []string
			for _, vm := range poolVMs(p) {
				names = append(names, vm.Name)
			}
			return names
		}
		Expect(marked()).To(HaveLen(4), "the copies carry the pool's marker, as on a real vCenter")

		By("scaling down: the original VM is destroyed, the copies stay")
		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		Eventually(func() bool { return vc.VMByInstanceUUID(orig.InstanceUUID) == nil }, 90*time.Second, 250*time.Millisecond).Should(BeTrue())
		Eventually(func() []afv1.VsphereAgent { return vsphereAgents(p) }, 60*time.Second, 250*time.Millisecond).Should(BeEmpty())

		By("the orphan scan: each copy reported once and counted, none destroyed")
		copyEvents := func() map[string]int32 {
			out := map[string]int32{}
			for _, e := range poolEvents(ctx, p) {
				if e.Reason == afv1.ReasonCopyFound {
					for uuid, name := range uuids {
						if strings.Contains(e.Message, uuid) && strings.Contains(e.Message, name) {
							out[uuid] += eventOccurrences(e)
						}
					}
				}
			}
			return out
		}
		op.clock.Step(2 * time.Minute)
		pokePool(p)
		Eventually(func() int32 { return getPool(p).Status.Copies }, 60*time.Second, 250*time.Millisecond).Should(BeEquivalentTo(3))
		Eventually(copyEvents, 30*time.Second, 250*time.Millisecond).Should(HaveLen(3))
		for i := 0; i < 2; i++ { // later scans report nothing again
			op.clock.Step(2 * time.Minute)
			pokePool(p)
		}
		Consistently(copyEvents, 5*time.Second, 250*time.Millisecond).Should(SatisfyAll(HaveLen(3), HaveEach(BeEquivalentTo(1))))
		Expect(getPool(p).Status.Copies).To(BeEquivalentTo(3))
		Expect(getPool(p).Status.VMs).To(BeZero(), "copies are not the pool's VMs")
		Expect(poolEventReasons(ctx, p)).NotTo(ContainElements("OrphanDestroyed", "OrphanCleanupFailed"))

		By("deleting the pool under Delete: the copies stay, reported in PoolDeleted, not again by CopyFound")
		deletePoolAndWait(p)
		// Events are recorded asynchronously: the pool can be gone before its last Event is stored.
		Eventually(func() []string { return poolEventMessages(ctx, p) }, 30*time.Second, 250*time.Millisecond).
			Should(ContainElement(ContainSubstring("3 copy(ies) of its VMs kept")))
		Expect(copyEvents()).To(SatisfyAll(HaveLen(3), HaveEach(BeEquivalentTo(1))))
		for uuid, name := range uuids {
			Expect(vc.VMByInstanceUUID(uuid)).NotTo(BeNil(), "copy %s destroyed", name)
		}
		left, err := vs.ListPoolVMs(ctx, vcsim.Datacenter, poolUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(left).To(HaveLen(3))
		for _, vm := range left {
			Expect(vm.IsCopy()).To(BeTrue(), vm.Name)
		}
		mu.Lock()
		defer mu.Unlock()
		Expect(destroyed).To(HaveKey(orig.InstanceUUID))
		for uuid, name := range uuids {
			Expect(destroyed).NotTo(HaveKey(uuid), "the simulator received a destroy of copy %s", name)
		}
	})
})

// destroyInSimulator removes a VM the spec made, as an administrator (powered off first).
func destroyInSimulator(ctx context.Context, instanceUUID string) {
	GinkgoHelper()
	vm := vc.VMByInstanceUUID(instanceUUID)
	if vm == nil {
		return
	}
	c, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = c.Logout(ctx) }()
	obj := vcsim.NewObjectVM(c, vm.Self)
	if t, err := obj.PowerOff(ctx); err == nil {
		_ = t.Wait(ctx)
	}
	t, err := obj.Destroy(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(t.Wait(ctx)).To(Succeed())
}

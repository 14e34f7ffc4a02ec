package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Crash recovery and orphans", func() {
	It("finds a VM created before a crash by its instance UUID, never creates a second one, and cleans it up", func(ctx context.Context) {
		s := newScenario()
		startWorld(s, world.Options{Register: func(world.VM) bool { return false }})
		p := newPool(s, "workers")
		p.Spec.Paused = true // no operator action until the "crash" is staged
		pool := createPool(p)
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		DeferCleanup(deletePoolAndWait, pool)
		Eventually(func() string { return isoPath(getPool(pool)) }, 90*time.Second, 200*time.Millisecond).Should(BeEmpty())
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Paused = false })
		Eventually(func() string { return isoPath(getPool(pool)) }, 90*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Paused = true })
		fresh := getPool(pool)

		By("staging a crash: the VM exists under the VsphereAgent's UID, its status was never written")
		va := &afv1.VsphereAgent{}
		va.Namespace, va.Name = s.Namespace, "crashed-vm"
		va.Labels = map[string]string{afv1.LabelPool: pool.Name}
		va.Spec.PoolRef.Name = pool.Name
		createdBy(va, fresh)
		Expect(k8s.Create(ctx, va)).To(Succeed())
		spec := vc.VMSpec(va.Name, vsphere.Ownership{OwnerUID: string(va.UID), OwnerName: va.Namespace + "/" + va.Name,
			PoolUID: string(fresh.UID), PoolName: fresh.Namespace + "/" + fresh.Name})
		spec.Folder, spec.ISOPath = "agent-forge/"+s.Namespace, fresh.Status.ISO.Path
		created, err := vs.CreateVM(ctx, spec)
		Expect(err).NotTo(HaveOccurred())

		By("resuming: the operator adopts the VM instead of creating another")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Paused = false; p.Spec.CleanupPolicy = afv1.CleanupPolicyRetain })
		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(va), va)).To(Succeed())
			return va.Status.VM.InstanceUUID
		}, 90*time.Second, 250*time.Millisecond).Should(Equal(created.InstanceUUID))
		Expect(va.Status.VM.BIOSUUID).To(Equal(created.BIOSUUID))
		Expect(vc.CountVMsNamed(va.Name)).To(Equal(1))
		Eventually(func() []string { return objectEventReasons(ctx, va.Namespace, "VsphereAgent", va.Name) }, 10*time.Second, 250*time.Millisecond).
			Should(ContainElement("VMAdopted"))
		Consistently(func() []string { return batchLines(ctx, pool, "VMCreated", va) }, 3*time.Second, 250*time.Millisecond).Should(BeEmpty(), "past the Event batch interval")

		By("deleting it under Delete: the VM is destroyed by instance UUID")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.CleanupPolicy = afv1.CleanupPolicyDelete })
		Expect(k8s.Delete(ctx, va)).To(Succeed())
		Eventually(func() int { return vc.CountVMsNamed(va.Name) }, 90*time.Second, 250*time.Millisecond).Should(BeZero())
	})

	It("reports and, under Delete, destroys an orphan VM carrying the pool's marker", func(ctx context.Context) {
		s := newScenario()
		orphanFolder := "agent-forge/" + s.Namespace + "-orphans" // not the world's folder: its VMs never register
		Expect(vc.EnsureFolder(ctx, orphanFolder)).To(Succeed())
		startWorld(s, world.Options{})
		op := startOperator(operatorOptions{orphanScan: time.Minute})
		DeferCleanup(op.stop)
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)
		Eventually(func() string { return isoPath(getPool(pool)) }, 90*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())
		fresh := getPool(pool)
		spec := vc.VMSpec("orphan-"+s.Namespace, vsphere.Ownership{OwnerUID: string(uuid.NewUUID()), PoolUID: string(fresh.UID)})
		spec.Folder = orphanFolder
		_, err := vs.CreateVM(ctx, spec)
		Expect(err).NotTo(HaveOccurred())
		Expect(vc.CountVMsNamed(spec.Name)).To(Equal(1))

		op.clock.Step(2 * time.Minute)
		pokePool(pool)
		Eventually(func() int { return vc.CountVMsNamed(spec.Name) }, 90*time.Second, 250*time.Millisecond).Should(BeZero())
		vms, err := vs.ListPoolVMs(ctx, vcsim.Datacenter, string(fresh.UID))
		Expect(err).NotTo(HaveOccurred())
		Expect(vms).To(BeEmpty())
	})
})

var _ = Describe("Two pools claiming one NodePool", func() {
	It("lets the first serve and refuses the second with a condition", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenario()
		d := startWorld(s, world.Options{})
		first := createPool(newPool(s, "first"))
		DeferCleanup(deletePoolAndWait, first)
		Eventually(func() string { return conditionReason(getPool(first), afv1.ConditionNodePoolClaimed) }, 10*time.Second).Should(Equal("Claimed"))
		time.Sleep(1100 * time.Millisecond) // creationTimestamp has second precision: make the order unambiguous
		second := createPool(newPool(s, "second"))
		DeferCleanup(deletePoolAndWait, second)
		Eventually(func() string { return conditionReason(getPool(second), afv1.ConditionNodePoolClaimed) }, 10*time.Second).Should(Equal("NodePoolAlreadyClaimed"))
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(first) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(vsphereAgents(second)).To(BeEmpty())
		Expect(conditionReason(getPool(second), afv1.ConditionReady)).To(Equal("NodePoolAlreadyClaimed"))
	})
})

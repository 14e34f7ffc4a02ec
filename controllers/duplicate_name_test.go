package controllers_test

import (
	"context"
	"path"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// createForeignVM creates a VM without any ownership marker in the scenario's VM folder (someone else's).
func createForeignVM(ctx context.Context, folderPath, name string) types.ManagedObjectReference {
	GinkgoHelper()
	gc, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = gc.Logout(ctx) }()
	f := find.NewFinder(gc.Client, false)
	dc, err := f.Datacenter(ctx, vcsim.Datacenter)
	Expect(err).NotTo(HaveOccurred())
	f.SetDatacenter(dc)
	folder, err := f.Folder(ctx, path.Join("/", vcsim.Datacenter, "vm", folderPath))
	Expect(err).NotTo(HaveOccurred())
	rp, err := f.ResourcePool(ctx, vcsim.ResourcePool)
	Expect(err).NotTo(HaveOccurred())
	task, err := folder.CreateVM(ctx, types.VirtualMachineConfigSpec{Name: name, GuestId: "otherGuest64", NumCPUs: 1, MemoryMB: 128,
		Files: &types.VirtualMachineFileInfo{VmPathName: "[" + vcsim.Datastore + "]"}}, rp, nil)
	Expect(err).NotTo(HaveOccurred())
	info, err := task.WaitForResult(ctx)
	Expect(err).NotTo(HaveOccurred())
	return info.Result.(types.ManagedObjectReference)
}

// foreignVMState reads what the spec checks stays untouched on the foreign VM.
func foreignVMState(ctx context.Context, ref types.ManagedObjectReference) (mo.VirtualMachine, error) {
	gc, err := vc.Login(ctx)
	if err != nil {
		return mo.VirtualMachine{}, err
	}
	defer func() { _ = gc.Logout(ctx) }()
	var vm mo.VirtualMachine
	err = vcsim.NewObjectVM(gc, ref).Properties(ctx, ref, []string{"name", "config.instanceUuid", "config.extraConfig", "runtime.powerState"}, &vm)
	return vm, err
}

var _ = Describe("A foreign VM holds our VM's name (vCenter answers DuplicateName)", func() {
	It("fails that VsphereAgent for good (never retrying the name), replaces it under a new name, leaves the foreign VM alone and expires the failed one", func(ctx context.Context) {
		op, s, d, pool := startPoolWithISO(operatorOptions{}, nil)

		folder := "agent-forge/" + s.Namespace
		foreign := createForeignVM(ctx, folder, "foreign-"+s.Namespace)
		before, err := foreignVMState(ctx, foreign)
		Expect(err).NotTo(HaveOccurred())

		// vCenter refuses a create whose name is taken in the folder (the simulator does not check names
		// on CreateVM, so this rule plays vCenter): the first create in this scenario's folder only. Once
		// by a filter, not MaxCount: the simulator reads MaxCount's counter without a lock on every call.
		var fired atomic.Bool
		rule := &simulator.FaultInjectionRule{MethodName: "CreateVM_Task", ObjectType: "Folder", ObjectName: s.Namespace,
			Probability: 1, FaultType: simulator.FaultTypeCustom, Enabled: true,
			InclusionPropertyFilter: func(mo.Reference) bool { return fired.CompareAndSwap(false, true) },
			Fault:                   &types.DuplicateName{Name: before.Name, Object: foreign}}
		vc.Service().AddFaultRule(rule)
		DeferCleanup(func() { vc.Service().ClearFaultRules() })

		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())

		By("the refused VsphereAgent becomes Failed with reason DuplicateName and says so in an Event")
		var failed afv1.VsphereAgent
		Eventually(func(g Gomega) {
			var found bool
			for _, va := range vsphereAgents(pool) {
				if va.Status.VM.Phase == afv1.VMPhaseFailed {
					failed, found = va, true
				}
			}
			g.Expect(found).To(BeTrue(), "a Failed VsphereAgent")
			g.Expect(failed.Status.VM.Reason).To(Equal(afv1.ReasonDuplicateName))
			g.Expect(conditionOf(failed.Status.Conditions, afv1.ConditionVMCreated)).To(Equal("False/" + afv1.ReasonDuplicateName))
			g.Expect(objectEventReasons(ctx, failed.Namespace, "VsphereAgent", failed.Name)).To(ContainElement(afv1.ReasonDuplicateName))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())

		By("the pool replaces it under a new name and the AgentMachine is served")
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		vms := poolVMs(pool)
		Expect(vms).To(HaveLen(1))
		Expect(vms[0].Name).NotTo(Equal(failed.Name))
		Expect(vc.CountVMsNamed(failed.Name)).To(BeZero(), "the refused name is never tried again")
		Expect(getPool(pool).Status.WaitingAgentMachines).To(BeZero())

		By("the foreign VM is untouched")
		after, err := foreignVMState(ctx, foreign)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Runtime.PowerState).To(Equal(before.Runtime.PowerState))
		Expect(after.Config.InstanceUuid).To(Equal(before.Config.InstanceUuid))
		Expect(after.Name).To(Equal(before.Name))

		By("the Failed VsphereAgent expires like other failures; its cleanup destroys nothing foreign")
		op.clock.Step(2 * time.Hour) // past FailedRetention
		pokePool(pool)
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKeyFromObject(&failed), &afv1.VsphereAgent{})
		}, 90*time.Second, 200*time.Millisecond).Should(MatchError(ContainSubstring("not found")))
		_, err = foreignVMState(ctx, foreign)
		Expect(err).NotTo(HaveOccurred(), "the foreign VM still exists")
		Expect(poolVMs(pool)).To(HaveLen(1))
	})
})

// conditionOf renders a condition as "Status/Reason" ("" when absent).
func conditionOf(conds []metav1.Condition, t string) string {
	for _, c := range conds {
		if c.Type == t {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}

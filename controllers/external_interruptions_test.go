package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Someone else acts on the pool's VMs in vCenter (issue #24): each spec does it as a vSphere user would,
// through govmomi against the simulator, then moves the operator's clock past its VM check interval and
// asserts what vCenter and the API server show.
var _ = Describe("External interruptions in vCenter", func() {
	It("replaces an unbound VM someone destroyed, and touches no other VM", func(ctx context.Context) {
		op, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{BindingDisabled: true}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		vas := vsphereAgents(pool)
		gone, kept := vas[0], vas[1]
		keptVersion := vmChangeVersion(ctx, kept.Status.VM.InstanceUUID)

		By("destroying one VM in vCenter")
		user := loginVSphereUser(ctx)
		vm := user.vm(ctx, gone.Status.VM.InstanceUUID)
		powerOff(ctx, vm)
		task, err := vm.Destroy(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(task.Wait(ctx)).To(Succeed())

		confirmVMGone(ctx, op, pool, &gone)
		Eventually(func() string { return vaPhaseReason(ctx, &gone) }, 60*time.Second, 250*time.Millisecond).
			Should(Equal(string(afv1.VMPhaseFailed) + "/VMNotFound"))
		Expect(vmHealthyReason(ctx, &gone)).To(Equal("VMNotFound"))
		Eventually(func() []string { return objectEventReasons(ctx, gone.Namespace, "VsphereAgent", gone.Name) }, 10*time.Second, 250*time.Millisecond).
			Should(ContainElement("VMNotFound"))

		By("the pool serves the demand again with a new VM")
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(poolVMs(pool)).To(HaveLen(2))
		Expect(vmChangeVersion(ctx, kept.Status.VM.InstanceUUID)).To(Equal(keptVersion), "the other VM was not touched")
	})

	It("reports a destroyed VM that backs a Machine and creates no duplicate while the Machine references its Agent", func(ctx context.Context) {
		op, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return machineRefs(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
		vas := vsphereAgents(pool)
		gone, kept := vas[0], vas[1]
		keptVersion := vmChangeVersion(ctx, kept.Status.VM.InstanceUUID)

		user := loginVSphereUser(ctx)
		vm := user.vm(ctx, gone.Status.VM.InstanceUUID)
		powerOff(ctx, vm)
		task, err := vm.Destroy(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(task.Wait(ctx)).To(Succeed())

		confirmVMGone(ctx, op, pool, &gone)
		Eventually(func() string { return vmHealthyReason(ctx, &gone) }, 60*time.Second, 250*time.Millisecond).Should(Equal("VMNotFound"))
		Eventually(func() []string { return objectEventReasons(ctx, gone.Namespace, "VsphereAgent", gone.Name) }, 10*time.Second, 250*time.Millisecond).
			Should(ContainElement("VMNotFound"))
		Consistently(func(g Gomega) {
			g.Expect(poolVMs(pool)).To(HaveLen(1))
			g.Expect(vsphereAgents(pool)).To(HaveLen(2))
		}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(vaPhaseReason(ctx, &gone)).To(HavePrefix(string(afv1.VMPhaseBound)))
		Expect(vmChangeVersion(ctx, kept.Status.VM.InstanceUUID)).To(Equal(keptVersion), "the other VM was not touched")
	})

	It("powers a discovery VM on again after someone powered it off", func(ctx context.Context) {
		op, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{BindingDisabled: true}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		va := vsphereAgents(pool)[0]

		user := loginVSphereUser(ctx)
		vm := user.vm(ctx, va.Status.VM.InstanceUUID)
		powerOff(ctx, vm)
		op.clock.Step(3 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func() types.VirtualMachinePowerState { return powerState(ctx, vm) }, 60*time.Second, 250*time.Millisecond).
			Should(Equal(types.VirtualMachinePowerStatePoweredOn))
		Eventually(func() string { return vmHealthyReason(ctx, &va) }, 10*time.Second, 250*time.Millisecond).Should(Equal("VMPoweredOn"))
		Eventually(func() []string { return objectEventReasons(ctx, va.Namespace, "VsphereAgent", va.Name) }, 10*time.Second, 250*time.Millisecond).
			Should(ContainElement("VMPoweredOn"))
		Expect(poolVMs(pool)).To(HaveLen(1), "the same VM, no replacement")
		Expect(vsphereAgents(pool)).To(HaveLen(1))
	})

	It("leaves a bound VM someone powered off off, and reports it", func(ctx context.Context) {
		op, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return machineRefs(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		va := vsphereAgents(pool)[0]

		user := loginVSphereUser(ctx)
		vm := user.vm(ctx, va.Status.VM.InstanceUUID)
		powerOff(ctx, vm)
		op.clock.Step(3 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func() string { return vmHealthyReason(ctx, &va) }, 60*time.Second, 250*time.Millisecond).Should(Equal("VMPoweredOff"))
		Eventually(func() []string { return objectEventReasons(ctx, va.Namespace, "VsphereAgent", va.Name) }, 10*time.Second, 250*time.Millisecond).
			Should(ContainElement("VMPoweredOff"))
		Consistently(func(g Gomega) {
			g.Expect(powerState(ctx, vm)).To(Equal(types.VirtualMachinePowerStatePoweredOff))
			g.Expect(poolVMs(pool)).To(HaveLen(1))
			g.Expect(vsphereAgents(pool)).To(HaveLen(1))
		}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
	})

	It("keeps tracking a VM renamed and moved to another folder by its instance UUID, and still cleans it up on scale-down", func(ctx context.Context) {
		op, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return machineRefs(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		va := vsphereAgents(pool)[0]

		By("renaming the VM and moving it out of the pool's folder")
		other := "agent-forge/" + s.Namespace + "-elsewhere"
		Expect(vc.EnsureFolder(ctx, other)).To(Succeed())
		user := loginVSphereUser(ctx)
		vm := user.vm(ctx, va.Status.VM.InstanceUUID)
		task, err := vm.Rename(ctx, "renamed-"+s.Namespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(task.Wait(ctx)).To(Succeed())
		folder, err := user.finder.Folder(ctx, "/"+vcsim.Datacenter+"/vm/"+other)
		Expect(err).NotTo(HaveOccurred())
		task, err = folder.MoveInto(ctx, []types.ManagedObjectReference{vm.Reference()})
		Expect(err).NotTo(HaveOccurred())
		Expect(task.Wait(ctx)).To(Succeed())

		op.clock.Step(3 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func() string { return vmHealthyReason(ctx, &va) }, 60*time.Second, 250*time.Millisecond).Should(Equal("VMMoved"))
		Expect(vmHealthyMessage(ctx, &va)).To(And(ContainSubstring("renamed-"+s.Namespace), ContainSubstring(other)))
		Eventually(func() []string { return objectEventReasons(ctx, va.Namespace, "VsphereAgent", va.Name) }, 10*time.Second, 250*time.Millisecond).
			Should(ContainElement("VMMoved"))
		Consistently(func() int { return len(poolVMs(pool)) }, 2*time.Second, 250*time.Millisecond).Should(Equal(1))

		By("scaling down: ownership still holds, so the moved VM is destroyed")
		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		Eventually(func() int { return len(poolVMs(pool)) }, 90*time.Second, 250*time.Millisecond).Should(BeZero())
		Expect(vc.CountVMsNamed("renamed-" + s.Namespace)).To(BeZero())
	})
})

// vsphereUser is someone working in vCenter next to the operator (its own session).
type vsphereUser struct {
	c      *object.SearchIndex
	dc     *object.Datacenter
	finder *find.Finder
}

func loginVSphereUser(ctx context.Context) *vsphereUser {
	GinkgoHelper()
	gc, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) { _ = gc.Logout(ctx) })
	finder := find.NewFinder(gc.Client, false)
	dc, err := finder.Datacenter(ctx, vcsim.Datacenter)
	Expect(err).NotTo(HaveOccurred())
	finder.SetDatacenter(dc)
	return &vsphereUser{c: object.NewSearchIndex(gc.Client), dc: dc, finder: finder}
}

// vm finds a VM by instance UUID.
func (u *vsphereUser) vm(ctx context.Context, instanceUUID string) *object.VirtualMachine {
	GinkgoHelper()
	instance := true
	ref, err := u.c.FindByUuid(ctx, u.dc, instanceUUID, true, &instance)
	Expect(err).NotTo(HaveOccurred())
	Expect(ref).NotTo(BeNil(), "VM %s", instanceUUID)
	return ref.(*object.VirtualMachine)
}

func powerOff(ctx context.Context, vm *object.VirtualMachine) {
	GinkgoHelper()
	task, err := vm.PowerOff(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(task.Wait(ctx)).To(Succeed())
}

func powerState(ctx context.Context, vm *object.VirtualMachine) types.VirtualMachinePowerState {
	GinkgoHelper()
	s, err := vm.PowerState(ctx)
	Expect(err).NotTo(HaveOccurred())
	return s
}

// vmChangeVersion is config.changeVersion of the VM with that instance UUID (it moves on every change).
func vmChangeVersion(ctx context.Context, instanceUUID string) string {
	GinkgoHelper()
	vm := loginVSphereUser(ctx).vm(ctx, instanceUUID)
	var m mo.VirtualMachine
	Expect(vm.Properties(ctx, vm.Reference(), []string{"config.changeVersion", "runtime.powerState"}, &m)).To(Succeed())
	return m.Config.ChangeVersion + "/" + string(m.Runtime.PowerState)
}

// confirmVMGone moves the clock past the VM check interval so that a look-up finds the VM missing, then
// past the confirmation delay so that the confirming look-up declares it gone.
func confirmVMGone(ctx context.Context, op *operator, pool *afv1.VsphereAgentPool, va *afv1.VsphereAgent) {
	GinkgoHelper()
	op.clock.Step(3 * time.Minute)
	// Poked until seen: a pass that ran before vCenter's destroy was visible, or whose write conflicted
	// with the poke, looks again only after VMCheckInterval in real time.
	Eventually(func() string {
		pokeVsphereAgents(pool)
		return vmHealthyReason(ctx, va)
	}, 60*time.Second, 5*time.Second).Should(Equal(afv1.ReasonVMNotFoundUnconfirmed))
	op.clock.Step(90 * time.Second)
	pokeVsphereAgents(pool)
}

func freshVA(ctx context.Context, va *afv1.VsphereAgent) *afv1.VsphereAgent {
	GinkgoHelper()
	out := &afv1.VsphereAgent{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(va), out)).To(Succeed())
	return out
}

func vaPhaseReason(ctx context.Context, va *afv1.VsphereAgent) string {
	f := freshVA(ctx, va)
	return string(f.Status.VM.Phase) + "/" + f.Status.VM.Reason
}

func vmHealthyReason(ctx context.Context, va *afv1.VsphereAgent) string {
	if c := meta.FindStatusCondition(freshVA(ctx, va).Status.Conditions, afv1.ConditionVMHealthy); c != nil {
		return c.Reason
	}
	return ""
}

func vmHealthyMessage(ctx context.Context, va *afv1.VsphereAgent) string {
	if c := meta.FindStatusCondition(freshVA(ctx, va).Status.Conditions, afv1.ConditionVMHealthy); c != nil {
		return c.Message
	}
	return ""
}

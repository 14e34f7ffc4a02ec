package controllers_test

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/vim25/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Someone else deletes objects the pool depends on (issue #24): an Agent, the Machine whose demand a VM
// is being created for, the InfraEnv.
var _ = Describe("External interruptions of the hub's objects", func() {
	It("waits for an Agent deleted by hand to register again at the host's next boot, and prepares it again", func(ctx context.Context) {
		op, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{BindingDisabled: true}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		va := vsphereAgents(pool)[0]
		first := getAgent(ctx, s.Namespace, va.Status.VM.AgentName)

		By("deleting the Agent: assisted-service deregisters the host, its agent stops asking")
		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(func() string { return vaPhaseReason(ctx, &va) }, 30*time.Second, 250*time.Millisecond).
			Should(Equal(string(afv1.VMPhaseProvisioning) + "/AgentMissing"))
		Consistently(func(g Gomega) {
			g.Expect(poolVMs(pool)).To(HaveLen(1), "the sound VM is kept, no second one")
			g.Expect(vsphereAgents(pool)).To(HaveLen(1))
		}, 2*time.Second, 250*time.Millisecond).Should(Succeed())

		By("someone powers the VM off; the operator powers the discovery VM on again: a boot, the host registers")
		vm := loginVSphereUser(ctx).vm(ctx, va.Status.VM.InstanceUUID)
		powerOff(ctx, vm)
		Eventually(func() bool { return d.HostPoweredOn(va.Status.VM.BIOSUUID) }, 10*time.Second, 100*time.Millisecond).Should(BeFalse())
		op.clock.Step(3 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func() types.VirtualMachinePowerState { return powerState(ctx, vm) }, 60*time.Second, 250*time.Millisecond).
			Should(Equal(types.VirtualMachinePowerStatePoweredOn))
		Eventually(func(g Gomega) {
			g.Expect(vaPhaseReason(ctx, &va)).To(Equal(string(afv1.VMPhaseAvailable) + "/AgentPrepared"))
			a := getAgent(ctx, s.Namespace, freshVA(ctx, &va).Status.VM.AgentName)
			g.Expect(a.GetUID()).NotTo(Equal(first.GetUID()), "a new registration")
			g.Expect(a.GetLabels()).To(HaveKeyWithValue(afv1.LabelPool, pool.Name))
			g.Expect(a.GetLabels()).To(HaveKeyWithValue("example.com/pool", s.AgentLabels["example.com/pool"]))
			approved, _, _ := unstructured.NestedBool(a.Object, "spec", "approved")
			g.Expect(approved).To(BeTrue())
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(vmNames(pool)).To(Equal([]string{va.Status.VM.Name}), "the same VM serves the demand")
	})

	It("replaces the VM after the registration timeout when an Agent deleted by hand never comes back", func(ctx context.Context) {
		op, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{BindingDisabled: true}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		va := vsphereAgents(pool)[0]
		op.clock.Step(25 * time.Minute) // the VM is older than registrationTimeout: the wait counts from the loss
		Expect(k8s.Delete(ctx, getAgent(ctx, s.Namespace, va.Status.VM.AgentName))).To(Succeed())
		Eventually(func() string { return vaPhaseReason(ctx, &va) }, 30*time.Second, 250*time.Millisecond).
			Should(Equal(string(afv1.VMPhaseProvisioning) + "/AgentMissing"))
		pokeVsphereAgents(pool)
		Consistently(func() bool { return vc.VMByInstanceUUID(va.Status.VM.InstanceUUID) != nil }, 2*time.Second, 250*time.Millisecond).
			Should(BeTrue(), "not destroyed before registrationTimeout from the loss")

		op.clock.Step(21 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func() string { return vaPhaseReason(ctx, &va) }, 60*time.Second, 250*time.Millisecond).
			Should(Equal(string(afv1.VMPhaseFailed) + "/RegistrationTimeout"))
		Expect(vc.VMByInstanceUUID(va.Status.VM.InstanceUUID)).To(BeNil(), "the silent VM is destroyed")
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(poolVMs(pool)).To(HaveLen(1))
	})

	It("releases a VM whose Machine was deleted while the VM was being created: no leak, no second VM", func(ctx context.Context) {
		_, s, d, pool := startPoolWithISO(operatorOptions{}, nil)
		poolUID := string(getPool(pool).UID)
		var creates atomic.Int32
		creating, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		vc.OnVMCall(func(c vcsim.VMCall) {
			if c.Method != vcsim.MethodCreateVM || c.PoolUID != poolUID {
				return
			}
			creates.Add(1)
			once.Do(func() { close(creating) })
			select { // the simulator lets the call go on after 10 s anyway
			case <-release:
			case <-time.After(9 * time.Second):
			}
		})
		DeferCleanup(func() { vc.OnVMCall(nil) })

		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(creating, 60*time.Second).Should(BeClosed())
		By("the demand disappears while vCenter creates the VM")
		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		// The operator counts no demand for a deleting Machine, so the spec waits for CAPI (a real process)
		// to mark it deleting, not for it to go: when the Machine is deleted before the provider first
		// reconciled its adopted AgentMachine, the provider adds its deprovision finalizer without the
		// pre-terminate hook and waits for a hook reason CAPI never reports, so the Machine stays Deleting
		// (upstream behaviour, docs/troubleshooting.md). On a loaded machine CAPI can also take longer than
		// the simulator holds the create (10 s), and the VM is then created first: the outcome below must
		// hold either way.
		Eventually(func(g Gomega) {
			ms, err := d.MachinesOf(ctx, s.NodePool)
			g.Expect(err).NotTo(HaveOccurred())
			for _, m := range ms {
				g.Expect(m.GetDeletionTimestamp()).NotTo(BeNil(), "Machine %s deleting", m.GetName())
			}
		}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
		close(release)

		Eventually(func(g Gomega) {
			g.Expect(poolVMs(pool)).To(BeEmpty())
			g.Expect(vsphereAgents(pool)).To(BeEmpty())
			list := newAgentList()
			g.Expect(k8s.List(ctx, list, client.InNamespace(s.Namespace))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), "no Agent left behind")
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(creates.Load()).To(BeEquivalentTo(1), "one VM for one demand")
	})

	It("deletes the Agent assisted-service creates after the VM it registered from was destroyed, and no other", func(ctx context.Context) {
		_, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{Register: func(world.VM) bool { return false }}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		var va afv1.VsphereAgent
		Eventually(func(g Gomega) {
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(1))
			g.Expect(vas[0].Status.VM.MACAddress).NotTo(BeEmpty())
			va = vas[0]
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		host := world.VM{Name: va.Status.VM.Name, BIOSUUID: va.Status.VM.BIOSUUID, InstanceUUID: va.Status.VM.InstanceUUID, MAC: va.Status.VM.MACAddress}

		By("the demand goes before the host's registration reached the hub: the VM is destroyed, no Agent to delete yet")
		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(vsphereAgents(pool)).To(BeEmpty())
			g.Expect(poolVMs(pool)).To(BeEmpty())
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())

		By("a host with the same MAC but another serial registers (a static-IP lease reuses MACs): not the destroyed VM's")
		other := host
		other.BIOSUUID = "4203aaaa-bbbb-cccc-dddd-eeeeffff0001"
		stranger, err := d.RegisterHost(ctx, other, s.InfraEnv)
		Expect(err).NotTo(HaveOccurred())

		By("the destroyed VM's registration arrives: assisted-service creates its Agent")
		late, err := d.RegisterHost(ctx, host, s.InfraEnv)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKeyFromObject(late), agents.New(agents.AgentGVK))
		}, 30*time.Second, 250*time.Millisecond).Should(Satisfy(apierrors.IsNotFound), "the late Agent is deleted")
		Eventually(func() []string { return poolEventReasons(ctx, pool) }, 10*time.Second, 250*time.Millisecond).Should(ContainElement("OrphanAgentDeleted"))
		Consistently(func() error {
			return k8s.Get(ctx, client.ObjectKeyFromObject(stranger), agents.New(agents.AgentGVK))
		}, 2*time.Second, 250*time.Millisecond).Should(Succeed(), "an Agent whose serial is not the destroyed VM's is kept")
	})

	It("reports a deleted InfraEnv without touching bound VMs, and resumes with the new image when it is re-created", func(ctx context.Context) {
		sc := startImageScenario(ctx, 51, nil)

		By("deleting the InfraEnv")
		ie := agents.New(agents.InfraEnvGVK)
		Expect(k8s.Get(ctx, sc.s.InfraEnv, ie)).To(Succeed())
		Expect(k8s.Delete(ctx, ie)).To(Succeed())
		Eventually(func() string { return conditionReason(getPool(sc.pool), afv1.ConditionInfraEnvAvailable) }, 30*time.Second, 250*time.Millisecond).
			Should(Equal("InfraEnvNotFound"))
		Eventually(func() []string { return poolEventReasons(ctx, sc.pool) }, 10*time.Second, 250*time.Millisecond).Should(ContainElement("InfraEnvNotFound"))
		Consistently(func(g Gomega) {
			g.Expect(poolVMs(sc.pool)).To(HaveLen(3))
			g.Expect(boundAgentsOf(sc.pool)).To(Equal(2))
			sc.expectBoundCurrent(g)
		}, 3*time.Second, 250*time.Millisecond).Should(Succeed())

		By("re-creating it: assisted-service generates a new image")
		Expect(world.CreateInfraEnv(ctx, k8s, sc.s.InfraEnv)).To(Succeed())
		sc.srv.SetContent(52, 64*1024)
		created := sc.created.Add(30 * time.Minute)
		Expect(world.SetInfraEnvImage(ctx, k8s, sc.s.InfraEnv, sc.srv.URL(), created)).To(Succeed())
		Eventually(func() string { return conditionReason(getPool(sc.pool), afv1.ConditionInfraEnvAvailable) }, 30*time.Second, 250*time.Millisecond).
			Should(Equal("ISOURLAvailable"))
		Eventually(func() []string { return poolEventReasons(ctx, sc.pool) }, 10*time.Second, 250*time.Millisecond).Should(ContainElement("InfraEnvFound"))

		By("the unbound VM of the old image is replaced; the bound workers stay")
		Eventually(func(g Gomega) {
			g.Expect(vc.VMByInstanceUUID(sc.unbound.Status.VM.InstanceUUID)).To(BeNil())
			var replacement *afv1.VsphereAgent
			for _, va := range vsphereAgents(sc.pool) {
				if va.Status.VM.Phase == afv1.VMPhaseAvailable {
					replacement = va.DeepCopy()
				}
			}
			g.Expect(replacement).NotTo(BeNil())
			g.Expect(replacement.Status.VM.ISOPath).To(ContainSubstring(sc.srv.SHA256()))
			sc.expectBoundUntouched(g)
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
	})
})

// expectBoundCurrent: the bound workers keep their VsphereAgent and VM (the image is still current).
func (sc *imageScenario) expectBoundCurrent(g Gomega) {
	for _, was := range sc.bound {
		va := &afv1.VsphereAgent{}
		g.Expect(k8s.Get(context.Background(), key(was.Namespace, was.Name), va)).To(Succeed())
		g.Expect(va.DeletionTimestamp).To(BeNil())
		g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
		g.Expect(vc.VMByInstanceUUID(was.Status.VM.InstanceUUID)).NotTo(BeNil())
	}
}

package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

var _ = Describe("Moving from the upstream operator: adoption", func() {
	It("adopts upstream's VMs (1.0.2 and 1.1.0), serves pinned AgentMachines, scales down through an adopted VM, loses and duplicates nothing", func(ctx context.Context) {
		s := newScenario()
		d := startWorld(s, world.Options{})
		folder := "agent-forge/" + s.Namespace

		By("upstream's world: 2 workers on VMs it made, their AgentMachines pinned, one spare Agent unbound")
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		ams := waitingAgentMachines(ctx, s, 2)
		for _, am := range ams {
			pinAgentMachine(ctx, am)
		}
		pool := createUpstreamPool(s, nil)
		iso := upstreamISOPath(ctx, pool)
		shapes := []struct {
			name    string
			version upstreamVersion
			bound   bool
		}{{ams[0].Name, upstream102, true}, {ams[1].Name, upstream110, true}, {"np-retired-0", upstream110, false}}
		vas := map[string]*afv1.VsphereAgent{}
		agentOf := map[string]agents.Agent{}
		for _, sh := range shapes {
			va := createUpstreamVA(ctx, pool, sh.name, nil)
			notes := ""
			if sh.version == upstream110 {
				notes = afv1.UpstreamNotesMarkerPrefix + string(va.UID)
			}
			bios, mac := createUpstreamVM(ctx, upstreamVM{name: sh.name, folder: folder, notes: notes, iso: iso})
			a := agentOfVM(ctx, s.Namespace, mac, bios)
			prepareAgentAsUpstream(ctx, s, a.Name, sh.name)
			phase := afv1.VMPhaseAvailable
			if sh.bound {
				phase = afv1.VMPhaseBound
			}
			setUpstreamStatus(ctx, va, sh.version, afv1.VMStatus{BIOSUUID: bios, MACAddress: mac, Phase: phase,
				UpstreamVMRecord: afv1.UpstreamVMRecord{UpstreamAgentRef: agentRefOf(s.Namespace, a.Name)}})
			vas[sh.name], agentOf[sh.name] = va, a
		}
		Eventually(func(g Gomega) {
			for _, am := range ams {
				g.Expect(agentMachineAgent(ctx, s.ControlPlaneNamespace, am.Name)).To(Equal(agentOf[am.Name].Name), "the pinned AgentMachine took its VM's Agent")
			}
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		// The scale-up that waits when upstream stops: AgentMachines upstream pinned that no Agent carries.
		d.SetBinding(false)
		Expect(d.SetReplicas(ctx, s.NodePool, 4)).To(Succeed())
		pinned := waitingAgentMachines(ctx, s, 2)
		for _, am := range pinned {
			pinAgentMachine(ctx, am)
		}
		d.SetBinding(true)

		By("our operator starts with adoption Disabled: every upstream VsphereAgent reported, nothing touched")
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		DeferCleanup(deletePoolAndWait, pool)
		before := map[string]vmConfig{}
		for name := range vas {
			before[name] = readVMConfig(ctx, name)
		}
		Eventually(func(g Gomega) {
			for _, va := range vas {
				c := adoptedCondition(getVA(va))
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(afv1.ReasonAdoptionDisabled))
			}
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		for name, va := range vas {
			Expect(readVMConfig(ctx, name)).To(Equal(before[name]), "VM %s changed before adoption", name)
			Expect(getVA(va).Finalizers).To(Equal([]string{afv1.FinalizerUpstreamVsphereAgent}), "no finalizer of ours before adoption")
		}
		Expect(getPool(pool).Finalizers).To(ContainElement(afv1.FinalizerUpstreamPool))

		By("adoption Enabled: every VM adopted, our marker on it, upstream finalizers gone after ours")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Adoption = afv1.AdoptionEnabled })
		Eventually(func(g Gomega) {
			for name, va := range vas {
				fresh := getVA(va)
				c := adoptedCondition(fresh)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(afv1.ReasonAdoptionSucceeded), "%s: %s", name, c.Message)
				g.Expect(fresh.Status.VM.InstanceUUID).To(Equal(string(fresh.UID)))
				g.Expect(fresh.Finalizers).To(Equal([]string{afv1.FinalizerVsphereAgent}))
			}
			p := getPool(pool)
			g.Expect(p.Finalizers).To(ConsistOf(afv1.FinalizerPool))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		for name, va := range vas {
			cfg := readVMConfig(ctx, name)
			Expect(cfg.InstanceUUID).To(Equal(string(va.UID)))
			Expect(cfg.ExtraConfig).To(HaveKeyWithValue(vsphere.ExtraConfigOwnerUID, string(va.UID)))
			Expect(cfg.ExtraConfig).To(HaveKeyWithValue(vsphere.ExtraConfigPoolUID, string(getPool(pool).UID)))
			Expect(cfg.Notes).To(Equal(before[name].Notes), "upstream's Notes stay")
			Expect(eventsWith(ctx, va, afv1.ReasonAdoptionSucceeded)).To(ContainElement(ContainSubstring("adopted VM " + name)))
		}
		for _, va := range vas {
			Expect(poolHasVMOf(pool, va)).To(BeTrue(), "the pool lists adopted VM %s by our marker", va.Name)
		}

		By("the scale-up through pinned AgentMachines is served by Agents carrying their pins")
		Eventually(func(g Gomega) {
			for _, am := range pinned {
				agent := agentMachineAgent(ctx, s.ControlPlaneNamespace, am.Name)
				g.Expect(agent).NotTo(BeEmpty(), "pinned AgentMachine %s still waits", am.Name)
				g.Expect(getAgent(ctx, s.Namespace, agent).GetLabels()).To(HaveKeyWithValue(afv1.LabelUpstreamAgentMachine, am.Name))
			}
		}, 120*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(vsphereAgents(pool)).To(HaveLen(4), "the spare adopted VM served one pinned AgentMachine, one new VM the other")

		By("scale-down through an adopted VM (1.0.2, no Notes marker): its VM destroyed by our marker, its Agent deleted")
		victim := vas[ams[0].Name]
		victimMachine := key(s.ControlPlaneNamespace, ams[0].OwnerMachine)
		markDeleteMachine(ctx, victimMachine)
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(victim), &afv1.VsphereAgent{}))
		}, 180*time.Second, 250*time.Millisecond).Should(BeTrue(), "the adopted VM's VsphereAgent is released and deleted")
		Expect(vc.CountVMsNamed(victim.Name)).To(BeZero(), "the adopted VM of the deleted Machine is destroyed")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, key(s.Namespace, agentOf[victim.Name].Name), agents.New(agents.AgentGVK)))).To(BeTrue())

		By("the end: 0 VMs lost, 0 duplicated, 0 Agents wrongly deleted, no upstream finalizer left")
		remaining := vsphereAgents(pool)
		Expect(remaining).To(HaveLen(3))
		for _, va := range remaining {
			Expect(vc.CountVMsNamed(va.Status.VM.Name)).To(Equal(1), "VM %s lost or duplicated", va.Status.VM.Name)
			Expect(controllerutil.ContainsFinalizer(&va, afv1.FinalizerUpstreamVsphereAgent)).To(BeFalse())
			Expect(va.Status.VM.AgentName).NotTo(BeEmpty())
			Expect(getAgent(ctx, s.Namespace, va.Status.VM.AgentName)).NotTo(BeNil(), "Agent of VM %s deleted", va.Status.VM.Name)
		}
		Expect(poolVMs(pool)).To(HaveLen(3))
		Expect(getPool(pool).Finalizers).NotTo(ContainElement(afv1.FinalizerUpstreamPool))
		Expect(agentMachineAgent(ctx, s.ControlPlaneNamespace, ams[1].Name)).To(Equal(agentOf[ams[1].Name].Name), "the other upstream worker is untouched")
	})
})

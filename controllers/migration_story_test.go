package controllers_test

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/olm/olmcheck"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// The whole move of issue #25 on one cluster: the suite's API server first serves upstream's CRDs
// (1.0.2, then 1.1.0 applied in place, as the chart's README tells users), holds what upstream left,
// passes OLM's check of our bundle's CRDs, gets them in place, and our operator adopts and serves.
// Serial: it swaps the suite's CRDs, which no other spec may see.
var _ = Describe("Moving from the upstream operator: the whole story", Serial, func() {
	It("stores upstream 1.0.2 and 1.1.0 objects, passes OLM's check, adopts, serves a pinned scale-up, scales down an adopted VM; 0 VMs lost or duplicated, 0 Agents wrongly deleted, no upstream finalizer left", func(ctx context.Context) {
		crds := crdClient()
		DeferCleanup(restoreOurCRDs, crds)
		t := GinkgoT()

		By("a cluster that ran upstream 1.0.2: its CRDs served, its pool stored with its finalizer")
		installUpstreamCRDs(ctx, crds, upstreamCRDs("crds-v1.0.2.yaml"))
		s := newScenario()
		d := startWorld(s, world.Options{})
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		ams := waitingAgentMachines(ctx, s, 2)
		for _, am := range ams {
			pinAgentMachine(ctx, am)
		}
		uids := map[string]string{}
		poolObj := olmcheck.StoreObjects(ctx, t, k8s, []*unstructured.Unstructured{upstreamPoolObject(s, "workers")}, uids)[0]
		pool := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: poolObj.GetName(), UID: poolObj.GetUID()}}
		iso := upstreamISOPath(ctx, pool)
		statusISO := strings.TrimPrefix(iso, "["+vcsim.Datastore+"] ") // upstream records the path without the datastore

		By("1.0.2 made the first worker's VM (no marker); its Agent is bound behind a pinned AgentMachine")
		w0 := storeUpstreamWorker(ctx, s, pool.Name, uids, iso, upstreamWorker{name: ams[0].Name, version: upstream102, machine: ams[0].OwnerMachine})
		writeUpstreamPoolStatus(ctx, s, poolObj, statusISO, w0)

		By("1.1.0's CRDs applied in place; 1.1.0 made the second worker's VM and a spare, both with the Notes marker; the spare's Agent unbound")
		v110 := upstreamCRDs("crds-v1.1.0.yaml")
		olmcheck.ReplaceCRDs(ctx, t, crds, v110)
		w1 := storeUpstreamWorker(ctx, s, pool.Name, uids, iso, upstreamWorker{name: ams[1].Name, version: upstream110, machine: ams[1].OwnerMachine})
		spare := storeUpstreamWorker(ctx, s, pool.Name, uids, iso, upstreamWorker{name: "np-retired-0", version: upstream110})
		writeUpstreamPoolStatus(ctx, s, poolObj, statusISO, w0, w1, spare)
		workers := map[string]upstreamWorker{w0.name: w0, w1.name: w1, spare.name: spare}
		Eventually(func(g Gomega) {
			for _, am := range ams {
				g.Expect(agentMachineAgent(ctx, s.ControlPlaneNamespace, am.Name)).To(Equal(workers[am.Name].agent.Name), "the pinned AgentMachine took its VM's Agent")
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
		stored := listUpstreamKinds(ctx, s.Namespace)
		Expect(stored).To(HaveLen(4), "upstream's pool and 3 VsphereAgents")

		By("OLM's check before it replaces the CRDs: ours before #25 refuse this cluster, this bundle's pass")
		refused := olmcheck.CheckAll(ctx, t, crds, v110, olmcheck.LoadCRDs(t, olmcheck.Testdata(t, "crds-0.2.0-before-25.yaml")), false)
		Expect(strings.Join(refused, "\n")).To(And(ContainSubstring("agentRef"), ContainSubstring("plannedActions[0].action")), "the check can fail on this cluster")
		ours := olmcheck.BundleCRDs(t)
		Expect(olmcheck.CheckAll(ctx, t, crds, v110, ours, true)).To(BeEmpty(), "OLM would refuse the InstallPlan")

		By("OLM replaces the CRDs in place: every upstream object stays, nothing upstream wrote is lost, our client decodes them")
		olmcheck.ReplaceCRDs(ctx, t, crds, ours)
		waitOurSchemaServed(ctx, key(s.Namespace, w0.name))
		for _, before := range stored {
			after := &unstructured.Unstructured{}
			after.SetGroupVersionKind(before.GroupVersionKind())
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(before), after)).To(Succeed())
			Expect(olmcheck.LostLeaves(before, after)).To(BeEmpty(), "%s %s lost what upstream wrote", before.GetKind(), before.GetName())
		}
		decoded := getPool(pool)
		Expect(decoded.Status.OwnedVMs).To(HaveLen(3))
		Expect(decoded.Status.OwnedVMs[0].UpstreamAgentRef).NotTo(BeNil())
		Expect(decoded.Status.OwnedVMs[0].UpstreamMachineRef).NotTo(BeNil())
		Expect(decoded.Status.PlannedActions).To(ConsistOf(HaveField("Type", "Noop")))
		vas := map[string]*afv1.VsphereAgent{}
		for name, w := range workers {
			va := &afv1.VsphereAgent{}
			Expect(k8s.Get(ctx, key(s.Namespace, name), va)).To(Succeed())
			Expect(va.Status.VM.UpstreamAgentRef).NotTo(BeNil())
			Expect(va.Status.VM.UpstreamAgentRef.Name).To(Equal(w.agent.Name))
			if w.version == upstream110 {
				Expect(va.Status.VM.OwnerUID).To(Equal(string(va.UID)))
			}
			vas[name] = va
		}

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
			g.Expect(getPool(pool).Finalizers).To(ConsistOf(afv1.FinalizerPool))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		for name, va := range vas {
			cfg := readVMConfig(ctx, name)
			Expect(cfg.InstanceUUID).To(Equal(string(va.UID)))
			Expect(cfg.ExtraConfig).To(HaveKeyWithValue(vsphere.ExtraConfigOwnerUID, string(va.UID)))
			Expect(cfg.ExtraConfig).To(HaveKeyWithValue(vsphere.ExtraConfigPoolUID, string(pool.UID)))
			Expect(cfg.Notes).To(Equal(before[name].Notes), "upstream's Notes stay")
			Expect(eventsWith(ctx, va, afv1.ReasonAdoptionSucceeded)).To(ContainElement(ContainSubstring("adopted VM " + name)))
			Expect(poolHasVMOf(pool, va)).To(BeTrue(), "the pool lists adopted VM %s by our marker", name)
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
		vmsBefore := map[string]bool{}
		for _, va := range vsphereAgents(pool) {
			vmsBefore[va.Status.VM.Name] = true
		}
		for name := range workers {
			Expect(vmsBefore).To(HaveKey(name), "upstream's VM %s is one of the pool's", name)
		}
		agentsBefore := agentNames(ctx, s.Namespace)

		By("scale-down through an adopted VM (1.0.2, no Notes marker): its VM destroyed by our marker, its Agent deleted")
		victim := vas[w0.name]
		markDeleteMachine(ctx, key(s.ControlPlaneNamespace, ams[0].OwnerMachine))
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(victim), &afv1.VsphereAgent{}))
		}, 180*time.Second, 250*time.Millisecond).Should(BeTrue(), "the adopted VM's VsphereAgent is released and deleted")
		Expect(vc.CountVMsNamed(victim.Name)).To(BeZero(), "the adopted VM of the deleted Machine is destroyed")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, key(s.Namespace, w0.agent.Name), agents.New(agents.AgentGVK)))).To(BeTrue())

		By("the end: 0 VMs lost, 0 duplicated, 0 Agents wrongly deleted, no upstream finalizer left")
		lost, duplicated := 0, 0
		for name := range vmsBefore {
			switch n := vc.CountVMsNamed(name); {
			case name == victim.Name: // the scale-down's own
			case n == 0:
				lost++
			case n > 1:
				duplicated++
			}
		}
		Expect(lost).To(BeZero(), "VMs lost")
		Expect(duplicated).To(BeZero(), "VMs duplicated")
		agentsAfter := agentNames(ctx, s.Namespace)
		wronglyDeleted := 0
		for name := range agentsBefore {
			if !agentsAfter[name] && name != w0.agent.Name {
				wronglyDeleted++
			}
		}
		Expect(wronglyDeleted).To(BeZero(), "Agents deleted other than the scale-down's own")
		remaining := vsphereAgents(pool)
		Expect(remaining).To(HaveLen(3))
		instanceUUIDs := map[string]bool{}
		for _, va := range remaining {
			Expect(vc.CountVMsNamed(va.Status.VM.Name)).To(Equal(1), "VM %s lost or duplicated", va.Status.VM.Name)
			Expect(va.Status.VM.AgentName).NotTo(BeEmpty())
			Expect(getAgent(ctx, s.Namespace, va.Status.VM.AgentName)).NotTo(BeNil(), "Agent of VM %s deleted", va.Status.VM.Name)
			Expect(instanceUUIDs).NotTo(HaveKey(va.Status.VM.InstanceUUID), "two VsphereAgents on one VM")
			instanceUUIDs[va.Status.VM.InstanceUUID] = true
		}
		Expect(poolVMs(pool)).To(HaveLen(3))
		for _, obj := range listUpstreamKinds(ctx, s.Namespace) {
			Expect(obj.GetFinalizers()).NotTo(ContainElements(afv1.FinalizerUpstreamPool), "%s %s", obj.GetKind(), obj.GetName())
			Expect(obj.GetFinalizers()).NotTo(ContainElements(afv1.FinalizerUpstreamVsphereAgent), "%s %s", obj.GetKind(), obj.GetName())
		}
		status, err := json.Marshal(getPool(pool).Status)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(status)).NotTo(ContainSubstring(upstreamFakeToken), "upstream's ISO URL token stays in status")
		Expect(agentMachineAgent(ctx, s.ControlPlaneNamespace, ams[1].Name)).To(Equal(w1.agent.Name), "the other upstream worker is untouched")
	})
})

// agentNames is the set of Agents in the namespace.
func agentNames(ctx context.Context, ns string) map[string]bool {
	GinkgoHelper()
	list := newAgentList()
	Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	out := map[string]bool{}
	for _, a := range list.Items {
		out[a.GetName()] = true
	}
	return out
}

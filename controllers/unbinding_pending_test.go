package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/sim/capicore"
	"github.com/containeroo/agent-forge-operator/internal/sim/world"
	"github.com/containeroo/agent-forge-operator/internal/vsphere/vcsim"
)

// When the Agent CAPI provider unbinds an installed host on scale-down, assisted-service either reclaims
// it or leaves its Agent at unbinding-pending-user-action (Bound=False/UnbindingPendingUserAction,
// Validated=False/Unbinding): the provider then releases the Machine's pre-terminate hook and CAPI
// deletes the AgentMachine, while the Machine itself is still being deleted. The world plays the scale-up
// and the binding; then it is stopped and the test plays the provider's unbind, assisted-service's
// answer and CAPI's deletion with direct API writes (the world has no such outcome to play).
var _ = Describe("An Agent left at UnbindingPendingUserAction", func() {
	It("releases its VM with that reason and one Warning Event, and destroys the VM only once its Machine is gone", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenario()
		d, stopWorld := startStoppableWorld(s, world.Options{})
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())

		var va afv1.VsphereAgent
		Eventually(func(g Gomega) {
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(1))
			va = vas[0]
			g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
			g.Expect(va.Status.VM.MachineRef).NotTo(BeEmpty())
			g.Expect(agents.AgentFrom(getAgent(ctx, s.Namespace, va.Status.VM.AgentRef)).IsInstalled()).To(BeTrue())
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolHasVMOf(pool, &va)).To(BeTrue(), "the VsphereAgent's VM exists")

		By("the world stops; the test plays CAPI, the provider and assisted-service from here")
		stopWorld()
		machineKey := types.NamespacedName{Namespace: s.ControlPlaneNamespace, Name: va.Status.VM.MachineRef}
		machine := agents.New(agents.MachineGVK())
		Expect(k8s.Get(ctx, machineKey, machine)).To(Succeed())
		amName, _, _ := unstructured.NestedString(machine.Object, "spec", "infrastructureRef", "name")
		Expect(amName).NotTo(BeEmpty())

		By("scale-down: the Machine is being deleted (held by a finalizer, as CAPI holds it while it drains and deletes)")
		const hold = "test.agent-forge.containeroo.ch/hold"
		patch := client.MergeFrom(machine.DeepCopy())
		machine.SetFinalizers(append(machine.GetFinalizers(), hold))
		Expect(k8s.Patch(ctx, machine, patch)).To(Succeed())
		Expect(k8s.Delete(ctx, machine)).To(Succeed())

		By("the provider unbinds the Agent: reservation label, namespace annotation, clusterDeploymentName and the ignition fields removed")
		agent := getAgent(ctx, s.Namespace, va.Status.VM.AgentRef)
		labels := agent.GetLabels()
		delete(labels, agents.LabelAgentMachineRef)
		agent.SetLabels(labels)
		annotations := agent.GetAnnotations()
		delete(annotations, agents.AnnotationAgentMachineRefNamespace)
		agent.SetAnnotations(annotations)
		for _, f := range []string{"clusterDeploymentName", "ignitionEndpointTokenReference", "ignitionEndpointHTTPHeaders"} {
			unstructured.RemoveNestedField(agent.Object, "spec", f)
		}
		if _, found, _ := unstructured.NestedString(agent.Object, "spec", "machineConfigPool"); found {
			Expect(unstructured.SetNestedField(agent.Object, "", "spec", "machineConfigPool")).To(Succeed())
		}
		Expect(k8s.Update(ctx, agent)).To(Succeed())

		By("assisted-service does not reclaim the host: unbinding-pending-user-action")
		setAgentConditions(agent,
			map[string]any{"type": "Bound", "status": "False", "reason": "UnbindingPendingUserAction", "message": "The agent is currently unbinding; Pending host reboot from infraenv image"},
			map[string]any{"type": "Validated", "status": "False", "reason": "Unbinding", "message": "The agent is currently unbinding from a cluster deployment"},
		)
		Expect(unstructured.SetNestedField(agent.Object, agents.StateUnbindingPendingUserAction, "status", "debugInfo", "state")).To(Succeed())
		Expect(k8s.Status().Update(ctx, agent)).To(Succeed())

		By("the provider releases the pre-terminate hook (this state counts as done); CAPI deletes the AgentMachine")
		Expect(k8s.Get(ctx, machineKey, machine)).To(Succeed())
		patch = client.MergeFrom(machine.DeepCopy())
		hooks := machine.GetAnnotations()
		delete(hooks, "pre-terminate.delete.hook.machine.cluster.x-k8s.io/agentmachine")
		machine.SetAnnotations(hooks)
		Expect(k8s.Patch(ctx, machine, patch)).To(Succeed())
		am := agents.New(agents.AgentMachineGVK)
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: s.ControlPlaneNamespace, Name: amName}, am); err == nil {
			patch = client.MergeFrom(am.DeepCopy())
			am.SetFinalizers(nil)
			Expect(client.IgnoreNotFound(k8s.Patch(ctx, am, patch))).To(Succeed())
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, am))).To(Succeed())
		} else {
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading the AgentMachine: %v", err)
		}

		By("the VsphereAgent says so: Released/UnbindingPendingUserAction, Ready=False with that reason, one Warning Event")
		Eventually(func(g Gomega) {
			got := &afv1.VsphereAgent{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&va), got)).To(Succeed())
			g.Expect(got.Status.VM.Phase).To(Equal(afv1.VMPhaseReleased))
			g.Expect(got.Status.VM.Reason).To(Equal(controllers.ReasonUnbindingPendingUserAction))
			g.Expect(conditionOf(got.Status.Conditions, afv1.ConditionReady)).To(Equal("False/" + controllers.ReasonUnbindingPendingUserAction))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, afv1.ConditionReady).Message).To(ContainSubstring("reboot"))
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() int32 { return vaEventCount(ctx, &va, controllers.ReasonUnbindingPendingUserAction) }, 10*time.Second, 250*time.Millisecond).
			Should(Equal(int32(1)))

		By("while the Machine still exists, nothing destroys the VM: the pool tries and keeps it")
		Eventually(func() []string { return poolEventMessagesWith(ctx, pool, "SurplusKept") }, 30*time.Second, 250*time.Millisecond).
			Should(ContainElement(ContainSubstring("Machine " + machineKey.Name + " references its Agent")))
		Consistently(func(g Gomega) {
			g.Expect(poolHasVMOf(pool, &va)).To(BeTrue(), "the VM is destroyed while its Machine exists")
			got := &afv1.VsphereAgent{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&va), got)).To(Succeed())
			g.Expect(got.DeletionTimestamp.IsZero()).To(BeTrue(), "the VsphereAgent is deleted while its Machine exists")
			g.Expect(getPool(pool).Status.AvailableAgents).To(BeZero(), "the Agent counts as available")
		}, 5*time.Second, 250*time.Millisecond).Should(Succeed())

		By("the Machine goes: the VM is destroyed and its Agent deleted")
		Expect(k8s.Get(ctx, machineKey, machine)).To(Succeed())
		patch = client.MergeFrom(machine.DeepCopy())
		machine.SetFinalizers(nil)
		Expect(k8s.Patch(ctx, machine, patch)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, machineKey, agents.New(agents.MachineGVK()))) }, 10*time.Second, 100*time.Millisecond).
			Should(BeTrue())
		Eventually(func() bool { return poolHasVMOf(pool, &va) }, 60*time.Second, 250*time.Millisecond).Should(BeFalse(), "the VM is destroyed")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&va), &afv1.VsphereAgent{}))
		}, 30*time.Second, 250*time.Millisecond).Should(BeTrue(), "the VsphereAgent is gone")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: agent.GetName()}, agents.New(agents.AgentGVK)))
		}, 30*time.Second, 250*time.Millisecond).Should(BeTrue())
		Expect(vaEventCount(ctx, &va, controllers.ReasonUnbindingPendingUserAction)).To(Equal(int32(1)), "one Warning Event in all")
		Expect(vaEventCount(ctx, &va, "VMDestroyed")).To(BeNumerically(">=", 1))
	})
})

// startStoppableWorld is startWorld, returning a function that stops the world (idempotent).
func startStoppableWorld(s *world.Scenario, o world.Options) (*world.Driver, func()) {
	GinkgoHelper()
	gc, err := vc.Login(context.Background())
	Expect(err).NotTo(HaveOccurred())
	o.Client, o.VSphere, o.Datacenter = k8s, gc.Client, vcsim.Datacenter
	o.Kubeconfig, err = capicore.Kubeconfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	o.Namespaces = s.Namespaces()
	ie := s.InfraEnv
	o.InfraEnvFor = func(vm world.VM) (types.NamespacedName, bool) { return ie, vm.Folder == s.Namespace }
	d, err := world.New(o)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx, 100*time.Millisecond)
	}()
	stop := func() {
		cancel()
		<-done
	}
	DeferCleanup(func() {
		stop()
		_ = gc.Logout(context.Background())
	})
	return d, stop
}

// setAgentConditions replaces (by type) or adds the Agent's status conditions, stamped now.
func setAgentConditions(agent *unstructured.Unstructured, conds ...map[string]any) {
	GinkgoHelper()
	list, _, _ := unstructured.NestedSlice(agent.Object, "status", "conditions")
	now := time.Now().UTC().Format(time.RFC3339)
	for _, c := range conds {
		c["lastTransitionTime"] = now
		replaced := false
		for i, old := range list {
			if m, ok := old.(map[string]any); ok && m["type"] == c["type"] {
				list[i], replaced = c, true
			}
		}
		if !replaced {
			list = append(list, c)
		}
	}
	Expect(unstructured.SetNestedSlice(agent.Object, list, "status", "conditions")).To(Succeed())
}

// vaEventCount sums the counts of the VsphereAgent's Events with reason (the recorder folds repeats).
func vaEventCount(ctx context.Context, va *afv1.VsphereAgent, reason string) int32 {
	GinkgoHelper()
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(va.Namespace))).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "VsphereAgent" && e.InvolvedObject.Name == va.Name && e.Reason == reason {
			n += max(e.Count, 1)
		}
	}
	return n
}

// poolEventMessagesWith lists the messages of the pool's Events with reason.
func poolEventMessagesWith(ctx context.Context, p *afv1.VsphereAgentPool, reason string) []string {
	var out []string
	for _, e := range poolEvents(ctx, p) {
		if e.Reason == reason {
			out = append(out, strings.TrimSpace(e.Message))
		}
	}
	return out
}

// poolHasVMOf reports whether the VsphereAgent's VM (by instance UUID = its UID) is among the pool's VMs in the
// simulator.
func poolHasVMOf(p *afv1.VsphereAgentPool, va *afv1.VsphereAgent) bool {
	GinkgoHelper()
	for _, vm := range poolVMs(p) {
		if vm.InstanceUUID == string(va.UID) {
			return true
		}
	}
	return false
}

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
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// When the Agent CAPI provider unbinds an installed host on scale-down, assisted-service either reclaims
// it or leaves its Agent at unbinding-pending-user-action (Bound=False/UnbindingPendingUserAction,
// Validated=False/Unbinding): the provider then releases the Machine's pre-terminate hook and CAPI
// deletes the AgentMachine and the Node and finishes the Machine's deletion. Here the world's
// assisted-service does not reclaim, CAPI (the real controllers) picks and deletes the Machine, and a
// finalizer of the test's keeps the Machine after CAPI is done, to prove nothing destroys the VM while
// its Machine exists.
var _ = Describe("An Agent left at UnbindingPendingUserAction", func() {
	It("releases its VM with that reason and one Warning Event, and destroys the VM only once its Machine is gone", func(ctx context.Context) {
		_, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{UnbindInstalled: world.UnbindPendingUserAction}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())

		va := theInstalledWorker(ctx, s, pool)
		Expect(poolHasVMOf(pool, &va)).To(BeTrue(), "the VsphereAgent's VM exists")
		machineKey := types.NamespacedName{Namespace: s.ControlPlaneNamespace, Name: va.Status.VM.MachineName}

		By("a finalizer of the test's keeps the Machine once CAPI has finished deleting it")
		const hold = "test.agent-forge.containeroo.ch/hold"
		Expect(updateMachine(ctx, machineKey, func(m *unstructured.Unstructured) bool {
			return controllerutil.AddFinalizer(m, hold)
		})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(updateMachine(ctx, machineKey, func(m *unstructured.Unstructured) bool {
				return controllerutil.RemoveFinalizer(m, hold)
			}))).To(Succeed())
		})

		By("scale-down: CAPI deletes the Machine, the provider unbinds the Agent, assisted-service leaves it at unbinding-pending-user-action")
		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		Eventually(func(g Gomega) {
			a := agents.AgentFrom(getAgent(ctx, s.Namespace, va.Status.VM.AgentName))
			g.Expect(a.State).To(Equal(agents.StateUnbindingPendingUserAction))
			m := agents.New(agents.MachineGVK())
			g.Expect(k8s.Get(ctx, machineKey, m)).To(Succeed())
			g.Expect(m.GetDeletionTimestamp()).NotTo(BeNil())
			g.Expect(m.GetFinalizers()).To(Equal([]string{hold}), "CAPI finished its deletion (hook released, AgentMachine gone)")
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())

		By("the VsphereAgent says so: Released/UnbindingPendingUserAction, Ready=False with that reason, one Warning Event")
		Eventually(func(g Gomega) {
			got := &afv1.VsphereAgent{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&va), got)).To(Succeed())
			g.Expect(got.Status.VM.Phase).To(Equal(afv1.VMPhaseReleased))
			g.Expect(got.Status.VM.Reason).To(Equal(afv1.ReasonUnbindingPendingUserAction))
			g.Expect(conditionOf(got.Status.Conditions, afv1.ConditionReady)).To(Equal("False/" + afv1.ReasonUnbindingPendingUserAction))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, afv1.ConditionReady).Message).To(ContainSubstring("reboot"))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() int32 { return vaEventCount(ctx, &va, afv1.ReasonUnbindingPendingUserAction) }, 10*time.Second, 250*time.Millisecond).
			Should(Equal(int32(1)))

		By("while the Machine still exists, nothing destroys the VM: the pool tries and keeps it")
		Eventually(func() []string { return poolEventMessagesWith(ctx, pool, "SurplusKept") }, 90*time.Second, 250*time.Millisecond).
			Should(ContainElement(ContainSubstring("Machine " + machineKey.Name + " references its Agent")))
		Consistently(func(g Gomega) {
			g.Expect(poolHasVMOf(pool, &va)).To(BeTrue(), "the VM is destroyed while its Machine exists")
			got := &afv1.VsphereAgent{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&va), got)).To(Succeed())
			g.Expect(got.DeletionTimestamp.IsZero()).To(BeTrue(), "the VsphereAgent is deleted while its Machine exists")
			g.Expect(getPool(pool).Status.AvailableAgents).To(BeZero(), "the Agent counts as available")
		}, 5*time.Second, 250*time.Millisecond).Should(Succeed())

		By("the Machine goes: the VM is destroyed and its Agent deleted")
		agentName := va.Status.VM.AgentName
		Expect(updateMachine(ctx, machineKey, func(m *unstructured.Unstructured) bool {
			return controllerutil.RemoveFinalizer(m, hold)
		})).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, machineKey, agents.New(agents.MachineGVK()))) }, 10*time.Second, 100*time.Millisecond).
			Should(BeTrue())
		Eventually(func() bool { return poolHasVMOf(pool, &va) }, 60*time.Second, 250*time.Millisecond).Should(BeFalse(), "the VM is destroyed")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&va), &afv1.VsphereAgent{}))
		}, 90*time.Second, 250*time.Millisecond).Should(BeTrue(), "the VsphereAgent is gone")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: agentName}, agents.New(agents.AgentGVK)))
		}, 90*time.Second, 250*time.Millisecond).Should(BeTrue())
		Expect(vaEventCount(ctx, &va, afv1.ReasonUnbindingPendingUserAction)).To(Equal(int32(1)), "one Warning Event in all")
		Expect(vaEventCount(ctx, &va, "VMDestroyed")).To(BeNumerically(">=", 1))
	})
})

// vaEventCount sums the occurrences of the VsphereAgent's Events with reason (the recorder folds repeats into a series).
func vaEventCount(ctx context.Context, va *afv1.VsphereAgent, reason string) int32 {
	GinkgoHelper()
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(va.Namespace))).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "VsphereAgent" && e.InvolvedObject.Name == va.Name && e.Reason == reason {
			n += eventOccurrences(e)
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

// theInstalledWorker waits for the pool's one VsphereAgent to be Bound to a Machine with its Agent installed,
// and returns it.
func theInstalledWorker(ctx context.Context, s *world.Scenario, pool *afv1.VsphereAgentPool) afv1.VsphereAgent {
	GinkgoHelper()
	var va afv1.VsphereAgent
	Eventually(func(g Gomega) {
		vas := vsphereAgents(pool)
		g.Expect(vas).To(HaveLen(1))
		va = vas[0]
		g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
		g.Expect(va.Status.VM.MachineName).NotTo(BeEmpty())
		g.Expect(agents.AgentFrom(getAgent(ctx, s.Namespace, va.Status.VM.AgentName)).IsInstalled()).To(BeTrue())
	}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
	return va
}

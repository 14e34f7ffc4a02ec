package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

var _ = Describe("A pool deleted under Delete while one of its Machines is being deleted", func() {
	It("keeps that VM until the Machine is gone, then destroys it: nothing is left behind", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		var va afv1.VsphereAgent
		Eventually(func() string {
			vas := vsphereAgents(pool)
			if len(vas) != 1 {
				return ""
			}
			va = vas[0]
			return va.Status.VM.MachineName
		}, 90*time.Second, 250*time.Millisecond).ShouldNot(BeEmpty())
		uuid := va.Status.VM.InstanceUUID

		By("holding the Machine's deletion (CAPI's own finalizer still runs: the Agent is unbound)")
		m := agents.New(agents.MachineGVK())
		Expect(k8s.Get(ctx, key(s.ControlPlaneNamespace, va.Status.VM.MachineName), m)).To(Succeed())
		Expect(updateMachine(ctx, client.ObjectKeyFromObject(m), func(m *unstructured.Unstructured) bool {
			return controllerutil.AddFinalizer(m, holdFinalizer)
		})).To(Succeed())
		DeferCleanup(func(ctx context.Context) { releaseHeldMachine(ctx, s.ControlPlaneNamespace, va.Status.VM.MachineName) })
		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		Eventually(func() bool {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
			return m.GetDeletionTimestamp() != nil && !controllerutil.ContainsFinalizer(m, "machine.cluster.x-k8s.io")
		}, 90*time.Second, 250*time.Millisecond).Should(BeTrue(), "the Machine is deleting, held only by the test")

		By("deleting the pool: the VsphereAgent waits for the Machine instead of letting its VM go")
		Expect(k8s.Delete(ctx, pool)).To(Succeed())
		Eventually(func() string {
			got := &afv1.VsphereAgent{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(&va), got); err != nil {
				return err.Error()
			}
			if c := findReady(got); c != nil {
				return c.Reason
			}
			return ""
		}, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonWaitingForMachineDeletion))
		Consistently(func() bool { return vc.VMByInstanceUUID(uuid) != nil }, 2*time.Second, 250*time.Millisecond).Should(BeTrue(),
			"the VM backing a Machine is never destroyed while the Machine exists")

		By("the Machine goes: the VM is destroyed and the pool finishes deleting")
		releaseHeldMachine(ctx, s.ControlPlaneNamespace, va.Status.VM.MachineName)
		Eventually(func() bool { return vc.VMByInstanceUUID(uuid) == nil }, 60*time.Second, 250*time.Millisecond).Should(BeTrue(),
			"no VM with our marker is left without an owner")
		Eventually(func() bool {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(pool), &afv1.VsphereAgentPool{})
			return client.IgnoreNotFound(err) == nil && err != nil
		}, 60*time.Second, 250*time.Millisecond).Should(BeTrue())
	})
})

// releaseHeldMachine removes the test's hold finalizer from a Machine (gone already is fine).
func releaseHeldMachine(ctx context.Context, namespace, name string) {
	err := updateMachine(ctx, key(namespace, name), func(m *unstructured.Unstructured) bool {
		return controllerutil.RemoveFinalizer(m, holdFinalizer)
	})
	Expect(client.IgnoreNotFound(err)).To(Succeed())
}

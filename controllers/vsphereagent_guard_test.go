package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// createdBy makes va look created by pool, as the pool's planner does (controller owner reference): specs
// that stage a VsphereAgent by hand to simulate the pool use it.
func createdBy(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) {
	GinkgoHelper()
	Expect(controllerutil.SetControllerReference(pool, va, env.Scheme)).To(Succeed())
}

var _ = Describe("A VsphereAgent applied by hand", func() {
	It("is ignored: no finalizer, no VM, a NotCreatedByPool condition and one Warning event", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenario()
		startWorld(s, world.Options{})
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)
		Eventually(func() string { return isoPath(getPool(pool)) }, 90*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())

		va := &afv1.VsphereAgent{}
		va.Namespace, va.Name = s.Namespace, "hand-made"
		va.Labels = map[string]string{afv1.LabelPool: pool.Name}
		va.Spec.PoolRef.Name = pool.Name
		Expect(k8s.Create(ctx, va)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = k8s.Delete(ctx, va) })

		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(va), va)).To(Succeed())
			if c := findReady(va); c != nil {
				return c.Reason
			}
			return ""
		}, 90*time.Second, 200*time.Millisecond).Should(Equal(afv1.ReasonNotCreatedByPool))
		Consistently(func() []string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(va), va)).To(Succeed())
			return append(va.Finalizers, va.Status.VM.InstanceUUID)
		}, 2*time.Second, 250*time.Millisecond).Should(Equal([]string{""}), "no finalizer and no VM")
		Expect(poolVMs(pool)).To(BeEmpty(), "no VM in the simulator for a pool without demand")

		var events corev1.EventList
		Expect(k8s.List(ctx, &events, client.InNamespace(s.Namespace), client.MatchingFields{"involvedObject.name": va.Name})).To(Succeed())
		n := 0
		for _, e := range events.Items {
			if e.Reason == afv1.ReasonNotCreatedByPool {
				n += int(eventOccurrences(e))
			}
		}
		Expect(n).To(Equal(1), "one Warning event, not one per pass")

		By("deleting it needs nothing from the operator")
		Expect(k8s.Delete(ctx, va)).To(Succeed())
		Eventually(func() bool {
			return client.IgnoreNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(va), &afv1.VsphereAgent{})) == nil &&
				k8s.Get(ctx, client.ObjectKeyFromObject(va), &afv1.VsphereAgent{}) != nil
		}, 10*time.Second, 200*time.Millisecond).Should(BeTrue())
	})
})

func findReady(va *afv1.VsphereAgent) *metav1.Condition {
	for i := range va.Status.Conditions {
		if va.Status.Conditions[i].Type == afv1.ConditionReady {
			return &va.Status.Conditions[i]
		}
	}
	return nil
}

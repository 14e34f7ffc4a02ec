package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// GitOps tools (Argo CD, Flux) compare the stored spec with the manifest they applied: the operator
// taking a pool over (finalizer, status) must not rewrite the user's spellings (e.g. "1h" as "1h0m0s"),
// which would bump metadata.generation and show drift on a manifest nobody changed.
var _ = Describe("A pool applied with the user's own spellings", func() {
	It("keeps its stored spec byte-for-byte and generation 1 once the operator has taken it over", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenario()
		startWorld(s, world.Options{})
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(newPool(s, "workers"))
		Expect(err).NotTo(HaveOccurred())
		manifest := &unstructured.Unstructured{Object: content}
		manifest.SetGroupVersionKind(afv1.GroupVersion.WithKind("VsphereAgentPool"))
		delete(manifest.Object, "status")
		// Durations as a user writes them; the typed client would serialize them as "1h0m0s" and "30m0s".
		Expect(unstructured.SetNestedField(manifest.Object, "1h", "spec", "iso", "checkInterval")).To(Succeed())
		Expect(unstructured.SetNestedField(manifest.Object, "30m", "spec", "registrationTimeout")).To(Succeed())
		Expect(k8s.Create(ctx, manifest)).To(Succeed())
		pool := &afv1.VsphereAgentPool{}
		pool.Namespace, pool.Name = manifest.GetNamespace(), manifest.GetName()
		DeferCleanup(deletePoolAndWait, pool)
		applied := manifest.Object["spec"]

		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(manifest.GroupVersionKind())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(manifest), stored)).To(Succeed())
			g.Expect(stored.GetFinalizers()).To(ContainElement(afv1.FinalizerPool))
			observed, _, _ := unstructured.NestedInt64(stored.Object, "status", "observedGeneration")
			g.Expect(observed).To(BeNumerically(">=", 1), "the operator wrote the pool's status")
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(stored.GetGeneration()).To(BeEquivalentTo(1))
		Expect(stored.Object["spec"]).To(Equal(applied))
		checkInterval, _, _ := unstructured.NestedString(stored.Object, "spec", "iso", "checkInterval")
		Expect(checkInterval).To(Equal("1h"))
	})
})

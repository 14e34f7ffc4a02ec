package controllers_test

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Discovery ISO cache through the pool controller", func() {
	It("caches, reuses identical bytes under a new URL, force-refreshes, reports failures, and never leaks the token", func(ctx context.Context) {
		srv := sim.NewISOServer(sim.ISOServerOptions{Seed: 7, Size: 96 * 1024, Token: "first-secret-token"})
		DeferCleanup(srv.Close)
		tokens := []string{"first-secret-token"}
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenario()
		Expect(world.SetInfraEnvImage(ctx, k8s, s.InfraEnv, srv.URL(), time.Now())).To(Succeed())
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)
		prefix := iso.PathPrefix(getPool(pool))
		want := iso.CachedISOPath(vcsim.Datastore, prefix, srv.SHA256())

		By("caching a fresh ISO under its digest")
		Eventually(func() string { return isoPath(getPool(pool)) }, 90*time.Second, 200*time.Millisecond).Should(Equal(want))
		st := getPool(pool).Status.ISO
		Expect(st.SHA256).To(Equal(srv.SHA256()))
		Expect(st.SizeBytes).To(Equal(srv.Size()))
		Expect(st.URL).To(Equal(srv.BaseURL()), "the URL is recorded without its query")
		Expect(conditionReason(getPool(pool), afv1.ConditionISOReady)).To(Equal(afv1.ReasonCached))
		Eventually(func() []string { return poolEventReasons(ctx, pool) }, 10*time.Second).Should(ContainElement("ISOUploaded"))

		By("reusing identical bytes served under a new URL")
		tokens = append(tokens, srv.RotateToken("second-secret-token"))
		Expect(world.SetInfraEnvImage(ctx, k8s, s.InfraEnv, srv.URL(), time.Now().Add(time.Minute))).To(Succeed())
		Eventually(func() []string { return poolEventReasons(ctx, pool) }, 90*time.Second, 200*time.Millisecond).Should(ContainElement("ISOReused"))
		// The job's Event is emitted when it finishes; the pool's next pass writes its result to status.
		Eventually(func() string { return getPool(pool).Status.ISO.URLHash }, 30*time.Second, 200*time.Millisecond).Should(Equal(iso.URLHash(srv.URL())))
		Expect(isoPath(getPool(pool))).To(Equal(want))

		By("failing a forced refresh: the condition says so and the cached ISO stays in use")
		srv.SetMode(sim.ISONotFound)
		forceRefresh(pool, "one")
		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionISOReady) }, 90*time.Second, 200*time.Millisecond).Should(Equal(afv1.ReasonDownloadFailed))
		Expect(isoPath(getPool(pool))).To(Equal(want))

		By("recovering on the next forced refresh, the token recorded")
		srv.SetMode(sim.ISOServe)
		srv.SetContent(8, 96*1024)
		forceRefresh(pool, "two")
		Eventually(func() string { return getPool(pool).Status.ISO.ForceRefreshToken }, 90*time.Second, 200*time.Millisecond).Should(Equal("two"))
		Expect(isoPath(getPool(pool))).To(Equal(iso.CachedISOPath(vcsim.Datastore, prefix, srv.SHA256())))
		Expect(conditionReason(getPool(pool), afv1.ConditionISOReady)).To(Equal(afv1.ReasonCached))

		By("never writing a token to status or events")
		raw, err := json.Marshal(getPool(pool).Status)
		Expect(err).NotTo(HaveOccurred())
		for _, tok := range tokens {
			Expect(string(raw)).NotTo(ContainSubstring(tok))
			for _, msg := range poolEventMessages(ctx, pool) {
				Expect(msg).NotTo(ContainSubstring(tok))
			}
		}
	})
})

func forceRefresh(p *afv1.VsphereAgentPool, token string) {
	GinkgoHelper()
	fresh := getPool(p)
	patch := client.MergeFrom(fresh.DeepCopy())
	if fresh.Annotations == nil {
		fresh.Annotations = map[string]string{}
	}
	fresh.Annotations[afv1.AnnotationForceISORefresh] = token
	Expect(k8s.Patch(context.Background(), fresh, patch)).To(Succeed())
}

func poolEvents(ctx context.Context, p *afv1.VsphereAgentPool) []corev1.Event {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(p.Namespace))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "VsphereAgentPool" && e.InvolvedObject.Name == p.Name {
			out = append(out, e)
		}
	}
	return out
}

// objectEventReasons lists the reasons of the Events about one object.
func objectEventReasons(ctx context.Context, namespace, kind, name string) []string {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

func poolEventReasons(ctx context.Context, p *afv1.VsphereAgentPool) []string {
	var out []string
	for _, e := range poolEvents(ctx, p) {
		out = append(out, e.Reason)
	}
	return out
}

func poolEventMessages(ctx context.Context, p *afv1.VsphereAgentPool) []string {
	var out []string
	for _, e := range poolEvents(ctx, p) {
		out = append(out, strings.TrimSpace(e.Message))
	}
	return out
}

package controllers_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Discovery ISO token renewal through the pool", func() {
	It("records a renewed URL without downloading the image again, and downloads it when the image changed", func(ctx context.Context) {
		// Answers like assisted-image-service: Last-Modified is the image's generation time, no ETag.
		srv := sim.NewISOServer(sim.ISOServerOptions{Seed: 21, Size: 96 * 1024, Token: "first-secret-token"})
		DeferCleanup(srv.Close)
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenario()
		created := time.Now().Add(-time.Hour).Truncate(time.Second)
		Expect(world.SetInfraEnvImage(ctx, k8s, s.InfraEnv, srv.URL(), created)).To(Succeed())
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)
		prefix := iso.PathPrefix(getPool(pool))
		want := iso.CachedISOPath(vcsim.Datastore, prefix, srv.SHA256())

		By("caching the ISO once")
		Eventually(func() string { return isoPath(getPool(pool)) }, 90*time.Second, 200*time.Millisecond).Should(Equal(want))
		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionReady) }, 90*time.Second, 200*time.Millisecond).
			Should(Equal("Ready"))
		first := *getPool(pool).Status.ISO
		downloads, events := srv.Downloads(), len(poolEventReasons(ctx, pool))
		Expect(downloads).To(Equal(int64(1)))

		By("renewing the token: same createdTime, the old token refused from now on")
		renewed := srv.RotateToken("second-secret-token")
		Expect(world.SetInfraEnvImage(ctx, k8s, s.InfraEnv, renewed, created)).To(Succeed())
		Eventually(func() string { return getPool(pool).Status.ISO.URLHash }, 90*time.Second, 200*time.Millisecond).
			Should(Equal(iso.URLHash(renewed)))
		Expect(srv.Downloads()).To(Equal(downloads), "no download for a token renewal")
		Expect(srv.Heads()).To(BeNumerically(">=", 1), "revalidated with a HEAD")
		Expect(srv.Unauthorized()).To(BeZero(), "the old URL is not used again")
		Consistently(func(g Gomega) {
			p := getPool(pool)
			g.Expect(srv.Downloads()).To(Equal(downloads), "no download for a token renewal")
			g.Expect(p.Status.ISO.Path).To(Equal(first.Path))
			g.Expect(p.Status.ISO.SHA256).To(Equal(first.SHA256))
			g.Expect(p.Status.ISO.UploadedAt.Equal(first.UploadedAt)).To(BeTrue())
			g.Expect(p.Status.ISO.History).To(HaveLen(1))
			g.Expect(conditionReason(p, afv1.ConditionReady)).To(Equal("Ready"))
			g.Expect(conditionReason(p, afv1.ConditionISOReady)).To(Equal(afv1.ReasonCached))
		}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(poolEventReasons(ctx, pool)[events:]).NotTo(ContainElements("ISOUploaded", "ISOReused"))
		Expect(listFiles(ctx, "["+vcsim.Datastore+"] "+prefix)).To(ConsistOf(srv.SHA256() + ".iso"))

		By("changing the image under the same createdTime: its Last-Modified says so, it is downloaded once")
		srv.SetContent(22, 96*1024)
		renewed = srv.RotateToken("third-secret-token")
		Expect(world.SetInfraEnvImage(ctx, k8s, s.InfraEnv, renewed, created)).To(Succeed())
		Eventually(func() string { return getPool(pool).Status.ISO.SHA256 }, 90*time.Second, 200*time.Millisecond).Should(Equal(srv.SHA256()))
		Expect(srv.Downloads()).To(Equal(downloads + 1))
		Expect(isoPath(getPool(pool))).To(Equal(iso.CachedISOPath(vcsim.Datastore, prefix, srv.SHA256())))

		By("never writing a token to status or events")
		raw, err := json.Marshal(getPool(pool).Status)
		Expect(err).NotTo(HaveOccurred())
		for _, tok := range []string{"first-secret-token", "second-secret-token", "third-secret-token"} {
			Expect(string(raw)).NotTo(ContainSubstring(tok))
			for _, msg := range poolEventMessages(ctx, pool) {
				Expect(msg).NotTo(ContainSubstring(tok))
			}
		}
	})
})

// listFiles names the files under "[ds] dir" in the simulator.
func listFiles(ctx context.Context, dir string) []string {
	GinkgoHelper()
	files, err := vs.ListFiles(ctx, vcsim.Datacenter, dir)
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	return names
}

package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

var _ = Describe("The pool's image host CA and ISO size limit (spec.iso.caBundleRef, spec.iso.maxSize)", func() {
	It("a private-CA image host: a missing ConfigMap blocks the download (CABundleNotFound, Event, no request, no VM); the ConfigMap created with the wrong CA gives CertificateUntrusted; fixed in place, it is picked up without a restart and VMs are created", func(ctx context.Context) {
		ca, err := sim.NewPrivateCA("image host CA")
		Expect(err).NotTo(HaveOccurred())
		other, err := sim.NewPrivateCA("another CA")
		Expect(err).NotTo(HaveOccurred())
		serverTLS, err := ca.ServerTLSConfig()
		Expect(err).NotTo(HaveOccurred())
		srv := sim.NewISOServer(sim.ISOServerOptions{Seed: 31, Size: 96 * 1024, Token: "ca-spec-token", TLSConfig: serverTLS})
		DeferCleanup(srv.Close)

		pool, s, d := startPoolOn(srv.URL(), func(p *afv1.VsphereAgentPool) {
			p.Spec.ISO.CABundleRef = &afv1.CABundleReference{Name: "image-ca"}
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())

		By("the ConfigMap absent: CABundleNotFound naming it, a Warning Event, nothing downloaded, no VM")
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionISOReady)).To(Equal("False/" + afv1.ReasonCABundleNotFound))
			g.Expect(p.Status.WaitingAgentMachines).To(BeEquivalentTo(1))
			g.Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonCABundleNotFound))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(findPoolCondition(getPool(pool), afv1.ConditionISOReady).Message).To(ContainSubstring("ConfigMap " + s.Namespace + "/image-ca"))
		Consistently(func() int { return len(vsphereAgents(pool)) + len(poolVMs(pool)) + int(srv.Requests()) }, 2*time.Second, 250*time.Millisecond).Should(BeZero())

		By("the ConfigMap created with another CA: the host stays untrusted")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: "image-ca"}, Data: map[string]string{"ca.crt": string(other.PEM())}}
		Expect(k8s.Create(ctx, cm)).To(Succeed())
		Eventually(func() string { return conditionOf(getPool(pool).Status.Conditions, afv1.ConditionISOReady) }, 60*time.Second, 200*time.Millisecond).
			Should(Equal("False/" + afv1.ReasonCertificateUntrusted))
		Expect(isoPath(getPool(pool))).To(BeEmpty())
		Expect(vsphereAgents(pool)).To(BeEmpty())

		By("the ConfigMap fixed in place: the next pass (started by the watch) trusts the host, caches the ISO and creates the VM")
		cm.Data["ca.crt"] = string(ca.PEM())
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.ISO).NotTo(BeNil())
			g.Expect(p.Status.ISO.SHA256).To(Equal(srv.SHA256()))
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionISOReady)).To(Equal("True/" + afv1.ReasonCached))
			g.Expect(poolVMs(pool)).To(HaveLen(1))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		for _, msg := range poolEventMessages(ctx, pool) {
			Expect(msg).NotTo(Or(ContainSubstring("ca-spec-token"), ContainSubstring("BEGIN CERTIFICATE")))
		}
	})

	It("an ISO above spec.iso.maxSize: ISOTooLarge with the limit and the size, an Event, nothing cached, no VM; the limit raised, the same image is cached and the VM created", func(ctx context.Context) {
		pool, s, d := startPoolOn(isoServer.URL(), func(p *afv1.VsphereAgentPool) {
			small := resource.MustParse("32Ki")
			p.Spec.ISO.MaxSize = &small
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionISOReady)).To(Equal("False/" + afv1.ReasonISOTooLarge))
			g.Expect(p.Status.WaitingAgentMachines).To(BeEquivalentTo(1))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(findPoolCondition(getPool(pool), afv1.ConditionISOReady).Message).To(And(
			ContainSubstring("spec.iso.maxSize 32Ki (32768 bytes)"), ContainSubstring("64Ki (65536 bytes)"), Not(ContainSubstring(isoServer.Token()))))
		Eventually(func() []string { return poolEventMessages(ctx, pool) }, 10*time.Second, 200*time.Millisecond).
			Should(ContainElement(HavePrefix(afv1.ReasonISOTooLarge)))
		Expect(isoPath(getPool(pool))).To(BeEmpty())
		Consistently(func() int { return len(vsphereAgents(pool)) + len(poolVMs(pool)) }, 2*time.Second, 250*time.Millisecond).Should(BeZero())

		By("raising the limit: retried at once (a new limit is a new refresh, not a backed-off retry)")
		setPool(pool, func(p *afv1.VsphereAgentPool) {
			larger := resource.MustParse("1Mi")
			p.Spec.ISO.MaxSize = &larger
		})
		Eventually(func(g Gomega) {
			g.Expect(isoPath(getPool(pool))).NotTo(BeEmpty())
			g.Expect(poolVMs(pool)).To(HaveLen(1))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
	})
})

// startPoolOn starts the operator and a world for a new scenario whose InfraEnv serves isoURL, and
// creates the pool "workers" (changed by customize); after the spec the pool is deleted, then the
// operator stopped.
func startPoolOn(isoURL string, customize func(*afv1.VsphereAgentPool)) (*afv1.VsphereAgentPool, *world.Scenario, *world.Driver) {
	GinkgoHelper()
	op := startOperator(operatorOptions{})
	DeferCleanup(op.stop)
	s := newScenario()
	Expect(world.SetInfraEnvImage(context.Background(), k8s, s.InfraEnv, isoURL, time.Now())).To(Succeed())
	d := startWorld(s, world.Options{})
	p := newPool(s, "workers")
	customize(p)
	pool := createPool(p)
	DeferCleanup(deletePoolAndWait, pool)
	return pool, s, d
}

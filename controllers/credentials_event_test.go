package controllers_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// eventCount sums the occurrences of the pool's Events with reason (the recorder folds repeats into a series).
func eventCount(ctx context.Context, p *afv1.VsphereAgentPool, reason string) int32 {
	GinkgoHelper()
	var n int32
	for _, e := range poolEvents(ctx, p) {
		if e.Reason == reason {
			Expect(e.Type).To(Equal(corev1.EventTypeWarning))
			n += eventOccurrences(e)
		}
	}
	return n
}

var _ = Describe("Credentials missing or wrong", func() {
	It("a missing Secret: VSphereReachable=False CredentialsNotFound and one Warning Event, repeated only after the rate-limit interval, no VM", func(ctx context.Context) {
		op, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.VSphere.CredentialsSecretRef.Name = "no-such-secret"
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(conditionReason(getPool(pool), afv1.ConditionVSphereReachable)).To(Equal("CredentialsNotFound"))
			g.Expect(eventCount(ctx, pool, "CredentialsNotFound")).To(BeEquivalentTo(1))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(poolEventMessages(ctx, pool)).To(ContainElement(ContainSubstring("no-such-secret")))

		By("further passes within the interval add no Event")
		for range 3 {
			pokePool(pool)
		}
		Consistently(func() int32 { return eventCount(ctx, pool, "CredentialsNotFound") }, 2*time.Second, 200*time.Millisecond).Should(BeEquivalentTo(1))

		By("after the interval the refusal is announced again")
		op.clock.Step(11 * time.Minute)
		pokePool(pool)
		Eventually(func() int32 { return eventCount(ctx, pool, "CredentialsNotFound") }, 90*time.Second, 200*time.Millisecond).Should(BeEquivalentTo(2))
		Expect(vsphereAgents(pool)).To(BeEmpty())
	})

	It("a wrong password: AuthenticationFailed Event without the password", func(ctx context.Context) {
		const wrong = "wr0ng-pa55word-never-shown"
		_, s, _, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.VSphere.CredentialsSecretRef.Name = "bad-credentials"
		})
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: "bad-credentials"}, StringData: map[string]string{
			"server": "https://" + vc.URL.Host + "/sdk", "username": vcsim.Username, "password": wrong,
			"caBundle": string(vc.Credentials.CABundle),
		}}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(conditionReason(getPool(pool), afv1.ConditionVSphereReachable)).To(Equal("AuthenticationFailed"))
			g.Expect(eventCount(ctx, pool, "AuthenticationFailed")).To(BeEquivalentTo(1))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		expectNoSecretWritten(ctx, pool, wrong)
	})

	It("a server with user info: refused as CredentialsInvalid before any connection, the password in no status or Event", func(ctx context.Context) {
		const wrong = "us3rinfo-pa55word-never-shown"
		_, s, _, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.VSphere.CredentialsSecretRef.Name = "userinfo-credentials"
		})
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: "userinfo-credentials"}, StringData: map[string]string{
			"server": "https://" + vcsim.Username + ":" + wrong + "@" + vc.URL.Host + "/sdk", "username": vcsim.Username, "password": wrong,
			"caBundle": string(vc.Credentials.CABundle),
		}}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(conditionReason(getPool(pool), afv1.ConditionVSphereReachable)).To(Equal("CredentialsInvalid"))
			g.Expect(eventCount(ctx, pool, "CredentialsInvalid")).To(BeEquivalentTo(1))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		expectNoSecretWritten(ctx, pool, wrong)
		Expect(vsphereAgents(pool)).To(BeEmpty())
	})
})

// expectNoSecretWritten fails when the secret appears in any Event of the pool or in its written status
// (conditions included).
func expectNoSecretWritten(ctx context.Context, pool *afv1.VsphereAgentPool, secret string) {
	GinkgoHelper()
	for _, m := range poolEventMessages(ctx, pool) {
		Expect(m).NotTo(ContainSubstring(secret))
	}
	status, err := json.Marshal(getPool(pool).Status)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(status)).NotTo(ContainSubstring(secret))
}

var _ = Describe("Credentials without certificate verification", func() {
	It(`warns with VCenterTLSVerified=False InsecureSkipVerify and one Warning Event while insecure is "true", and clears once a thumbprint pins vCenter`, func(ctx context.Context) {
		_, s, _, pool := startPoolScenario(operatorOptions{}, nil) // the world's Secret sets insecure: "true"
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionReason(p, afv1.ConditionVSphereReachable)).To(Equal(afv1.ReasonConnected), "insecure still works")
			c := meta.FindStatusCondition(p.Status.Conditions, afv1.ConditionVCenterTLSVerified)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(afv1.ReasonInsecureSkipVerify))
			g.Expect(eventCount(ctx, pool, afv1.ReasonInsecureSkipVerify)).To(BeEquivalentTo(1))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(conditionReason(getPool(pool), afv1.ConditionReady)).NotTo(Equal(afv1.ReasonInsecureSkipVerify), "a warning, not a blocker")
		pokePool(pool)
		Consistently(func() int32 { return eventCount(ctx, pool, afv1.ReasonInsecureSkipVerify) }, 2*time.Second, 200*time.Millisecond).Should(BeEquivalentTo(1))

		By("pinning vCenter's certificate by thumbprint")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var sec corev1.Secret
			if err := k8s.Get(ctx, s.Secret, &sec); err != nil {
				return err
			}
			delete(sec.Data, "insecure")
			sec.Data["thumbprint"] = []byte(vc.Thumbprint)
			return k8s.Update(ctx, &sec)
		})).To(Succeed())
		pokePool(pool)
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionReason(p, afv1.ConditionVCenterTLSVerified)).To(Equal(afv1.ReasonCertificateVerified))
			g.Expect(conditionReason(p, afv1.ConditionVSphereReachable)).To(Equal(afv1.ReasonConnected))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
	})
})

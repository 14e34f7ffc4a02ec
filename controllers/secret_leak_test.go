package controllers_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// logCapture keeps every line the suite's managers log (see BeforeSuite).
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// since returns what was logged after mark (a length returned by mark).
func (c *logCapture) since(mark int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()[mark:]
}

func (c *logCapture) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Len()
}

var managerLog logCapture

// gatherMetrics renders every series of the controller-runtime registry the manager serves on /metrics.
func gatherMetrics() string {
	GinkgoHelper()
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var b strings.Builder
	for _, f := range families {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}

var _ = Describe("No secret anywhere", func() {
	It("pools whose server carries user info, is malformed, or whose password vCenter refuses: the password in no pool status, Event, manager log line or metric", func(ctx context.Context) {
		const secret = "SECRETPW-n0-leak"
		logMark := managerLog.mark()
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)

		cases := []struct {
			server, reason string
		}{
			{"https://" + vcsim.Username + ":" + secret + "@" + vc.URL.Host, afv1.ReasonCredentialsInvalid},
			{"https://" + vcsim.Username + ":" + secret + "@[::1", afv1.ReasonCredentialsInvalid},
			{"https://" + vc.URL.Host + "/sdk", "AuthenticationFailed"},
		}
		var pools []*afv1.VsphereAgentPool
		for _, c := range cases {
			s := newScenario()
			Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: "leaky-credentials"},
				StringData: map[string]string{"server": c.server, "username": vcsim.Username, "password": secret,
					"caBundle": string(vc.Credentials.CABundle)}})).To(Succeed())
			p := newPool(s, "workers")
			p.Spec.VSphere.CredentialsSecretRef.Name = "leaky-credentials"
			pool := createPool(p)
			DeferCleanup(deletePoolAndWait, pool)
			pools = append(pools, pool)
		}
		for i, pool := range pools {
			Eventually(func(g Gomega) {
				g.Expect(conditionReason(getPool(pool), afv1.ConditionVSphereReachable)).To(Equal(cases[i].reason))
				g.Expect(eventCount(ctx, pool, cases[i].reason)).To(BeEquivalentTo(1))
			}, 90*time.Second, 200*time.Millisecond).Should(Succeed(), "pool of server case %d", i)
		}

		By("no pool status (the whole object) holds the password")
		for _, pool := range pools {
			whole, err := yaml.Marshal(getPool(pool))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(whole)).To(ContainSubstring("VSphereReachable"), "the status is there to be checked")
			Expect(string(whole)).NotTo(ContainSubstring(secret))
		}

		By("no Event, core or events.k8s.io, holds the password")
		for _, pool := range pools {
			var core corev1.EventList
			Expect(k8s.List(ctx, &core, client.InNamespace(pool.Namespace))).To(Succeed())
			var api eventsv1.EventList
			Expect(k8s.List(ctx, &api, client.InNamespace(pool.Namespace))).To(Succeed())
			Expect(core.Items).NotTo(BeEmpty())
			Expect(api.Items).NotTo(BeEmpty())
			for _, e := range core.Items {
				whole, err := yaml.Marshal(e)
				Expect(err).NotTo(HaveOccurred())
				Expect(string(whole)).NotTo(ContainSubstring(secret))
			}
			for _, e := range api.Items {
				Expect(e.Note).NotTo(BeEmpty())
				whole, err := yaml.Marshal(e)
				Expect(err).NotTo(HaveOccurred())
				Expect(string(whole)).NotTo(ContainSubstring(secret))
			}
		}

		By("no manager log line holds the password")
		logged := managerLog.since(logMark)
		Expect(logged).To(ContainSubstring("vsphereagentpool"), "the capture sees this manager's lines")
		Expect(logged).NotTo(ContainSubstring(secret))

		By("no metric holds the password")
		series := gatherMetrics()
		for _, pool := range pools {
			Expect(series).To(ContainSubstring(pool.Namespace), "the registry holds this pool's series")
		}
		Expect(series).NotTo(ContainSubstring(secret))
	})
})

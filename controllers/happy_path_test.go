package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// A normal wait (ISO not cached yet, a VM still booting, an Agent not registered or bound yet, a cache
// behind our own write) is a RequeueAfter or a watch event, never an error or a Requeue: both are
// rate-limited workqueue retries with backoff, which would hold a scale-up back for no reason.
var _ = Describe("A happy-path scale-up", func() {
	It("provisions and binds 4 VMs without a reconcile error or a rate-limited requeue in either controller", func(ctx context.Context) {
		before := reconcileResults()
		_, s, d, pool := startPoolWithISO(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 4)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(boundAgentsOf(pool)).To(Equal(4))
			g.Expect(phaseCount(pool, afv1.VMPhaseBound)).To(Equal(4))
			g.Expect(getPool(pool).Status.BoundAgents).To(BeEquivalentTo(4))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolVMs(pool)).To(HaveLen(4))

		after := reconcileResults()
		for _, controller := range []string{"vsphereagentpool", "vsphereagent"} {
			delta := func(result string) float64 {
				return after[controller+"/"+result] - before[controller+"/"+result]
			}
			Expect(delta("success")+delta("requeue_after")).To(BeNumerically(">", 0), "%s reconciled", controller)
			Expect(delta("error")).To(BeZero(), "%s passes that returned an error", controller)
			Expect(delta("requeue")).To(BeZero(), "%s passes that returned Requeue", controller)
		}
	})
})

// reconcileResults reads controller_runtime_reconcile_total as "<controller>/<result>" -> count from the
// registry every manager of this suite reports to (one operator runs at a time).
func reconcileResults() map[string]float64 {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var controller, result string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "controller":
					controller = l.GetValue()
				case "result":
					result = l.GetValue()
				}
			}
			out[controller+"/"+result] += m.GetCounter().GetValue()
		}
	}
	return out
}

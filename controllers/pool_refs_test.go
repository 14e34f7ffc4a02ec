package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

var _ = Describe("Pool references checked against the NodePool", func() {
	It("refuses a pool whose hostedClusterRef is not the NodePool's cluster (condition naming it, Event, metric, no VM) and serves the NodePool once it is fixed", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.HostedClusterRef.Name = "hc-typo"
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		expectRefused(ctx, s, pool, afv1.ReasonHostedClusterMismatch, `expected hostedClusterRef.name "`+s.HostedCluster.Name+`"`)

		By("fixing spec.hostedClusterRef")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.HostedClusterRef.Name = s.HostedCluster.Name })
		expectServed(pool, 2)
	})

	It("refuses a pool whose controlPlaneNamespace is not the NodePool's (condition naming it, Event, metric, no VM); re-created with it, the pool serves the NodePool", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.ControlPlaneNamespace += "-typo" // newPool set the scenario's
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		expectRefused(ctx, s, pool, afv1.ReasonControlPlaneNamespaceMismatch, `expected controlPlaneNamespace "`+s.ControlPlaneNamespace+`"`)

		By("the field is immutable: the pool is deleted (it owns nothing) and created again with the expected namespace")
		fixed := getPool(pool)
		fixed.Spec.ControlPlaneNamespace = s.ControlPlaneNamespace
		Expect(apierrors.IsInvalid(k8s.Update(ctx, fixed))).To(BeTrue(), "controlPlaneNamespace is immutable")
		deletePoolAndWait(pool)
		again := createPool(newPool(s, pool.Name))
		DeferCleanup(deletePoolAndWait, again)
		expectServed(again, 2)
	})
})

// expectRefused: the pool's first status already reports the mismatch (one pass), with the expected value in
// its message; a Warning Event and agent_forge_pool_demand_unobserved say the same; the NodePool's
// AgentMachines wait in the real control plane namespace, yet the pool creates nothing.
func expectRefused(ctx context.Context, s *world.Scenario, pool *afv1.VsphereAgentPool, reason, expected string) {
	GinkgoHelper()
	Eventually(func() string { return conditionOf(getPool(pool).Status.Conditions, afv1.ConditionDemandObserved) },
		60*time.Second, 100*time.Millisecond).ShouldNot(BeEmpty())
	p := getPool(pool)
	Expect(conditionOf(p.Status.Conditions, afv1.ConditionDemandObserved)).To(Equal("False/"+reason), "the first pass reports it")
	Expect(conditionOf(p.Status.Conditions, afv1.ConditionReady)).To(Equal("False/" + reason))
	for _, c := range p.Status.Conditions {
		if c.Type == afv1.ConditionDemandObserved || c.Type == afv1.ConditionReady {
			Expect(c.Message).To(ContainSubstring(expected))
		}
	}
	Eventually(func(g Gomega) {
		g.Expect(poolEventMessagesWith(ctx, pool, reason)).To(ContainElement(ContainSubstring(expected)))
		g.Expect(demandUnobserved(pool)).To(Equal(map[string]float64{reason: 1}))
		ams := agents.NewList(agents.AgentMachineGVK)
		g.Expect(k8s.List(ctx, ams, client.InNamespace(s.ControlPlaneNamespace))).To(Succeed())
		g.Expect(ams.Items).To(HaveLen(2), "the NodePool's demand exists where the pool does not look")
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	Consistently(func(g Gomega) {
		g.Expect(vsphereAgents(pool)).To(BeEmpty())
		g.Expect(conditionOf(getPool(pool).Status.Conditions, afv1.ConditionDemandObserved)).To(Equal("False/" + reason))
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
	Expect(poolVMs(pool)).To(BeEmpty())
}

// expectServed: the pool sees the demand, binds an Agent per waiting AgentMachine, and the mismatch is gone.
func expectServed(pool *afv1.VsphereAgentPool, n int) {
	GinkgoHelper()
	Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(n))
	Eventually(func(g Gomega) {
		p := getPool(pool)
		g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionDemandObserved)).To(Equal("True/DemandObserved"))
		g.Expect(demandUnobserved(pool)).To(BeEmpty())
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// demandUnobserved reads the pool's agent_forge_pool_demand_unobserved series (reason -> value).
func demandUnobserved(p *afv1.VsphereAgentPool) map[string]float64 {
	ch := make(chan prometheus.Metric)
	go func() { metrics.PoolDemandUnobserved.Collect(ch); close(ch) }()
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		Expect(m.Write(&d)).To(Succeed())
		l := map[string]string{}
		for _, lp := range d.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l[metrics.LabelPoolNamespace] == p.Namespace && l["pool"] == p.Name {
			out[l["reason"]] = d.GetGauge().GetValue()
		}
	}
	return out
}

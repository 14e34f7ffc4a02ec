package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// assisted-service validates a bound host again before installing it, with the cluster-scoped
// validations an unbound host skips (hostname-unique against the cluster's other hosts). A host it
// calls insufficient then waits, bound, and its Machine with it.
var _ = Describe("A bound host the hub calls insufficient", func() {
	It("is reported on its VsphereAgent (AgentValidated and Ready False naming the validation, a Warning Event) and never failed or destroyed", func(ctx context.Context) {
		_, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{InstallDelay: time.Hour, BindingDisabled: true}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return len(vsphereAgents(pool)) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		first := vsphereAgents(pool)[0]
		d.SetBinding(true)
		var clusterDeployment map[string]any
		Eventually(func(g Gomega) {
			va := getVA(&first)
			g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
			clusterDeployment, _, _ = unstructured.NestedMap(getAgent(ctx, s.Namespace, va.Status.VM.AgentName).Object, "spec", "clusterDeploymentName")
			g.Expect(clusterDeployment).NotTo(BeEmpty())
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())

		By("a second VM is prepared; a bare-metal host of the same cluster already carries its hostname")
		d.SetBinding(false)
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		var second afv1.VsphereAgent
		Eventually(func(g Gomega) {
			for _, va := range vsphereAgents(pool) {
				if va.Name != first.Name {
					second = va
				}
			}
			g.Expect(second.Status.VM.Phase).To(Equal(afv1.VMPhaseAvailable))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		bareMetal := agents.New(agents.AgentGVK)
		bareMetal.SetNamespace(s.Namespace)
		bareMetal.SetName("bare-metal-host")
		Expect(unstructured.SetNestedField(bareMetal.Object, map[string]any{
			"approved": true, "role": "worker", "hostname": second.Status.VM.Name, "clusterDeploymentName": clusterDeployment,
		}, "spec")).To(Succeed())
		Expect(k8s.Create(ctx, bareMetal)).To(Succeed())
		d.SetBinding(true)

		Eventually(func(g Gomega) {
			got := getVA(&second)
			g.Expect(got.Status.VM.Phase).To(Equal(afv1.VMPhaseBound), "it backs its Machine")
			v := meta.FindStatusCondition(got.Status.Conditions, afv1.ConditionAgentValidated)
			g.Expect(v).NotTo(BeNil())
			g.Expect(v.Reason).To(Equal(afv1.ReasonHostValidationsFailing))
			g.Expect(v.Message).To(ContainSubstring("hostname-unique"))
			g.Expect(v.Message).To(ContainSubstring("Hostname " + second.Status.VM.Name + " is not unique in cluster"))
			r := meta.FindStatusCondition(got.Status.Conditions, afv1.ConditionReady)
			g.Expect(r).NotTo(BeNil())
			g.Expect(r.Status).To(BeEquivalentTo("False"))
			g.Expect(r.Reason).To(Equal(afv1.ReasonHostValidationsFailing))
			g.Expect(r.Message).To(ContainSubstring("Machine " + got.Status.VM.MachineName))
			g.Expect(vaEvents(ctx, got)).To(ContainElement(HavePrefix(afv1.ReasonHostValidationsFailing + ": ")))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(poolVMs(pool)).To(HaveLen(2), "no VM destroyed")
			for _, va := range vsphereAgents(pool) {
				g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
			}
		}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
	})
})

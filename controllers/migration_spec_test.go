package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

var _ = Describe("Moving from the upstream operator: spec values admitted but not honoured as written", func() {
	It("blocks creation on values a VM could only fail with (SpecHonoured=False, a Warning Event, no VM), creates once fixed, and only reports a cut name prefix", func(ctx context.Context) {
		s := newScenario()
		d := startWorld(s, world.Options{})
		// Upstream admitted these (facts §7); our CRD admits them so that the pool survives the move.
		prefix := strings.Repeat("a", 30) + "-" + strings.Repeat("b", 27) // 58 characters
		pool := createUpstreamPool(s, func(p *afv1.VsphereAgentPool) {
			p.Spec.Adoption = afv1.AdoptionEnabled
			p.Spec.Template.MemoryMiB = 8190
			p.Spec.VSphere.GuestID = "rhel-9.4"
			p.Spec.Template.NamePrefix = prefix
		})
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		DeferCleanup(deletePoolAndWait, pool)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())

		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionSpecHonoured)).To(Equal("False/" + afv1.ReasonGuestIDInvalid))
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionReady)).To(Equal("False/" + afv1.ReasonGuestIDInvalid))
			g.Expect(p.Status.WaitingAgentMachines).To(BeEquivalentTo(1), "the demand is seen")
			g.Expect(warningPoolEvents(ctx, pool, afv1.ReasonGuestIDInvalid)).NotTo(BeEmpty())
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		msg := findPoolCondition(getPool(pool), afv1.ConditionSpecHonoured).Message
		for _, want := range []string{`spec.vsphere.guestID "rhel-9.4"`, "rhel9_64Guest", "spec.template.memoryMiB 8190", "set 8188 or 8192", "namePrefix", "at most 40"} {
			Expect(msg).To(ContainSubstring(want))
		}
		Expect(warningPoolEvents(ctx, pool, afv1.ReasonGuestIDInvalid)[0]).To(And(ContainSubstring("memoryMiB 8190"), ContainSubstring("no VM is created")))
		Consistently(func(g Gomega) {
			g.Expect(vsphereAgents(pool)).To(BeEmpty(), "a VsphereAgent was created")
			g.Expect(poolVMs(pool)).To(BeEmpty(), "a VM was created")
		}, 3*time.Second, 250*time.Millisecond).Should(Succeed())

		By("fixing the values the message names: the VM is created, the cut prefix is only reported")
		setPool(pool, func(p *afv1.VsphereAgentPool) {
			p.Spec.Template.MemoryMiB = 8192
			p.Spec.VSphere.GuestID = "rhel9_64Guest"
		})
		cut := prefix[:40]
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionSpecHonoured)).To(Equal("True/" + afv1.ReasonNamePrefixCut))
			g.Expect(findPoolCondition(p, afv1.ConditionSpecHonoured).Message).To(ContainSubstring(`"` + cut + `"`))
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(1))
			g.Expect(vas[0].Name).To(HavePrefix(cut+"-"), "VM names use the cut prefix")
			g.Expect(poolVMs(pool)).To(HaveLen(1))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		var normal []string
		for _, e := range poolEvents(ctx, pool) {
			if e.Reason == afv1.ReasonNamePrefixCut {
				Expect(e.Type).To(Equal(corev1.EventTypeNormal))
				normal = append(normal, e.Message)
			}
		}
		Expect(normal).NotTo(BeEmpty(), "the adjustment is reported with an Event")
	})
})

// warningPoolEvents are the messages of the pool's Warning Events with reason.
func warningPoolEvents(ctx context.Context, p *afv1.VsphereAgentPool, reason string) []string {
	GinkgoHelper()
	var out []string
	for _, e := range poolEvents(ctx, p) {
		if e.Reason == reason && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Message)
		}
	}
	return out
}

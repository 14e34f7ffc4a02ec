package controllers_test

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// A host that fails a validation that is not about its hardware (here ntp-synced: its network reaches no
// NTP server) may recover, so the VM waits the pool's registrationTimeout, reported with the hub's
// message; then it is failed (not supply, kept as evidence for FailedRetention) and replaced, and the
// failures count towards the registration breaker, which stops the pool with a reason instead of
// replacing for ever.
var _ = Describe("Hosts failing a validation that is not about their hardware", func() {
	It("are reported with the hub's message, replaced after registrationTimeout, and stop the pool after the breaker's budget", func(ctx context.Context) {
		op, s, w, pool := startPoolScenarioWith(operatorOptions{}, world.Options{NTPUnreachable: func(world.VM) bool { return true }}, nil)
		Expect(w.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())

		By("each VM reports the failing validation and is no supply")
		Eventually(func(g Gomega) {
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(2))
			for _, va := range vas {
				c := meta.FindStatusCondition(va.Status.Conditions, afv1.ConditionAgentValidated)
				g.Expect(c).NotTo(BeNil())
				g.Expect(string(c.Status) + "/" + c.Reason).To(Equal("False/" + afv1.ReasonHostValidationsFailing))
				g.Expect(c.Message).To(And(ContainSubstring("ntp-synced"), ContainSubstring("Host couldn't synchronize with any NTP server")))
				g.Expect(va.Status.VM.Phase).NotTo(Equal(afv1.VMPhaseAvailable))
				g.Expect(vaEvents(ctx, &va)).To(ContainElement(HavePrefix(afv1.ReasonHostValidationsFailing + ": ")))
			}
			g.Expect(getPool(pool).Status.AvailableAgents).To(BeZero())
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func() int { return phaseCount(pool, afv1.VMPhaseFailed) }, 2*time.Second, 250*time.Millisecond).Should(BeZero(),
			"not failed before registrationTimeout")
		first := vmNames(pool)

		By("after registrationTimeout they are failed and replaced")
		op.clock.Step(21 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func(g Gomega) {
			failed := 0
			for _, va := range vsphereAgents(pool) {
				if va.Status.VM.Phase == afv1.VMPhaseFailed {
					g.Expect(va.Status.VM.Reason).To(Equal(afv1.ReasonHostValidationFailed))
					failed++
				}
			}
			g.Expect(failed).To(Equal(2))
			replacements := 0
			for _, va := range vsphereAgents(pool) {
				if va.Status.VM.Phase == afv1.VMPhaseProvisioning && va.Status.VM.Name != "" && !slices.Contains(first, va.Status.VM.Name) {
					replacements++
				}
			}
			g.Expect(replacements).To(Equal(2), "two replacements, new VMs")
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())

		By("the replacements fail too: the pool stops and says why")
		Eventually(func() int {
			n := 0
			for _, va := range vsphereAgents(pool) {
				if c := meta.FindStatusCondition(va.Status.Conditions, afv1.ConditionAgentValidated); c != nil && c.Status == "False" && va.Status.VM.Phase != afv1.VMPhaseFailed {
					n++
				}
			}
			return n
		}, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
		op.clock.Step(21 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionRegistrationOK) }, 90*time.Second, 250*time.Millisecond).Should(Equal("RegistrationFailing"))
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseFailed) }, 90*time.Second, 250*time.Millisecond).Should(Equal(4))
		Consistently(func() int { return phaseCount(pool, afv1.VMPhaseProvisioning) + phaseCount(pool, afv1.VMPhasePending) }, 3*time.Second, 250*time.Millisecond).Should(BeZero(),
			"no fifth VM: the breaker holds")
		failedVMs := vmNames(pool)
		Expect(failedVMs).To(HaveLen(4), "the failed VMs are kept as evidence (FailedRetention)")

		By("the failed VMs expire after FailedRetention; the breaker then probes with one VM per hold")
		op.clock.Step(61 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func(g Gomega) {
			names := vmNames(pool)
			for _, n := range failedVMs {
				g.Expect(names).NotTo(ContainElement(n))
			}
			g.Expect(len(names)).To(BeNumerically("<=", 1))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
	})
})

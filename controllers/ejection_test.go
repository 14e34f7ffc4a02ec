package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/internal/vsphere/vcsim"
)

var _ = Describe("Discovery ISO ejection", func() {
	It("ejects after installation, answering only the recorded CD-ROM lock question, and includes existing workers when enabled", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil) // ejectAfterInstall defaults to false
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseBound) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func() []string { return ejectReasons(pool) }, 30*time.Second, 250*time.Millisecond).Should(ConsistOf(afv1.ReasonEjectionDisabled, afv1.ReasonEjectionDisabled))

		vas := vsphereAgents(pool)
		locked, err := vc.WrapVM(vas[0].Status.VM.InstanceUUID) // this guest holds the CD-ROM door
		Expect(err).NotTo(HaveOccurred())

		By("opting the pool in: the existing installed workers are ejected")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = true })
		Eventually(func() []string { return ejectReasons(pool) }, 60*time.Second, 250*time.Millisecond).Should(ConsistOf(afv1.ReasonEjected, afv1.ReasonEjected))
		for _, va := range vsphereAgents(pool) {
			Expect(va.Status.ISOEjection).To(BeNil(), "the record is cleared after success")
			info, err := vs.FindVM(ctx, vcsim.Datacenter, va.Status.VM.InstanceUUID, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(attachedISOs(info)).To(BeEmpty())
		}
		answers := locked.Answers()
		Expect(answers).To(HaveLen(1))
		Expect(answers[0].Label).To(Equal("Yes"))

		By("disabling the feature keeps the last Ejected condition")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = false })
		Consistently(func() []string { return ejectReasons(pool) }, 2*time.Second, 250*time.Millisecond).Should(ConsistOf(afv1.ReasonEjected, afv1.ReasonEjected))
	})

	It("never answers a different pending question, and refuses changed media", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseBound) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		vas := vsphereAgents(pool)
		other, err := vc.WrapVM(vas[0].Status.VM.InstanceUUID)
		Expect(err).NotTo(HaveOccurred())
		other.SetDoorLocked(false)
		vc.RaiseQuestion(other, "msg.some.other.question", "Something else?")
		changed, err := vc.WrapVM(vas[1].Status.VM.InstanceUUID)
		Expect(err).NotTo(HaveOccurred())
		changed.SetDoorLocked(false)
		info, err := vs.FindVM(ctx, vcsim.Datacenter, vas[1].Status.VM.InstanceUUID, "")
		Expect(err).NotTo(HaveOccurred())
		foreignISO := "[" + vcsim.Datastore + "] elsewhere/tools.iso"
		Expect(vc.SetCDROMISO(changed, info.CDROMs[0].Key, foreignISO)).To(Succeed())

		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = true })
		Eventually(func() map[string]string { return ejectReasonByVM(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(map[string]string{
			vas[0].Name: afv1.ReasonEjectionFailed, // a different question is pending: refused, never answered
			vas[1].Name: afv1.ReasonEjected,        // its ISO is no longer ours: unrelated media stays attached
		}))
		Expect(other.Answers()).To(BeEmpty())
		info, err = vs.FindVM(ctx, vcsim.Datacenter, vas[1].Status.VM.InstanceUUID, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(attachedISOs(info)).To(ConsistOf(foreignISO))
		va0 := &afv1.VsphereAgent{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&vas[0]), va0)).To(Succeed())
		Expect(va0.Status.ISOEjection).NotTo(BeNil(), "the record stays until success")
		Expect(va0.Status.ISOEjection.LastError).To(ContainSubstring("different question"))
	})
})

func ejectReasons(p *afv1.VsphereAgentPool) []string {
	var out []string
	for _, r := range ejectReasonByVM(p) {
		out = append(out, r)
	}
	return out
}

func ejectReasonByVM(p *afv1.VsphereAgentPool) map[string]string {
	out := map[string]string{}
	for _, va := range vsphereAgents(p) {
		for _, c := range va.Status.Conditions {
			if c.Type == afv1.ConditionISOEjected {
				out[va.Name] = c.Reason
			}
		}
	}
	return out
}

func attachedISOs(info *vsphere.VMInfo) []string {
	var out []string
	for _, cd := range info.CDROMs {
		if cd.ISOPath != "" {
			out = append(out, cd.ISOPath)
		}
	}
	return out
}

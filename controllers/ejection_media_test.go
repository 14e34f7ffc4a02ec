package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("ISO ejection media", func() {
	It("ejects every CD-ROM that carries one of the pool's ISOs, one record at a time", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, world.Options{}, nil)
		va := es.boundVAs(ctx, 1)[0]
		ours := getVA(&va).Status.VM.ISOPath
		addCDROM(ctx, &va, ours)
		Expect(attachedISOs(vmOf(&va))).To(ConsistOf(ours, ours))
		locked := vcVM(&va) // the guest locks the door of both drives

		es.enable()
		Eventually(func() string { return ejectReason(&va) }, 60*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(attachedISOs(vmOf(&va))).To(BeEmpty())
		Expect(locked.Reconfigures()).To(Equal(2))
		Expect(locked.Answers()).To(HaveLen(2))
		Eventually(func() []string { return batchLines(ctx, es.pool, "ISOEjected", &va) }, 10*time.Second, 250*time.Millisecond).Should(HaveLen(2))
	})

	It("ejects the ISO recorded at creation after the pool's pathPrefix changed", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, world.Options{}, nil)
		va := es.boundVAs(ctx, 1)[0]
		old := getVA(&va).Status.VM.ISOPath
		Expect(wrapUnlocked(&va)).To(Succeed())
		setPool(es.pool, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.PathPrefix = "agent-forge/moved/" + p.Namespace })
		Eventually(func() string { return isoPath(getPool(es.pool)) }, 90*time.Second, 250*time.Millisecond).Should(ContainSubstring("agent-forge/moved/"))
		Expect(old).NotTo(ContainSubstring("agent-forge/moved/"))

		es.enable()
		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(attachedISOs(vmOf(&va))).To(BeEmpty(), "the old-location ISO is ours by the recorded path")
		Eventually(func() []string { return batchLines(ctx, es.pool, "ISOEjected", &va) }, 10*time.Second, 250*time.Millisecond).Should(ConsistOf(ContainSubstring(old)))
	})

	It("leaves unrelated media attached, reports it by path with one Warning, and does not count it", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, world.Options{}, nil)
		va := es.boundVAs(ctx, 1)[0]
		Expect(wrapUnlocked(&va)).To(Succeed())
		const driverISO = "[" + vcsim.Datastore + "] drivers/virtio-win.iso"
		addCDROM(ctx, &va, driverISO)
		ejects := isoOps(metrics.ISOOpEject, metrics.ResultSuccess)

		es.enable()
		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(attachedISOs(vmOf(&va))).To(ConsistOf(driverISO))
		Expect(ejectCondition(&va).Message).To(ContainSubstring("unrelated media left attached: " + driverISO))
		Expect(isoOps(metrics.ISOOpEject, metrics.ResultSuccess)-ejects).To(Equal(1.0), "only our ISO counts as an ejection")
		Eventually(func() []string { return eventsWith(ctx, &va, "UnrelatedMediaAttached:") }, 10*time.Second, 250*time.Millisecond).
			Should(ConsistOf(ContainSubstring(driverISO)))
		pokePool(es.pool)
		Consistently(func() []string { return eventsWith(ctx, &va, "UnrelatedMediaAttached:") }, 2*time.Second, 250*time.Millisecond).Should(HaveLen(1))
		Eventually(func() []string { return batchLines(ctx, es.pool, "ISOEjected", &va) }, 10*time.Second, 250*time.Millisecond).Should(HaveLen(1))
	})

	It("never answers a different pending question: EjectionFailed, retried with backoff, no flapping", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, world.Options{}, nil)
		va := es.boundVAs(ctx, 1)[0]
		other := vcVM(&va)
		vc.RaiseQuestion(other, "msg.hbacommon.outofspace", "There is no more space for virtual disk. Retry?")
		failures := isoOps(metrics.ISOOpEject, metrics.ResultFailure)

		es.enable()
		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjectionFailed))
		Expect(getVA(&va).Status.ISOEjection.LastError).To(ContainSubstring("different question"))
		for attempt := int32(2); attempt <= 3; attempt++ {
			es.op.clock.Step(11 * time.Minute) // past the longest backoff
			pokePool(es.pool)                  // a pool change reconciles its VMs now
			Eventually(func() int32 { return getVA(&va).Status.ISOEjection.Attempts }, 20*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", attempt))
			Consistently(func() string { return ejectReason(&va) }, time.Second, 100*time.Millisecond).Should(Equal(afv1.ReasonEjectionFailed))
		}
		Expect(other.Answers()).To(BeEmpty())
		Expect(other.Reconfigures()).To(Equal(0))
		Expect(attachedISOs(vmOf(&va))).To(HaveLen(1))
		Expect(isoOps(metrics.ISOOpEject, metrics.ResultFailure) - failures).To(BeNumerically(">=", 3))
		Expect(eventsWith(ctx, &va, "ISOEjectionFailed:")).To(HaveLen(1), "one event per distinct failure, not per retry")
		Eventually(func() *afv1.ISOEjectionSummary { return getPool(es.pool).Status.ISOEjections }, 10*time.Second, 250*time.Millisecond).
			Should(Equal(&afv1.ISOEjectionSummary{Failed: 1}))
	})
})

// eventsWith lists the VsphereAgent's events ("Reason: message") starting with prefix.
func eventsWith(ctx context.Context, va *afv1.VsphereAgent, prefix string) []string {
	var out []string
	for _, e := range vaEvents(ctx, va) {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

var _ = Describe("ISO ejection of a drive emptied outside the operator", func() {
	It("reports NotAttached (not Ejected), counts no ejection and says so once", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, world.Options{}, nil)
		va := es.boundVAs(ctx, 1)[0]
		Expect(wrapUnlocked(&va)).To(Succeed())
		emptyCDROMs(ctx, &va) // someone ejected the ISO in the vSphere client
		Expect(attachedISOs(vmOf(&va))).To(BeEmpty())
		ejects := isoOps(metrics.ISOOpEject, metrics.ResultSuccess)

		es.enable()
		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonNotAttached))
		c := ejectCondition(&va)
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Message).To(ContainSubstring("outside the operator"))
		Eventually(func() []string { return eventsWith(ctx, &va, "ISONotAttached:") }, 10*time.Second, 250*time.Millisecond).Should(HaveLen(1))
		Eventually(func() int32 {
			sum := getPool(es.pool).Status.ISOEjections
			if sum == nil {
				return -1
			}
			return sum.NotAttached
		}, 30*time.Second, 250*time.Millisecond).Should(Equal(int32(1)))
		pokePool(es.pool)
		Consistently(func() string { return ejectReason(&va) }, 2*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonNotAttached))
		Expect(eventsWith(ctx, &va, "ISONotAttached:")).To(HaveLen(1))
		Consistently(func() []string { return batchLines(ctx, es.pool, "ISOEjected", &va) }, 3*time.Second, 250*time.Millisecond).Should(BeEmpty(), "past the Event batch interval")
		Expect(isoOps(metrics.ISOOpEject, metrics.ResultSuccess) - ejects).To(BeZero())
		Expect(getPool(es.pool).Status.ISOEjections.Ejected).To(BeZero())
	})
})

// emptyCDROMs ejects every CD-ROM's media through vCenter as a user in the vSphere client would.
func emptyCDROMs(ctx context.Context, va *afv1.VsphereAgent) {
	GinkgoHelper()
	gc, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = gc.Logout(ctx) }()
	vm := object.NewVirtualMachine(gc.Client, vc.VMByInstanceUUID(getVA(va).Status.VM.InstanceUUID).Self)
	devices, err := vm.Device(ctx)
	Expect(err).NotTo(HaveOccurred())
	for _, d := range devices.SelectByType((*types.VirtualCdrom)(nil)) {
		Expect(vm.EditDevice(ctx, devices.EjectIso(d.(*types.VirtualCdrom)))).To(Succeed())
	}
}

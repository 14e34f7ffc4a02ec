package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/object"
	"k8s.io/apimachinery/pkg/api/meta"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// A worker whose VM is power-cycled with the discovery ISO still attached boots that image again (the
// world takes the CD-ROM first when no boot order says otherwise, see docs/world.md), and assisted-service
// puts its Agent at installing-pending-user-action ("Wrong boot order detection").
var _ = Describe("A worker that boots its discovery image again", func() {
	It("is reported InstallingPendingUserAction with assisted-service's message and a Warning Event, and stays Bound", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		va := theInstalledWorker(ctx, s, pool)
		Expect(conditionOf(getVA(&va).Status.Conditions, afv1.ConditionReady)).To(Equal("True/" + afv1.ReasonBound))

		By("power-cycling the VM by hand, the ISO still in its CD-ROM")
		gc, err := vc.Login(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = gc.Logout(context.Background()) })
		vm := object.NewVirtualMachine(gc.Client, vc.VMByInstanceUUID(va.Status.VM.InstanceUUID).Self)
		task, err := vm.PowerOff(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(task.Wait(ctx)).To(Succeed())
		Eventually(func() bool { return d.HostPoweredOn(va.Status.VM.BIOSUUID) }, 30*time.Second, 50*time.Millisecond).Should(BeFalse(), "the world sees the VM off")
		if task, err := vm.PowerOn(ctx); err == nil {
			_ = task.Wait(ctx) // the operator may have powered it on already
		}

		Eventually(func(g Gomega) {
			a := agents.AgentFrom(getAgent(ctx, s.Namespace, va.Status.VM.AgentName))
			g.Expect(a.State).To(Equal(agents.StateInstallingPendingUserAction))
			got := getVA(&va)
			g.Expect(got.Status.VM.Phase).To(Equal(afv1.VMPhaseBound), "it still backs its Machine")
			g.Expect(got.Status.VM.Reason).To(Equal(afv1.ReasonInstallingPendingUserAction))
			c := meta.FindStatusCondition(got.Status.Conditions, afv1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(BeEquivalentTo("False"))
			g.Expect(c.Reason).To(Equal(afv1.ReasonInstallingPendingUserAction))
			g.Expect(c.Message).To(ContainSubstring("Expected the host to boot from disk"), "assisted-service's own words")
			g.Expect(c.Message).To(ContainSubstring("ejectAfterInstall"))
			g.Expect(vaEvents(ctx, got)).To(ContainElement(HavePrefix(afv1.ReasonInstallingPendingUserAction + ": ")))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolVMs(pool)).To(HaveLen(1), "nothing is destroyed")
	})
})

package controllers_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// An armed record: the ejection of a pool that ejects is recorded in the status write that makes the
// VM Bound, and started from that record at Installed=True without a write of its own.
var _ = Describe("ISO ejection recorded with Bound", func() {
	It("writes the record with Bound, waits for Installed=True touching nothing, then ejects with one more status write", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, notInstalled, optedIn)
		versions := watchVAs(ctx, es.s.Namespace)
		va := es.boundVAs(ctx, 1)[0]
		Expect(wrapUnlocked(&va)).To(Succeed())

		Eventually(func() *afv1.ISOEjectionRecord { return getVA(&va).Status.ISOEjection }, 20*time.Second, 250*time.Millisecond).ShouldNot(BeNil())
		got := getVA(&va)
		rec := got.Status.ISOEjection
		Expect(rec.Armed).To(BeTrue())
		Expect(rec.InstanceUUID).To(Equal(got.Status.VM.InstanceUUID))
		Expect(rec.BIOSUUID).To(Equal(got.Status.VM.BIOSUUID))
		Expect(rec.OwnerUID).To(Equal(string(got.UID)))
		Expect(rec.Datacenter).To(Equal(vcsim.Datacenter))
		Expect(rec.ISOPath).To(Equal(got.Status.VM.ISOPath))
		Expect(rec.DeviceKey).To(Equal(vmOf(&va).CDROMs[0].Key))
		Expect(rec.AgentUID).To(Equal(string(agentOf(ctx, got).GetUID())))
		Expect(rec.StartedAt.IsZero()).To(BeFalse())
		Expect(ejectReason(&va)).To(Equal(afv1.ReasonWaitingForInstallation))
		Expect(ejectCondition(&va).Message).To(ContainSubstring("starts when Agent " + got.Status.VM.AgentName + " reports Installed=True"))
		Eventually(func() *afv1.ISOEjectionSummary { return getPool(es.pool).Status.ISOEjections }, 20*time.Second, 250*time.Millisecond).
			Should(Equal(&afv1.ISOEjectionSummary{Waiting: 1}), "an armed record waits, it is not in progress")

		By("the first stored Bound status already carries the record")
		first := versions.firstWhere(func(v *afv1.VsphereAgent) bool { return v.Status.VM.Phase == afv1.VMPhaseBound })
		Expect(first).NotTo(BeNil())
		Expect(first.Status.ISOEjection).NotTo(BeNil())
		Expect(first.Status.ISOEjection.Armed).To(BeTrue())
		Consistently(func() int { return vcVM(&va).Reconfigures() }, 2*time.Second, 250*time.Millisecond).Should(Equal(0))

		By("Installed=True: the ejection starts from the record; the next stored status is the result")
		armedAt := versions.count()
		markInstalled(ctx, got)
		Eventually(func() string { return ejectReason(&va) }, 60*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(getVA(&va).Status.ISOEjection).To(BeNil())
		Expect(attachedISOs(vmOf(&va))).To(BeEmpty())
		Expect(vcVM(&va).Reconfigures()).To(Equal(1))
		for _, v := range versions.since(armedAt) {
			if r := v.Status.ISOEjection; r != nil {
				Expect(r.Armed).To(BeTrue(), "no write between the armed record and the result (resourceVersion %s)", v.ResourceVersion)
			}
		}
	})

	It("drops an armed record that never started when the feature is disabled, and touches nothing", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, notInstalled, optedIn)
		va := es.boundVAs(ctx, 1)[0]
		Expect(wrapUnlocked(&va)).To(Succeed())
		Eventually(func() *afv1.ISOEjectionRecord { return getVA(&va).Status.ISOEjection }, 20*time.Second, 250*time.Millisecond).ShouldNot(BeNil())

		setPool(es.pool, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = false })
		Eventually(func() *afv1.ISOEjectionRecord { return getVA(&va).Status.ISOEjection }, 20*time.Second, 250*time.Millisecond).Should(BeNil())
		Expect(ejectReason(&va)).To(Equal(afv1.ReasonDisabled))
		Expect(ejectCondition(&va).Message).To(ContainSubstring("never started and was dropped"))
		markInstalled(ctx, getVA(&va))
		Consistently(func() int { return vcVM(&va).Reconfigures() }, 3*time.Second, 250*time.Millisecond).Should(Equal(0))
		Expect(attachedISOs(vmOf(&va))).To(HaveLen(1))
		Expect(ejectReason(&va)).To(Equal(afv1.ReasonDisabled))
	})

	It("drops an armed record when the VM's Machine is being deleted or the VM is released, and touches neither VM", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, world.Options{InstallDelay: time.Hour, ManualMachines: true}, func(p *afv1.VsphereAgentPool) {
			p.Spec.ISO.EjectAfterInstall, p.Spec.CleanupPolicy = true, afv1.CleanupPolicyRetain // the released VM stays to be looked at
		})
		vas := es.boundVAs(ctx, 2)
		deleting, released := vas[0], vas[1]
		Expect(wrapUnlocked(&deleting)).To(Succeed())
		Expect(wrapUnlocked(&released)).To(Succeed())
		for _, va := range vas {
			Eventually(func() *afv1.ISOEjectionRecord { return getVA(&va).Status.ISOEjection }, 20*time.Second, 250*time.Millisecond).ShouldNot(BeNil())
		}

		By("a Machine being deleted: the installed Agent never starts the armed record")
		holdMachineDeletion(ctx, es, &deleting)
		DeferCleanup(releaseMachine, es, &deleting)
		scaleDownMachineOf(ctx, es, &deleting)
		markInstalled(ctx, getVA(&deleting))
		Eventually(func() string { return ejectCondition(&deleting).Message }, 20*time.Second, 250*time.Millisecond).Should(ContainSubstring("is being deleted"))
		Expect(ejectReason(&deleting)).To(Equal(afv1.ReasonDisabled))
		Expect(getVA(&deleting).Status.ISOEjection).To(BeNil())

		By("a released VM: the armed record is dropped")
		scaleDownMachineOf(ctx, es, &released)
		Eventually(func() afv1.VMPhase { return getVA(&released).Status.VM.Phase }, 60*time.Second, 250*time.Millisecond).Should(Equal(afv1.VMPhaseReleased))
		Eventually(func() *afv1.ISOEjectionRecord { return getVA(&released).Status.ISOEjection }, 20*time.Second, 250*time.Millisecond).Should(BeNil())
		Expect(ejectCondition(&released).Message).To(ContainSubstring("released"))

		for _, va := range vas {
			Consistently(func() int { return vcVM(&va).Reconfigures() }, 2*time.Second, 250*time.Millisecond).Should(Equal(0))
			Expect(attachedISOs(vmOf(&va))).To(HaveLen(1))
		}
	})

	It("survives a restart while waiting, resumes only the recorded ejection, and refuses when the media or the Agent changed", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, notInstalled, optedIn)
		vas := es.boundVAs(ctx, 3)
		resumed, changed, replaced := vas[0], vas[1], vas[2]
		for _, va := range vas {
			Expect(wrapUnlocked(&va)).To(Succeed())
			Eventually(func() *afv1.ISOEjectionRecord { return getVA(&va).Status.ISOEjection }, 20*time.Second, 250*time.Millisecond).ShouldNot(BeNil())
		}
		recorded := getVA(&resumed).Status.ISOEjection.DeepCopy()

		By("the operator stops between Bound and Installed; the media of one VM changes meanwhile")
		es.op.stop()
		foreign := "[" + vcsim.Datastore + "] someone/else.iso"
		Expect(vc.SetCDROMISO(vcVM(&changed), getVA(&changed).Status.ISOEjection.DeviceKey, foreign)).To(Succeed())
		setRecord(ctx, &replaced, func(r *afv1.ISOEjectionRecord) { r.AgentUID = "an-agent-that-was-replaced" })
		es.op = startOperator(operatorOptions{})

		By("not installed yet: the record survives and nothing is touched")
		Consistently(func() *afv1.ISOEjectionRecord { return getVA(&resumed).Status.ISOEjection }, 3*time.Second, 250*time.Millisecond).Should(Equal(recorded))
		for _, va := range vas {
			Expect(vcVM(&va).Reconfigures()).To(Equal(0))
		}

		for _, va := range vas {
			markInstalled(ctx, getVA(&va))
		}
		Eventually(func() string { return ejectReason(&resumed) }, 60*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(attachedISOs(vmOf(&resumed))).To(BeEmpty())
		Expect(vcVM(&resumed).Reconfigures()).To(Equal(1))

		Eventually(func() string { return ejectReason(&changed) }, 60*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjectionFailed))
		Expect(getVA(&changed).Status.ISOEjection.LastError).To(ContainSubstring("media changed"))
		Expect(attachedISOs(vmOf(&changed))).To(ConsistOf(foreign))

		Eventually(func() string { return ejectReason(&replaced) }, 60*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjectionFailed))
		Expect(getVA(&replaced).Status.ISOEjection.LastError).To(ContainSubstring("Agent was replaced"))
		Expect(attachedISOs(vmOf(&replaced))).To(HaveLen(1))
		Expect(vcVM(&replaced).Reconfigures()).To(Equal(0))
	})
})

// vaVersions collects every stored version of the VsphereAgents of a namespace, as a watch sees them.
type vaVersions struct {
	mu   sync.Mutex
	list []*afv1.VsphereAgent
}

func watchVAs(ctx context.Context, ns string) *vaVersions {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &afv1.VsphereAgentList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	out := &vaVersions{}
	go func() {
		for ev := range w.ResultChan() {
			if va, ok := ev.Object.(*afv1.VsphereAgent); ok {
				out.mu.Lock()
				out.list = append(out.list, va.DeepCopy())
				out.mu.Unlock()
			}
		}
	}()
	return out
}

func (v *vaVersions) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.list)
}

func (v *vaVersions) since(i int) []*afv1.VsphereAgent {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]*afv1.VsphereAgent(nil), v.list[i:]...)
}

func (v *vaVersions) firstWhere(match func(*afv1.VsphereAgent) bool) *afv1.VsphereAgent {
	for _, va := range v.since(0) {
		if match(va) {
			return va
		}
	}
	return nil
}

// agentOf is the VsphereAgent's registered Agent.
func agentOf(ctx context.Context, va *afv1.VsphereAgent) *unstructured.Unstructured {
	GinkgoHelper()
	a := agents.New(agents.AgentGVK)
	Expect(k8s.Get(ctx, key(va.Namespace, va.Status.VM.AgentName), a)).To(Succeed())
	return a
}

// markInstalled has the VM's Agent report Installed=True, as assisted-service does when the host joined.
func markInstalled(ctx context.Context, va *afv1.VsphereAgent) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		a := agentOf(ctx, va)
		unstructuredcond.Set(a, time.Now(), unstructuredcond.Condition{Type: world.CondInstalled, Status: unstructuredcond.True,
			Reason: world.ReasonInstallationCompleted, Message: "The installation has completed: Done"})
		return k8s.Status().Update(ctx, a)
	})).To(Succeed())
}

// setRecord changes the stored ejection record (the operator is stopped).
func setRecord(ctx context.Context, va *afv1.VsphereAgent, change func(*afv1.ISOEjectionRecord)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := getVA(va)
		change(got.Status.ISOEjection)
		return k8s.Status().Update(ctx, got)
	})).To(Succeed())
}

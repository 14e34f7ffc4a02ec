package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/ejection"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Installation never completes in these worlds unless a spec says so.
var notInstalled = world.Options{InstallDelay: time.Hour}

func optedIn(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = true }

var _ = Describe("ISO ejection trigger", func() {
	It("waits while the Agent is bound but not installed", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, notInstalled, optedIn)
		va := es.boundVAs(ctx, 1)[0]
		Eventually(func() string { return ejectReason(&va) }, 20*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonWaitingForInstallation))
		Expect(ejectCondition(&va).Message).To(ContainSubstring("starts when Agent " + va.Status.VM.AgentName + " reports Installed=True"))
		Consistently(func() []string { return attachedISOs(vmOf(&va)) }, 2*time.Second, 250*time.Millisecond).Should(HaveLen(1))
		Expect(getVA(&va).Status.ISOEjection.Armed).To(BeTrue(), "recorded with Bound, not started")
	})

	for _, tc := range []struct {
		name   string
		change func(a *unstructured.Unstructured)
	}{
		{"reports Installed=Unknown", func(a *unstructured.Unstructured) {
			unstructuredcond.Set(a, time.Now(), unstructuredcond.Condition{Type: world.CondInstalled, Status: unstructuredcond.Unknown, Reason: "InstallationInProgress"})
		}},
		{"reports no Installed condition", func(a *unstructured.Unstructured) {
			var out []map[string]any
			for _, m := range unstructuredcond.Entries(a) {
				if m["type"] != world.CondInstalled {
					out = append(out, m)
				}
			}
			unstructuredcond.Replace(a, out)
		}},
	} {
		It("does not eject when the Agent "+tc.name, func(ctx context.Context) {
			es := startEjectScenario(operatorOptions{}, notInstalled, optedIn)
			va := es.boundVAs(ctx, 1)[0]
			// The world and the operator write this Agent too: a conflict means "read again".
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				a := agents.New(agents.AgentGVK)
				if err := k8s.Get(ctx, key(va.Namespace, va.Status.VM.AgentName), a); err != nil {
					return err
				}
				tc.change(a)
				return k8s.Status().Update(ctx, a)
			})).To(Succeed())
			Eventually(func() string { return ejectReason(&va) }, 20*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonWaitingForInstallation))
			Consistently(func() []string { return attachedISOs(vmOf(&va)) }, 2*time.Second, 250*time.Millisecond).Should(HaveLen(1))
			Expect(ejectReason(&va)).To(Equal(afv1.ReasonWaitingForInstallation))
			Expect(getVA(&va).Status.ISOEjection.Armed).To(BeTrue(), "the armed record waits for Installed=True")
		})
	}

	It("starts no ejection for a Machine being deleted, but finishes one already recorded", func(ctx context.Context) {
		hook, reached := pauseHook(ejection.CrashAfterQuestionID)
		es := startEjectScenario(operatorOptions{crashPoint: hook.seam}, world.Options{ManualMachines: true}, nil)
		vas := es.boundVAs(ctx, 2)
		recorded, fresh := vas[0], vas[1]
		locked, err := vc.WrapVM(recorded.Status.VM.InstanceUUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(wrapUnlocked(&fresh)).To(Succeed())
		// Both Machines stay deleting once deleted: the world's finalizer is replaced by one it ignores.
		holdMachineDeletion(ctx, es, &recorded)
		holdMachineDeletion(ctx, es, &fresh)
		DeferCleanup(releaseMachine, es, &recorded)
		DeferCleanup(releaseMachine, es, &fresh)

		By("a Machine deleted before the pool opts in never gets an ejection")
		scaleDownMachineOf(ctx, es, &fresh)
		es.enable()
		By("a recorded ejection (paused at its lock question) finishes although its Machine is deleted meanwhile")
		Eventually(reached, 90*time.Second).Should(BeClosed())
		scaleDownMachineOf(ctx, es, &recorded)
		hook.release()

		Eventually(func() string { return ejectReason(&recorded) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(locked.Answers()).To(HaveLen(1))
		Expect(attachedISOs(vmOf(&recorded))).To(BeEmpty())
		Eventually(func() string { return ejectCondition(&fresh).Message }, 20*time.Second, 250*time.Millisecond).Should(ContainSubstring("is being deleted"))
		Expect(ejectReason(&fresh)).To(Equal(afv1.ReasonDisabled))
		Consistently(func() []string { return attachedISOs(vmOf(&fresh)) }, 2*time.Second, 250*time.Millisecond).Should(HaveLen(1))
		Expect(getVA(&fresh).Status.ISOEjection).To(BeNil())
		Expect(vcVM(&fresh).Reconfigures()).To(Equal(0))
	})

	It("starts no ejection for a released VM", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, world.Options{}, func(p *afv1.VsphereAgentPool) { p.Spec.CleanupPolicy = afv1.CleanupPolicyRetain })
		va := es.boundVAs(ctx, 1)[0]
		Expect(es.d.SetReplicas(ctx, es.s.NodePool, 0)).To(Succeed())
		Eventually(func() afv1.VMPhase { return getVA(&va).Status.VM.Phase }, 60*time.Second, 250*time.Millisecond).Should(Equal(afv1.VMPhaseReleased))
		es.enable()
		Eventually(func() string { return ejectCondition(&va).Message }, 20*time.Second, 250*time.Millisecond).Should(ContainSubstring("released"))
		Expect(ejectReason(&va)).To(Equal(afv1.ReasonDisabled))
		Consistently(func() []string { return attachedISOs(vmOf(&va)) }, 2*time.Second, 250*time.Millisecond).Should(HaveLen(1))
	})

	It("finishes a recorded ejection, including its question, when the feature is disabled mid-operation, and keeps Ejected", func(ctx context.Context) {
		hook, reached := pauseHook(ejection.CrashAfterQuestionID)
		es := startEjectScenario(operatorOptions{crashPoint: hook.seam}, world.Options{}, nil)
		va := es.boundVAs(ctx, 1)[0]
		locked, err := vc.WrapVM(va.Status.VM.InstanceUUID)
		Expect(err).NotTo(HaveOccurred())
		es.enable()
		Eventually(reached, 90*time.Second).Should(BeClosed())
		setPool(es.pool, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = false })
		hook.release()

		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(locked.Answers()).To(HaveLen(1), "the recorded question was answered")
		Expect(attachedISOs(vmOf(&va))).To(BeEmpty())
		Consistently(func() string { return ejectReason(&va) }, 2*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(attachedISOs(vmOf(&va))).To(BeEmpty(), "nothing reattached")
		Expect(locked.Reconfigures()).To(Equal(1))
	})
})

// pause is a CrashPoint seam that holds the first pass reaching point until release.
type pause struct {
	point   string
	reached chan struct{}
	done    chan struct{}
	once    bool
}

func pauseHook(point string) (*pause, chan struct{}) {
	p := &pause{point: point, reached: make(chan struct{}), done: make(chan struct{})}
	return p, p.reached
}

func (p *pause) seam(ctx context.Context, point string, _ client.ObjectKey) {
	if point != p.point || p.once { // one VM worker: passes are serial
		return
	}
	p.once = true
	close(p.reached)
	select {
	case <-p.done:
	case <-ctx.Done():
	}
}

func (p *pause) release() { close(p.done) }

// wrapUnlocked wraps a VM whose guest does not lock the door (to count its reconfigures).
func wrapUnlocked(va *afv1.VsphereAgent) error {
	w, err := vc.WrapVM(va.Status.VM.InstanceUUID)
	if err == nil {
		w.SetDoorLocked(false)
	}
	return err
}

func machineOf(ctx context.Context, es *ejectScenario, va *afv1.VsphereAgent) *unstructured.Unstructured {
	GinkgoHelper()
	m := agents.New(agents.MachineGVK())
	Expect(getVA(va).Status.VM.MachineName).NotTo(BeEmpty())
	Expect(k8s.Get(ctx, key(es.s.ControlPlaneNamespace, getVA(va).Status.VM.MachineName), m)).To(Succeed())
	return m
}

// scaleDownMachineOf has CAPI delete the VM's Machine, as a scale-down that picks it does: the Machine is
// marked with CAPI's delete-machine annotation and its MachineDeployment loses one replica (the world
// runs with ManualMachines, so it does not put the NodePool's replicas back). Only CAPI deletes Machines.
func scaleDownMachineOf(ctx context.Context, es *ejectScenario, va *afv1.VsphereAgent) {
	GinkgoHelper()
	markDeleteMachine(ctx, client.ObjectKeyFromObject(machineOf(ctx, es, va)))
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		md := agents.New(world.MachineDeploymentGVK)
		if err := k8s.Get(ctx, world.MachineDeploymentOf(es.s), md); err != nil {
			return err
		}
		replicas, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas")
		if err := unstructured.SetNestedField(md.Object, replicas-1, "spec", "replicas"); err != nil {
			return err
		}
		return k8s.Update(ctx, md)
	})).To(Succeed())
	Eventually(func() bool { return machineOf(ctx, es, va).GetDeletionTimestamp() != nil }, 90*time.Second, 250*time.Millisecond).
		Should(BeTrue(), "CAPI deletes the Machine it picked")
}

// markDeleteMachine sets CAPI's delete-machine annotation on the Machine: its MachineSet deletes it first
// on the next scale-down.
func markDeleteMachine(ctx context.Context, machine types.NamespacedName) {
	GinkgoHelper()
	Expect(updateMachine(ctx, machine, func(m *unstructured.Unstructured) bool {
		ann := m.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[world.AnnotationDeleteMachine] = "true"
		m.SetAnnotations(ann)
		return true
	})).To(Succeed())
}

const holdFinalizer = "test.agent-forge/hold"

// holdMachineDeletion adds a finalizer of the test's to the VM's Machine, so that the Machine stays (deleting)
// after CAPI has finished its deletion, and pauses its AgentMachine, so that the Agent stays bound.
func holdMachineDeletion(ctx context.Context, es *ejectScenario, va *afv1.VsphereAgent) {
	GinkgoHelper()
	Expect(getVA(va).Status.VM.MachineName).NotTo(BeEmpty())
	Expect(updateMachine(ctx, key(es.s.ControlPlaneNamespace, getVA(va).Status.VM.MachineName), func(m *unstructured.Unstructured) bool {
		return controllerutil.AddFinalizer(m, holdFinalizer)
	})).To(Succeed())
	// The Agent stays bound while the Machine is deleted: the provider lets a paused AgentMachine's Machine go
	// without unbinding its Agent (cluster-api-provider-agent 76dbebc).
	m := machineOf(ctx, es, va)
	amName, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "name")
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		am := agents.New(agents.AgentMachineGVK)
		if err := k8s.Get(ctx, key(es.s.ControlPlaneNamespace, amName), am); err != nil {
			return err
		}
		ann := am.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[world.AnnotationPaused] = "true"
		am.SetAnnotations(ann)
		return k8s.Update(ctx, am)
	})).To(Succeed())
}

// releaseMachine lets a held Machine go (gone already is fine).
func releaseMachine(ctx context.Context, es *ejectScenario, va *afv1.VsphereAgent) {
	err := updateMachine(ctx, key(es.s.ControlPlaneNamespace, getVA(va).Status.VM.MachineName), func(m *unstructured.Unstructured) bool {
		return controllerutil.RemoveFinalizer(m, holdFinalizer)
	})
	Expect(client.IgnoreNotFound(err)).To(Succeed())
}

// updateMachine reads a Machine, applies mutate and writes it when mutate reports a change, again on a
// conflict: the world driver writes Machines too, so a conflict means "read again", not a failure.
func updateMachine(ctx context.Context, name types.NamespacedName, mutate func(*unstructured.Unstructured) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := agents.New(agents.MachineGVK())
		if err := k8s.Get(ctx, name, m); err != nil {
			return err
		}
		if !mutate(m) {
			return nil
		}
		return k8s.Update(ctx, m)
	})
}

// vcVM is the wrapped simulator VM of a VsphereAgent.
func vcVM(va *afv1.VsphereAgent) *vcsim.VM {
	GinkgoHelper()
	w, err := vc.WrapVM(va.Status.VM.InstanceUUID)
	Expect(err).NotTo(HaveOccurred())
	return w
}

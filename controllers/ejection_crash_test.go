package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/ejection"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("ISO ejection crash recovery", func() {
	for _, point := range []string{ejection.CrashAfterRecord, ejection.CrashAfterReconfigure, ejection.CrashAfterQuestionID, ejection.CrashAfterAnswer} {
		It("after a restart at "+point+": exactly one reconfigure and at most one answer per question", func(ctx context.Context) {
			hook, reached := crashHook(point)
			es := startEjectScenario(operatorOptions{crashPoint: hook}, world.Options{}, nil)
			va := es.boundVAs(ctx, 1)[0]
			locked := vcVM(&va)
			es.enable()
			Eventually(reached, 90*time.Second).Should(BeClosed())
			es.restart(operatorOptions{})

			Eventually(func() string { return ejectReason(&va) }, 60*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
			Expect(attachedISOs(vmOf(&va))).To(BeEmpty())
			Expect(locked.Reconfigures()).To(Equal(1))
			perQuestion := map[string]int{}
			for _, a := range locked.Answers() {
				perQuestion[a.QuestionID]++
				Expect(a.Yes).To(BeTrue())
			}
			Expect(perQuestion).To(HaveLen(1))
			for q, n := range perQuestion {
				Expect(n).To(Equal(1), "question %s answered %d times", q, n)
			}
			if point == ejection.CrashAfterReconfigure {
				Expect(eventsWith(ctx, &va, "EjectionResumed:")).To(HaveLen(1), "the running reconfigure was taken over")
			}
		})
	}

	It("refuses a recovery when the media changed while the operator was down", func(ctx context.Context) {
		hook, reached := crashHook(ejection.CrashAfterQuestionID)
		es := startEjectScenario(operatorOptions{crashPoint: hook}, world.Options{}, nil)
		va := es.boundVAs(ctx, 1)[0]
		locked := vcVM(&va)
		es.enable()
		Eventually(reached, 90*time.Second).Should(BeClosed())
		es.op.stop()
		foreign := "[" + vcsim.Datastore + "] someone/else.iso"
		Expect(vc.SetCDROMISO(locked, getVA(&va).Status.ISOEjection.DeviceKey, foreign)).To(Succeed())
		es.op = startOperator(operatorOptions{})

		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjectionFailed))
		Expect(getVA(&va).Status.ISOEjection.LastError).To(ContainSubstring("media changed"))
		Expect(locked.Answers()).To(BeEmpty())
		Expect(attachedISOs(vmOf(&va))).To(ConsistOf(foreign))
	})
})

var _ = Describe("ISO ejection and deletion", func() {
	It("destroys the VM of a refused ejection on scale-down and closes the record with an event", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, world.Options{}, nil)
		va := es.boundVAs(ctx, 1)[0]
		vc.RaiseQuestion(vcVM(&va), "msg.hbacommon.outofspace", "There is no more space for virtual disk. Retry?")
		es.enable()
		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjectionFailed))

		Expect(es.d.SetReplicas(ctx, es.s.NodePool, 0)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&va), &afv1.VsphereAgent{}))
		}, 60*time.Second, 250*time.Millisecond).Should(BeTrue())
		_, err := vs.FindVM(ctx, vcsim.Datacenter, va.Status.VM.InstanceUUID, "")
		Expect(vsphere.IsNotFound(err)).To(BeTrue(), "the VM is destroyed: %v", err)
		Eventually(func() []string { return eventsWith(ctx, &va, "ISOEjectionClosed:") }, 10*time.Second, 250*time.Millisecond).
			Should(ConsistOf(ContainSubstring("different question")))
	})

	It("deletes a VsphereAgent with a recorded ejection whose pool is already gone, without reaching for credentials", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenario()
		va := &afv1.VsphereAgent{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: "orphan", Finalizers: []string{afv1.FinalizerVsphereAgent}},
			Spec:       afv1.VsphereAgentSpec{PoolRef: afv1.LocalObjectReference{Name: "gone"}},
		}
		Expect(k8s.Create(ctx, va)).To(Succeed())
		id := string(uuid.NewUUID())
		Eventually(func() error { // the operator writes its PoolNotFound condition meanwhile
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(va), va)).To(Succeed())
			va.Status.VM = afv1.VMStatus{Name: "orphan", InstanceUUID: id, Phase: afv1.VMPhaseBound, Datacenter: vcsim.Datacenter}
			va.Status.ISOEjection = &afv1.ISOEjectionRecord{InstanceUUID: id, OwnerUID: string(va.UID), Datacenter: vcsim.Datacenter,
				DeviceKey: 3000, ISOPath: "[" + vcsim.Datastore + "] agent-forge/x/" + strings.Repeat("a", 64) + ".iso", StartedAt: metav1.Now()}
			return k8s.Status().Update(ctx, va)
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())

		Expect(k8s.Delete(ctx, va)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(va), &afv1.VsphereAgent{}))
		}, 90*time.Second, 250*time.Millisecond).Should(BeTrue())
		Eventually(func() []string { return eventsWith(ctx, va, "ISOEjectionClosed:") }, 10*time.Second, 250*time.Millisecond).
			Should(ConsistOf(ContainSubstring("pool is gone")))
	})
})

var _ = Describe("ISO ejection with outdated CRDs", func() {
	It("starts no ejection while the served CRD would prune recovery fields, and says so on the pool and in a metric", func(ctx context.Context) {
		pruneRecoveryFields(ctx, "questionID", "agentUID")
		es := startEjectScenario(operatorOptions{}, world.Options{}, optedIn)
		va := es.boundVAs(ctx, 1)[0]

		Eventually(func() string { return conditionReason(getPool(es.pool), afv1.ConditionCRDsCurrent) }, 20*time.Second, 250*time.Millisecond).
			Should(Equal(afv1.ReasonCRDsOutdated))
		Eventually(func() string { return ejectCondition(&va).Message }, 20*time.Second, 250*time.Millisecond).
			Should(And(ContainSubstring("status.isoEjection.agentUID"), ContainSubstring("status.isoEjection.questionID")))
		Expect(ejectReason(&va)).To(Equal(afv1.ReasonEjectionFailed))
		Expect(crdOutdatedMetric()).To(Equal(1.0))
		Consistently(func() []string { return attachedISOs(vmOf(&va)) }, 2*time.Second, 250*time.Millisecond).Should(HaveLen(1))
		Expect(getVA(&va).Status.ISOEjection).To(BeNil())

		By("the periodic check sees the updated CRD: ejection proceeds and the pool says so")
		restoreCRD(ctx)
		es.op.clock.Step(time.Minute)
		Eventually(func() string { return conditionReason(getPool(es.pool), afv1.ConditionCRDsCurrent) }, 20*time.Second, 250*time.Millisecond).
			Should(Equal(afv1.ReasonCRDsCurrent))
		pokePool(es.pool)
		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(crdOutdatedMetric()).To(Equal(0.0))
	})
})

const vsphereAgentCRDName = "vsphereagents.agent-forge.containeroo.ch"

var savedCRDSpec map[string]any

func getCRD(ctx context.Context) *unstructured.Unstructured {
	GinkgoHelper()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	Expect(k8s.Get(ctx, client.ObjectKey{Name: vsphereAgentCRDName}, crd)).To(Succeed())
	return crd
}

// pruneRecoveryFields serves a VsphereAgent CRD without some status.isoEjection fields (an older CRD);
// the original is restored when the spec ends.
func pruneRecoveryFields(ctx context.Context, fields ...string) {
	GinkgoHelper()
	crd := getCRD(ctx)
	savedCRDSpec = crd.DeepCopy().Object["spec"].(map[string]any)
	DeferCleanup(restoreCRD, context.Background())
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		props := []string{"schema", "openAPIV3Schema", "properties", "status", "properties", "isoEjection", "properties"}
		for _, f := range fields {
			unstructured.RemoveNestedField(v.(map[string]any), append(props, f)...)
		}
	}
	Expect(unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")).To(Succeed())
	Expect(k8s.Update(ctx, crd)).To(Succeed())
}

func restoreCRD(ctx context.Context) {
	GinkgoHelper()
	if savedCRDSpec == nil {
		return
	}
	Eventually(func() error {
		crd := getCRD(ctx)
		crd.Object["spec"] = savedCRDSpec
		return k8s.Update(ctx, crd)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	savedCRDSpec = nil
}

func crdOutdatedMetric() float64 {
	GinkgoHelper()
	m := &dto.Metric{}
	Expect(metrics.CRDSchemaOutdated.WithLabelValues(vsphereAgentCRDName).Write(m)).To(Succeed())
	return m.GetGauge().GetValue()
}

package controllers_test

import (
	"context"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/vmware/govmomi/object"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Discovery ISO ejection", func() {
	It("ejects after installation, answering only the recorded CD-ROM lock question, and includes existing workers when enabled", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil) // ejectAfterInstall defaults to false
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseBound) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func() []string { return ejectReasons(pool) }, 90*time.Second, 250*time.Millisecond).Should(ConsistOf(afv1.ReasonDisabled, afv1.ReasonDisabled))

		vas := vsphereAgents(pool)
		locked, err := vc.WrapVM(vas[0].Status.VM.InstanceUUID) // this guest holds the CD-ROM door
		Expect(err).NotTo(HaveOccurred())
		ejects, answers := isoOps(metrics.ISOOpEject, metrics.ResultSuccess), isoOps(metrics.ISOOpAnswer, metrics.ResultSuccess)

		By("opting the pool in: the existing installed workers are ejected")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = true })
		Eventually(func() []string { return ejectReasons(pool) }, 60*time.Second, 250*time.Millisecond).Should(ConsistOf(afv1.ReasonEjected, afv1.ReasonEjected))
		for _, va := range vsphereAgents(pool) {
			Expect(va.Status.ISOEjection).To(BeNil(), "the record is cleared after success")
			Expect(attachedISOs(vmOf(&va))).To(BeEmpty())
		}
		got := locked.Answers()
		Expect(got).To(HaveLen(1))
		Expect(got[0].Yes).To(BeTrue())
		Expect(got[0].Label).To(Equal("button.yes"), "the real-shaped question: the message key in label")
		Expect(locked.Reconfigures()).To(Equal(1))

		By("metrics count each eject and the answer as its own operation")
		Expect(isoOps(metrics.ISOOpEject, metrics.ResultSuccess) - ejects).To(Equal(2.0))
		Expect(isoOps(metrics.ISOOpAnswer, metrics.ResultSuccess) - answers).To(Equal(1.0))
		Eventually(func() *afv1.ISOEjectionSummary { return getPool(pool).Status.ISOEjections }, 10*time.Second, 250*time.Millisecond).
			Should(Equal(&afv1.ISOEjectionSummary{Ejected: 2}))

		By("disabling the feature keeps the last Ejected condition")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = false })
		Consistently(func() []string { return ejectReasons(pool) }, 2*time.Second, 250*time.Millisecond).Should(ConsistOf(afv1.ReasonEjected, afv1.ReasonEjected))
	})
})

// ejectScenario is an operator (replaceable: restart), a world and a pool "workers". At the end the
// pool is deleted while the current operator still runs, then that operator is stopped.
type ejectScenario struct {
	op   *operator
	s    *world.Scenario
	d    *world.Driver
	pool *afv1.VsphereAgentPool
}

func startEjectScenario(o operatorOptions, wo world.Options, customize func(*afv1.VsphereAgentPool)) *ejectScenario {
	GinkgoHelper()
	es := &ejectScenario{op: startOperator(o)}
	es.s = newScenario()
	es.d = startWorld(es.s, wo)
	p := newPool(es.s, "workers")
	if customize != nil {
		customize(p)
	}
	es.pool = createPool(p)
	DeferCleanup(func() {
		deletePoolAndWait(es.pool)
		es.op.stop()
	})
	return es
}

// restart stops the operator (a crash: a pass blocked in a crash point never writes its status) and
// starts a new one with o.
func (es *ejectScenario) restart(o operatorOptions) {
	GinkgoHelper()
	es.op.stop()
	es.op = startOperator(o)
}

// boundVAs scales the NodePool to n and waits for n bound VMs.
func (es *ejectScenario) boundVAs(ctx context.Context, n int) []afv1.VsphereAgent {
	GinkgoHelper()
	Expect(es.d.SetReplicas(ctx, es.s.NodePool, n)).To(Succeed())
	Eventually(func() int { return phaseCount(es.pool, afv1.VMPhaseBound) }, 60*time.Second, 250*time.Millisecond).Should(Equal(n))
	return vsphereAgents(es.pool)
}

func (es *ejectScenario) enable() {
	setPool(es.pool, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.EjectAfterInstall = true })
}

// crashHook returns a CrashPoint seam that, the first time point is reached, signals reached and
// blocks until the operator stops (its context ends): the pass dies before its status write.
func crashHook(point string) (func(context.Context, string, types.NamespacedName), chan struct{}) {
	reached := make(chan struct{})
	var once sync.Once
	return func(ctx context.Context, p string, _ types.NamespacedName) {
		if p != point {
			return
		}
		first := false
		once.Do(func() { first = true; close(reached) })
		if first {
			<-ctx.Done()
		}
	}, reached
}

func getVA(va *afv1.VsphereAgent) *afv1.VsphereAgent {
	GinkgoHelper()
	out := &afv1.VsphereAgent{}
	Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(va), out)).To(Succeed())
	return out
}

func ejectCondition(va *afv1.VsphereAgent) metav1.Condition {
	for _, c := range getVA(va).Status.Conditions {
		if c.Type == afv1.ConditionISOEjected {
			return c
		}
	}
	return metav1.Condition{}
}

func ejectReason(va *afv1.VsphereAgent) string { return ejectCondition(va).Reason }

func vmOf(va *afv1.VsphereAgent) *vsphere.VMInfo {
	GinkgoHelper()
	info, err := vs.FindVM(context.Background(), vcsim.Datacenter, va.Status.VM.InstanceUUID, "")
	Expect(err).NotTo(HaveOccurred())
	return info
}

// addCDROM attaches a second CD-ROM with isoPath to the VM (as an administrator would).
func addCDROM(ctx context.Context, va *afv1.VsphereAgent, isoPath string) {
	GinkgoHelper()
	gc, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = gc.Logout(ctx) }()
	vm := object.NewVirtualMachine(gc.Client, vc.VMByInstanceUUID(va.Status.VM.InstanceUUID).Self)
	devices, err := vm.Device(ctx)
	Expect(err).NotTo(HaveOccurred())
	ide, err := devices.FindIDEController("")
	Expect(err).NotTo(HaveOccurred())
	cd, err := devices.CreateCdrom(ide)
	Expect(err).NotTo(HaveOccurred())
	Expect(vm.AddDevice(ctx, devices.InsertIso(cd, isoPath))).To(Succeed())
}

// vaEvents lists the Events about a VsphereAgent as "Reason: message".
func vaEvents(ctx context.Context, va *afv1.VsphereAgent) []string {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(va.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "VsphereAgent" && e.InvolvedObject.Name == va.Name {
			out = append(out, e.Reason+": "+strings.TrimSpace(e.Message))
		}
	}
	return out
}

func isoOps(op, result string) float64 {
	GinkgoHelper()
	m := &dto.Metric{}
	Expect(metrics.ISOOperations.WithLabelValues(op, result).Write(m)).To(Succeed())
	return m.GetCounter().GetValue()
}

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

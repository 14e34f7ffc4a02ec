package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// imageScenario runs a pool on its own image server with two bound workers and one VM that registered
// but is not bound (the provider's binding is turned off while the third AgentMachine waits).
type imageScenario struct {
	srv     *sim.ISOServer
	s       *world.Scenario
	d       *world.Driver
	pool    *afv1.VsphereAgentPool
	created time.Time
	bound   []afv1.VsphereAgent
	unbound afv1.VsphereAgent
}

func startImageScenario(ctx context.Context, seed uint64, customize func(*afv1.VsphereAgentPool)) *imageScenario {
	GinkgoHelper()
	sc := &imageScenario{srv: sim.NewISOServer(sim.ISOServerOptions{Seed: seed, Size: 64 * 1024, Token: "image-token"})}
	DeferCleanup(sc.srv.Close)
	op := startOperator(operatorOptions{})
	DeferCleanup(op.stop)
	sc.s = newScenario()
	sc.created = time.Now().Add(-time.Hour).Truncate(time.Second)
	Expect(world.SetInfraEnvImage(ctx, k8s, sc.s.InfraEnv, sc.srv.URL(), sc.created)).To(Succeed())
	sc.d = startWorld(sc.s, world.Options{})
	p := newPool(sc.s, "workers")
	if customize != nil {
		customize(p)
	}
	sc.pool = createPool(p)
	DeferCleanup(deletePoolAndWait, sc.pool)

	Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 2)).To(Succeed())
	Eventually(func() int { return boundAgentsOf(sc.pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
	sc.d.SetBinding(false)
	Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 3)).To(Succeed())
	Eventually(func() int { return phaseCount(sc.pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
	for _, va := range vsphereAgents(sc.pool) {
		Expect(va.Status.VM.ImageCreatedTime).NotTo(BeNil(), "every VsphereAgent records the image version it booted")
		Expect(va.Status.VM.ImageCreatedTime.Time.Equal(sc.created)).To(BeTrue())
		Expect(conditionOf(va.Status.Conditions, afv1.ConditionImageCurrent)).To(Equal("True/" + afv1.ReasonCurrentImage))
		if va.Status.VM.Phase == afv1.VMPhaseAvailable {
			sc.unbound = va
		} else {
			sc.bound = append(sc.bound, va)
		}
	}
	Expect(sc.bound).To(HaveLen(2))
	return sc
}

// regenerate plays assisted-service regenerating the InfraEnv's image (new bytes, a later createdTime)
// and waits for the pool to cache it.
func (sc *imageScenario) regenerate(ctx context.Context, seed uint64) time.Time {
	GinkgoHelper()
	sc.srv.SetContent(seed, 64*1024)
	created := sc.created.Add(30 * time.Minute)
	Expect(world.SetInfraEnvImage(ctx, k8s, sc.s.InfraEnv, sc.srv.URL(), created)).To(Succeed())
	Eventually(func() string {
		p := getPool(sc.pool)
		if p.Status.ISO == nil {
			return ""
		}
		return p.Status.ISO.SHA256
	}, 90*time.Second, 200*time.Millisecond).Should(Equal(sc.srv.SHA256()))
	return created
}

// expectBoundUntouched: the bound workers keep their VsphereAgent, VM and the image they booted, and
// say that they booted an older image and are kept.
func (sc *imageScenario) expectBoundUntouched(g Gomega) {
	for _, was := range sc.bound {
		va := &afv1.VsphereAgent{}
		g.Expect(k8s.Get(context.Background(), key(was.Namespace, was.Name), va)).To(Succeed())
		g.Expect(va.DeletionTimestamp).To(BeNil())
		g.Expect(va.UID).To(Equal(was.UID))
		g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
		g.Expect(va.Status.VM.ISOPath).To(Equal(was.Status.VM.ISOPath))
		g.Expect(vc.VMByInstanceUUID(was.Status.VM.InstanceUUID)).NotTo(BeNil())
		g.Expect(conditionOf(va.Status.Conditions, afv1.ConditionImageCurrent)).To(Equal("False/" + afv1.ReasonOutdatedImageInUse))
	}
}

var _ = Describe("Outdated discovery image", func() {
	It("an unbound VM that booted an older image is replaced from the current one; bound workers are untouched", func(ctx context.Context) {
		sc := startImageScenario(ctx, 41, nil)
		oldPath := sc.unbound.Status.VM.ISOPath

		By("regenerating the InfraEnv's image")
		created := sc.regenerate(ctx, 42)

		By("the unbound VM is destroyed and a new one boots the current image")
		Eventually(func(g Gomega) {
			var replacement *afv1.VsphereAgent
			for _, va := range vsphereAgents(sc.pool) {
				g.Expect(va.Name).NotTo(Equal(sc.unbound.Name), "the outdated VsphereAgent is gone")
				if va.Status.VM.Phase == afv1.VMPhaseAvailable {
					replacement = va.DeepCopy()
				}
			}
			g.Expect(vc.VMByInstanceUUID(sc.unbound.Status.VM.InstanceUUID)).To(BeNil(), "the outdated VM is destroyed")
			g.Expect(replacement).NotTo(BeNil())
			g.Expect(replacement.Status.VM.ISOPath).NotTo(Equal(oldPath))
			g.Expect(replacement.Status.VM.ISOPath).To(ContainSubstring(sc.srv.SHA256()))
			g.Expect(replacement.Status.VM.ImageCreatedTime).NotTo(BeNil())
			g.Expect(replacement.Status.VM.ImageCreatedTime.Time.Equal(created)).To(BeTrue())
			g.Expect(conditionOf(replacement.Status.Conditions, afv1.ConditionImageCurrent)).To(Equal("True/" + afv1.ReasonCurrentImage))
			sc.expectBoundUntouched(g)
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolEventReasons(ctx, sc.pool)).To(ContainElement(afv1.ReasonOutdatedImage))
		Expect(poolEventMessages(ctx, sc.pool)).To(ContainElement(And(ContainSubstring(sc.unbound.Name), ContainSubstring("no AgentMachine has reserved its Agent"))))
		Expect(vsphereAgents(sc.pool)).To(HaveLen(3))

		By("the replacement serves the waiting AgentMachine once the provider binds again")
		sc.d.SetBinding(true)
		Eventually(func() int { return boundAgentsOf(sc.pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(3))
	})

	It("a pool that opted out (spec.iso.replaceOutdatedVMs: false) keeps the VM and says why", func(ctx context.Context) {
		sc := startImageScenario(ctx, 43, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.ReplaceOutdatedVMs = ptr.To(false) })
		sc.regenerate(ctx, 44)
		Eventually(func(g Gomega) {
			va := &afv1.VsphereAgent{}
			g.Expect(k8s.Get(ctx, key(sc.unbound.Namespace, sc.unbound.Name), va)).To(Succeed())
			g.Expect(conditionOf(va.Status.Conditions, afv1.ConditionImageCurrent)).To(Equal("False/" + afv1.ReasonOutdatedImageKept))
			sc.expectBoundUntouched(g)
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			va := &afv1.VsphereAgent{}
			g.Expect(k8s.Get(ctx, key(sc.unbound.Namespace, sc.unbound.Name), va)).To(Succeed())
			g.Expect(va.DeletionTimestamp).To(BeNil())
			g.Expect(vc.VMByInstanceUUID(sc.unbound.Status.VM.InstanceUUID)).NotTo(BeNil())
		}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolEventReasons(ctx, sc.pool)).NotTo(ContainElement(afv1.ReasonOutdatedImage))
	})
})

package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

var _ = Describe("Another agent-forge manager in the cluster", func() {
	It("takes no action while upstream's Lease is renewed, and serves the demand once it is not", func(ctx context.Context) {
		const upstreamNS, holder = "agent-forge-operator-system", "agent-forge-operator-7c9d8b6f5-q2x8w_5d1f3c2e-8a4b-4f6e-9c1d-2b7a0e4f6a13"
		// Before the operator starts (its first check sees the Lease); the operator's fake clock starts at
		// the real now, just after this renewal.
		now := time.Now()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upstreamNS}}
		if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		// Upstream's manager (controller-runtime's leader elector): 15s Lease, renewed every few seconds.
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: upstreamNS, Name: controllers.LeaderElectionID},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
				AcquireTime: &metav1.MicroTime{Time: now}, RenewTime: &metav1.MicroTime{Time: now}, LeaseTransitions: ptr.To[int32](0)},
		}
		Expect(k8s.Create(ctx, lease)).To(Succeed())
		op := startOperator(operatorOptions{namespace: "agent-forge-operator", managerCheck: 10 * time.Second})
		DeferCleanup(op.stop)
		clk := op.clock
		renew := func() {
			GinkgoHelper()
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(lease), lease)).To(Succeed())
			lease.Spec.RenewTime = &metav1.MicroTime{Time: clk.Now()}
			Expect(k8s.Update(ctx, lease)).To(Succeed())
		}
		s := newScenario()
		d := startWorld(s, world.Options{})
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)
		// Runs before the pool's cleanup: a Lease left behind would block the next spec's operator.
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, lease))).To(Succeed()) })
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())

		By("reporting the other manager on the pool: condition, Ready, a Warning Event naming the Lease, never acting")
		Eventually(func(g Gomega) {
			p := getPool(pool)
			c := findPoolCondition(p, afv1.ConditionOtherManagerActive)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(afv1.ReasonOtherManagerRunning))
			g.Expect(c.Message).To(And(ContainSubstring(upstreamNS), ContainSubstring(holder)))
			g.Expect(conditionReason(p, afv1.ConditionReady)).To(Equal(afv1.ReasonOtherManagerRunning))
			g.Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonOtherManagerRunning))
		}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
		untouched := func(g Gomega) {
			p := getPool(pool)
			g.Expect(controllerutil.ContainsFinalizer(p, afv1.FinalizerPool)).To(BeFalse(), "no finalizer written")
			g.Expect(vsphereAgents(pool)).To(BeEmpty(), "no VsphereAgent created")
			g.Expect(poolVMs(pool)).To(BeEmpty(), "no VM created")
			agentList := newAgentList()
			g.Expect(k8s.List(ctx, agentList, client.InNamespace(s.Namespace))).To(Succeed())
			g.Expect(agentList.Items).To(BeEmpty(), "no Agent registered, none touched")
			g.Expect(conditionReason(p, afv1.ConditionOtherManagerActive)).To(Equal(afv1.ReasonOtherManagerRunning))
		}
		Expect(getPool(pool).Status.WaitingAgentMachines).To(BeZero(), "no demand observed: the pass stopped at the gate")

		By("staying put across the elector's renewals (the watcher rechecks every 10s on the injected clock)")
		for range 6 {
			clk.Step(5 * time.Second)
			renew()
			Consistently(untouched, 700*time.Millisecond, 100*time.Millisecond).Should(Succeed())
		}

		By("acting once the renewals stop: the Lease expires after its 15s plus slack")
		clk.Step(30 * time.Second)
		Eventually(func(g Gomega) {
			c := findPoolCondition(getPool(pool), afv1.ConditionOtherManagerActive)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(afv1.ReasonNoOtherManager))
		}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(poolVMs(pool)).To(HaveLen(2))
		Expect(conditionReason(getPool(pool), afv1.ConditionReady)).NotTo(Equal(afv1.ReasonOtherManagerRunning))
	})
})

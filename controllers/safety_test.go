package controllers_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Isolation", func() {
	It("keeps two pools on two NodePools sharing one InfraEnv apart", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s1 := newScenario()
		s2, err := world.Setup(ctx, k8s, world.SetupOptions{Namespace: s1.Namespace, HostedCluster: s1.HostedCluster.Name,
			NodePool: "np2", InfraEnv: s1.InfraEnv.Name, AgentLabels: map[string]string{"example.com/pool": "second"}})
		Expect(err).NotTo(HaveOccurred())
		s2.Secret = s1.Secret
		d := startWorld(s1, world.Options{})
		p1 := createPool(newPool(s1, "first"))
		DeferCleanup(deletePoolAndWait, p1)
		p2 := createPool(newPool(s2, "second"))
		DeferCleanup(deletePoolAndWait, p2)
		Expect(d.SetReplicas(ctx, s1.NodePool, 2)).To(Succeed())
		Expect(d.SetReplicas(ctx, s2.NodePool, 3)).To(Succeed())
		Eventually(func() []int { return []int{boundAgentsOf(p1), boundAgentsOf(p2)} }, 60*time.Second, 250*time.Millisecond).Should(Equal([]int{2, 3}))
		Expect(poolVMs(p1)).To(HaveLen(2))
		Expect(poolVMs(p2)).To(HaveLen(3))
		for _, pair := range []struct {
			pool  *afv1.VsphereAgentPool
			label string
		}{{p1, s1.AgentLabels["example.com/pool"]}, {p2, "second"}} {
			for _, va := range vsphereAgents(pair.pool) {
				a := getAgent(ctx, pair.pool.Namespace, va.Status.VM.AgentName)
				Expect(a.GetLabels()[afv1.LabelPool]).To(Equal(pair.pool.Name))
				Expect(a.GetLabels()["example.com/pool"]).To(Equal(pair.label))
			}
		}
		Expect(d.SetReplicas(ctx, s1.NodePool, 0)).To(Succeed())
		Eventually(func() int { return len(poolVMs(p1)) }, 60*time.Second, 250*time.Millisecond).Should(BeZero())
		Consistently(func() int { return len(poolVMs(p2)) }, 2*time.Second, 250*time.Millisecond).Should(Equal(3))
		Expect(boundAgentsOf(p2)).To(Equal(3))
	})

	It("never labels, approves or deletes a foreign unbound Agent that matches the labels", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenario()
		d := startWorld(s, world.Options{})
		foreign := foreignAgent(ctx, s)
		before := foreign.DeepCopy()
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		Eventually(func() int { return len(poolVMs(pool)) }, 60*time.Second, 250*time.Millisecond).Should(BeZero())
		after := getAgent(ctx, s.Namespace, foreign.GetName())
		Expect(after.GetLabels()).To(Equal(before.GetLabels()))
		Expect(after.Object["spec"]).To(Equal(before.Object["spec"]))
		Expect(after.GetUID()).To(Equal(before.GetUID()))
	})
})

var _ = Describe("Workers are never destroyed while their Machine exists", func() {
	It("keeps a bound worker whose Agent lost the pool labels, or was deleted", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseBound) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func() int { return machineRefs(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
		vas := vsphereAgents(pool)

		By("removing the pool labels from one bound Agent")
		a := getAgent(ctx, s.Namespace, vas[0].Status.VM.AgentName)
		patch := client.MergeFrom(a.DeepCopy())
		labels := a.GetLabels()
		delete(labels, "example.com/pool")
		delete(labels, afv1.LabelPool)
		a.SetLabels(labels)
		Expect(k8s.Patch(ctx, a, patch)).To(Succeed())

		By("deleting the other bound Agent")
		b := getAgent(ctx, s.Namespace, vas[1].Status.VM.AgentName)
		Expect(k8s.Delete(ctx, b)).To(Succeed())

		Consistently(func() int { return len(poolVMs(pool)) }, 4*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(vsphereAgents(pool)).To(HaveLen(2))
	})

	It("cleans up after a scale-down that happened while the operator was stopped", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		s := newScenario()
		d := startWorld(s, world.Options{})
		pool := createPool(newPool(s, "workers"))
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(3))
		op.stop()

		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { ms, _ := d.MachinesOf(ctx, s.NodePool); return len(ms) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(poolVMs(pool)).To(HaveLen(3)) // nobody cleaned up while we were away

		op2 := startOperator(operatorOptions{})
		DeferCleanup(op2.stop)
		DeferCleanup(deletePoolAndWait, pool) // runs before op2.stop
		Eventually(func() int { return len(poolVMs(pool)) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Eventually(func() int { return agentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(boundAgentsOf(pool)).To(Equal(1))
	})
})

var _ = Describe("Registration liveness", func() {
	It("replaces a VM that never registers after registrationTimeout, and stops a pool whose VMs all fail", func(ctx context.Context) {
		op, _, _, pool := provisionUnregistered(ctx, operatorOptions{}, 2)
		first := vmNames(pool)

		By("stepping the clock past the registration timeout")
		op.clock.Step(21 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseFailed) }, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseProvisioning) }, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
		vms := poolVMs(pool)
		Expect(vms).To(HaveLen(2))
		for _, vm := range vms {
			Expect(first).NotTo(ContainElement(vm.Name), "the unregistered VMs are destroyed and replaced")
		}

		By("failing again: the pool stops creating and says why")
		op.clock.Step(21 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionRegistrationOK) }, 90*time.Second, 250*time.Millisecond).Should(Equal("RegistrationFailing"))
		Eventually(func() int { return len(poolVMs(pool)) }, 90*time.Second, 250*time.Millisecond).Should(BeZero())
		Consistently(func() int { return phaseCount(pool, afv1.VMPhaseProvisioning) + phaseCount(pool, afv1.VMPhasePending) }, 3*time.Second, 250*time.Millisecond).Should(BeZero())
		Expect(conditionReason(getPool(pool), afv1.ConditionReady)).To(Equal("RegistrationFailing"))
	})

	It("confirms a registration the cache has not seen yet with a live read, and keeps the VM", func(ctx context.Context) {
		hide := &atomic.Bool{}
		op, s, d, pool := provisionUnregistered(ctx, operatorOptions{hideAgents: hide}, 1)
		first := vmNames(pool)

		By("the host registers, but the operator's cache has not seen the Agent yet")
		hide.Store(true)
		d.SetRegistrationFilter(nil)
		Eventually(func() int {
			list := newAgentList()
			Expect(k8s.List(ctx, list, client.InNamespace(s.Namespace))).To(Succeed())
			return len(list.Items)
		}, 90*time.Second, 250*time.Millisecond).Should(Equal(1))

		By("stepping the clock past the registration timeout: the live read finds the Agent, the VM stays")
		op.clock.Step(21 * time.Minute)
		pokeVsphereAgents(pool)
		Consistently(func() []string { return vmNames(pool) }, 3*time.Second, 250*time.Millisecond).Should(Equal(first))
		Expect(phaseCount(pool, afv1.VMPhaseFailed)).To(BeZero())

		By("the cache catches up: the same VM's Agent is prepared")
		hide.Store(false)
		pokeVsphereAgents(pool)
		Eventually(func() int {
			return phaseCount(pool, afv1.VMPhaseAvailable) + phaseCount(pool, afv1.VMPhaseBound)
		}, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(vmNames(pool)).To(Equal(first))
	})
})

var _ = Describe("Pool deletion", func() {
	for _, policy := range []afv1.CleanupPolicy{afv1.CleanupPolicyDelete, afv1.CleanupPolicyRetain} {
		It(fmt.Sprintf("with cleanupPolicy %s never destroys a worker VM", policy), func(ctx context.Context) {
			op := startOperator(operatorOptions{})
			DeferCleanup(op.stop)
			s := newScenario()
			d := startWorld(s, world.Options{})
			p := newPool(s, "workers")
			p.Spec.CleanupPolicy = policy
			pool := createPool(p)
			uid := string(getPool(pool).UID)
			Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
			Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(3))
			deletePoolAndWait(pool)
			vms, err := vs.ListPoolVMs(ctx, vcsim.Datacenter, uid)
			Expect(err).NotTo(HaveOccurred())
			Expect(vms).To(HaveLen(3))
			list := newAgentList()
			Expect(k8s.List(ctx, list, client.InNamespace(s.Namespace))).To(Succeed())
			Expect(list.Items).To(HaveLen(3))
		})
	}
})

var _ = Describe("Surplus removal racing a reservation", func() {
	It("lets the reservation win and keeps the VM", func(ctx context.Context) {
		var d *world.Driver
		var once sync.Once
		raced := make(chan string, 1)
		op := startOperator(operatorOptions{beforeUnapprove: func(ctx context.Context, ns, name string) {
			once.Do(func() {
				defer GinkgoRecover()
				// The operator may call Available an Agent the world's status loop has not yet written
				// RequirementsMet for (the provider's filter): the provider would pick it up on its next
				// reconcile, so the race retries until the world agrees; the operator waits here meanwhile.
				Eventually(func() error {
					_, err := d.ReserveAgentForAnyWaiting(ctx, types.NamespacedName{Namespace: ns, Name: name})
					return err
				}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
				raced <- name
			})
		}})
		DeferCleanup(op.stop)
		s := newScenario()
		d = startWorld(s, world.Options{BindingDisabled: true})
		pool := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, pool)
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))

		By("scaling to 1: one of the two free Agents is surplus while one AgentMachine still waits")
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		var reserved string
		Eventually(raced, 90*time.Second).Should(Receive(&reserved))
		Eventually(func() int { return len(poolVMs(pool)) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		a := getAgent(ctx, s.Namespace, reserved)
		Expect(a.GetLabels()[agents.LabelAgentMachineRef]).NotTo(BeEmpty(), "the reservation won")
		approved, _, _ := unstructured.NestedBool(a.Object, "spec", "approved")
		Expect(approved).To(BeTrue())
		vas := vsphereAgents(pool)
		Expect(vas).To(HaveLen(1))
		Expect(vas[0].Status.VM.AgentName).To(Equal(reserved), "the reserved Agent's VM survives")
	})
})

var _ = Describe("A VsphereAgent deleted and recreated with the same name", func() {
	It("never mistakes the old VM for the new one's", func(ctx context.Context) {
		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		s := newScenario()
		startWorld(s, world.Options{Register: func(world.VM) bool { return false }})
		p := newPool(s, "workers")
		p.Spec.CleanupPolicy = afv1.CleanupPolicyRetain
		pool := createPool(p)
		DeferCleanup(deletePoolAndWait, pool)
		Eventually(func() string { return isoPath(getPool(pool)) }, 90*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())

		va := &afv1.VsphereAgent{}
		va.Namespace, va.Name = s.Namespace, "manual-vm"
		va.Labels = map[string]string{afv1.LabelPool: pool.Name}
		va.Spec.PoolRef.Name = pool.Name
		createdBy(va, getPool(pool))
		Expect(k8s.Create(ctx, va.DeepCopy())).To(Succeed())
		old := &afv1.VsphereAgent{}
		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(va), old)).To(Succeed())
			return old.Status.VM.InstanceUUID
		}, 90*time.Second, 250*time.Millisecond).ShouldNot(BeEmpty())
		oldUUID := old.Status.VM.InstanceUUID

		Expect(k8s.Delete(ctx, old)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(va), &afv1.VsphereAgent{}) }, 90*time.Second).ShouldNot(Succeed())
		Expect(k8s.Create(ctx, va.DeepCopy())).To(Succeed())
		fresh := &afv1.VsphereAgent{}
		Consistently(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(va), fresh)).To(Succeed())
			return fresh.Status.VM.InstanceUUID
		}, 3*time.Second, 250*time.Millisecond).ShouldNot(Equal(oldUUID))
		Expect(fresh.UID).NotTo(Equal(old.UID))
		Expect(vc.VMByInstanceUUID(oldUUID)).NotTo(BeNil(), "the old VM was kept (Retain) and never touched")

		By("deleting the new VsphereAgent under Delete: the old VM still survives")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.CleanupPolicy = afv1.CleanupPolicyDelete })
		Expect(k8s.Delete(ctx, fresh)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(va), &afv1.VsphereAgent{}) }, 90*time.Second).ShouldNot(Succeed())
		Expect(vc.VMByInstanceUUID(oldUUID)).NotTo(BeNil())
	})
})

func getAgent(ctx context.Context, ns, name string) *unstructured.Unstructured {
	GinkgoHelper()
	a := agents.New(agents.AgentGVK)
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, a)).To(Succeed())
	return a
}

// foreignAgent registers an Agent that is not ours but carries the pool's labels (unapproved, free).
func foreignAgent(ctx context.Context, s *world.Scenario) *unstructured.Unstructured {
	GinkgoHelper()
	a := agents.New(agents.AgentGVK)
	a.SetNamespace(s.Namespace)
	a.SetName("foreign-host")
	labels := map[string]string{agents.LabelInfraEnv: s.InfraEnv.Name}
	for k, v := range s.AgentLabels {
		labels[k] = v
	}
	a.SetLabels(labels)
	Expect(unstructured.SetNestedField(a.Object, false, "spec", "approved")).To(Succeed())
	Expect(unstructured.SetNestedField(a.Object, "", "spec", "role")).To(Succeed()) // required by the Agent CRD
	Expect(k8s.Create(ctx, a)).To(Succeed())
	Expect(unstructured.SetNestedSlice(a.Object, []any{
		map[string]any{"type": "Connected", "status": "True", "reason": "AgentIsConnected", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		map[string]any{"type": "Validated", "status": "True", "reason": "ValidationsPassing", "lastTransitionTime": "2026-01-01T00:00:00Z"},
	}, "status", "conditions")).To(Succeed())
	Expect(unstructured.SetNestedField(a.Object, []any{map[string]any{
		"macAddress": "02:00:00:aa:bb:cc", "flags": []any{"up"}, "ipV4Addresses": []any{}, "ipV6Addresses": []any{},
	}}, "status", "inventory", "interfaces")).To(Succeed())
	Expect(k8s.Status().Update(ctx, a)).To(Succeed())
	return getAgent(ctx, s.Namespace, "foreign-host")
}

func machineRefs(p *afv1.VsphereAgentPool) int {
	n := 0
	for _, va := range vsphereAgents(p) {
		if va.Status.VM.MachineName != "" {
			n++
		}
	}
	return n
}

func vmNames(p *afv1.VsphereAgentPool) []string {
	var out []string
	for _, vm := range poolVMs(p) {
		out = append(out, vm.Name)
	}
	return out
}

// pokeVsphereAgents changes an annotation on each VsphereAgent so they reconcile now (after the fake
// clock moved).
func pokeVsphereAgents(p *afv1.VsphereAgentPool) {
	GinkgoHelper()
	for _, va := range vsphereAgents(p) {
		patch := client.MergeFrom(va.DeepCopy())
		if va.Annotations == nil {
			va.Annotations = map[string]string{}
		}
		va.Annotations["test.agent-forge/poke"] = time.Now().Format(time.RFC3339Nano)
		Expect(client.IgnoreNotFound(k8s.Patch(context.Background(), &va, patch))).To(Succeed())
	}
}

// provisionUnregistered starts the operator and a world whose hosts do not call home, creates a pool and
// waits until n of its VMs are provisioning.
func provisionUnregistered(ctx context.Context, o operatorOptions, n int) (*operator, *world.Scenario, *world.Driver, *afv1.VsphereAgentPool) {
	GinkgoHelper()
	op, s, d, pool := startPoolScenario(o, nil)
	d.SetRegistrationFilter(func(world.VM) bool { return false }) // before any VM exists
	Expect(d.SetReplicas(ctx, s.NodePool, n)).To(Succeed())
	Eventually(func() int { return phaseCount(pool, afv1.VMPhaseProvisioning) }, 90*time.Second, 250*time.Millisecond).Should(Equal(n))
	return op, s, d, pool
}

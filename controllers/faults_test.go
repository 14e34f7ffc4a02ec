package controllers_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// Fault campaign (issue 12): vCenter faults injected in the simulator process (its FaultInjectionRule
// over the control endpoint), one spec per fault. Each checks the outcome in the simulator (VMs), on the
// objects (conditions, Events) and in the vSphere metrics, and, for a permanent fault, that the operator's
// vSphere call rate stays bounded (no hot loop).

// vsphereCalls counts the operator's vSphere API calls per SOAP method so far (the sample count of
// agent_forge_vsphere_call_duration_seconds: one observation per call).
func vsphereCalls() map[string]uint64 {
	GinkgoHelper()
	ch := make(chan prometheus.Metric, 256)
	go func() { metrics.VsphereCallDuration.Collect(ch); close(ch) }()
	out := map[string]uint64{}
	for m := range ch {
		var pb dto.Metric
		Expect(m.Write(&pb)).To(Succeed())
		method := ""
		for _, l := range pb.GetLabel() {
			if l.GetName() == "method" {
				method = l.GetValue()
			}
		}
		out[method] += pb.GetHistogram().GetSampleCount()
	}
	return out
}

// callsSince is the number of calls of method ("" = every method) since before.
func callsSince(before map[string]uint64, method string) uint64 {
	now := vsphereCalls()
	var n uint64
	for m, c := range now {
		if method == "" || m == method {
			n += c - before[m]
		}
	}
	return n
}

// vmOperations reads agent_forge_vsphere_vm_operations_total{operation, result}.
func vmOperations(op, result string) float64 {
	GinkgoHelper()
	var pb dto.Metric
	Expect(metrics.VsphereVMOperations.WithLabelValues(op, result).Write(&pb)).To(Succeed())
	return pb.GetCounter().GetValue()
}

// onceFilter matches the first call only (counted here: the simulator's own MaxCount counter is read
// without a lock).
func onceFilter() func(mo.Reference) bool {
	var fired atomic.Bool
	return func(mo.Reference) bool { return fired.CompareAndSwap(false, true) }
}

// permanentCreateFault is one CreateVM_Task fault that stays until removed.
type permanentCreateFault struct {
	fault  types.BaseMethodFault
	reason string // the VsphereAgent's VMCreated reason (the vSphere error class)
}

// rateWindow is how long the call rate is watched under a permanent fault, and callBudget the most
// vSphere calls of any method the operator may make in it for the one pool (measured: see
// docs/reliability.md, Faults). A hot loop makes hundreds.
const (
	rateWindow = 30 * time.Second
	callBudget = 40
)

var _ = Describe("Fault campaign: vCenter faults", func() {
	DescribeTable("a permanent CreateVM fault: the reason shows, no VM, a bounded call rate, recovery once it is gone",
		func(ctx context.Context, f permanentCreateFault) {
			_, s, d, pool := startPoolWithISO(operatorOptions{}, nil)

			vc.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "CreateVM_Task", ObjectType: "Folder",
				ObjectName: s.Namespace, Probability: 1, FaultType: simulator.FaultTypeCustom, Enabled: true, Fault: f.fault})
			DeferCleanup(func() { vc.Service().ClearFaultRules() })
			failedBefore := vmOperations("create", f.reason)

			Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())

			By("the reason is on the VsphereAgent's conditions, in an Event and in the operations metric")
			var va afv1.VsphereAgent
			Eventually(func(g Gomega) {
				vas := vsphereAgents(pool)
				g.Expect(vas).To(HaveLen(1))
				va = vas[0]
				g.Expect(conditionOf(va.Status.Conditions, afv1.ConditionVMCreated)).To(Equal("False/" + f.reason))
				g.Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhasePending))
				g.Expect(objectEventReasons(ctx, va.Namespace, "VsphereAgent", va.Name)).To(ContainElement(afv1.ReasonVMCreateFailed))
				g.Expect(vmOperations("create", f.reason)).To(BeNumerically(">", failedBefore))
			}, 90*time.Second, 200*time.Millisecond).Should(Succeed())

			By("the call rate stays bounded while the fault lasts: no hot loop, one VsphereAgent, no VM")
			start := vsphereCalls()
			createsBefore := vmOperations("create", f.reason)
			Consistently(func(g Gomega) {
				g.Expect(callsSince(start, "")).To(BeNumerically("<=", callBudget))
				g.Expect(vsphereAgents(pool)).To(HaveLen(1), "no replacement VsphereAgents while one retries")
				g.Expect(vc.CountVMsNamed(va.Name)).To(BeZero())
			}, rateWindow, time.Second).Should(Succeed())
			calls, creates := callsSince(start, ""), vmOperations("create", f.reason)-createsBefore
			GinkgoWriter.Printf("fault %s: %d vSphere calls (%d CreateVM_Task, %.0f failed creates) in %s\n",
				f.reason, calls, callsSince(start, "CreateVM_Task"), creates, rateWindow)
			AddReportEntry("calls under permanent "+f.reason, calls)

			By("the fault removed, the same VsphereAgent creates its VM and the AgentMachine is served")
			vc.Service().ClearFaultRules()
			Eventually(func() int { return boundAgentsOf(pool) }, 3*time.Minute, 500*time.Millisecond).Should(Equal(1))
			vms := poolVMs(pool)
			Expect(vms).To(HaveLen(1))
			Expect(vms[0].Name).To(Equal(va.Name))
			Expect(vsphereAgents(pool)).To(HaveLen(1))
		},
		Entry("NoPermission", permanentCreateFault{reason: "PermissionDenied",
			fault: &types.NoPermission{PrivilegeId: "VirtualMachine.Inventory.Create"}}),
		Entry("datastore full (NoDiskSpace)", permanentCreateFault{reason: "Fault",
			fault: &types.NoDiskSpace{Datastore: "LocalDS_0"}}),
	)

	It("session expiry mid-operation: the client logs in again and the create completes, once", func(ctx context.Context) {
		_, s, d, pool := startPoolWithISO(operatorOptions{}, nil)

		vc.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "CreateVM_Task", ObjectType: "Folder",
			ObjectName: s.Namespace, Probability: 1, FaultType: simulator.FaultTypeNotAuthenticated, Enabled: true,
			InclusionPropertyFilter: onceFilter()})
		DeferCleanup(func() { vc.Service().ClearFaultRules() })
		start := vsphereCalls()

		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(poolVMs(pool)).To(HaveLen(1), "one VM, never a second")
		Expect(vsphereAgents(pool)).To(HaveLen(1))
		Expect(callsSince(start, "Login")).To(BeNumerically(">=", 1), "a new session")
		Expect(callsSince(start, "CreateVM_Task")).To(BeNumerically(">=", 2), "the refused call and its retry")
	})

	It("a failed power-on: the VM is kept and powered on by a retry, never a second VM", func(ctx context.Context) {
		_, s, d, pool := startPoolWithISO(operatorOptions{}, nil)

		vc.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "PowerOnVM_Task", ObjectType: "VirtualMachine", ObjectName: "*",
			Probability: 1, FaultType: simulator.FaultTypeCustom, Enabled: true, InclusionPropertyFilter: onceFilter(),
			Fault: &types.InsufficientResourcesFault{}}) // the host cannot power it on (InvalidPowerState would mean "already on")
		DeferCleanup(func() { vc.Service().ClearFaultRules() })
		start := vsphereCalls()

		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(poolVMs(pool)).To(HaveLen(1), "one VM, never a second")
		Expect(vsphereAgents(pool)).To(HaveLen(1))
		Expect(callsSince(start, "PowerOnVM_Task")).To(BeNumerically(">=", 2), "the failed power-on and its retry")
		Expect(callsSince(start, "CreateVM_Task")).To(Equal(uint64(1)), "the VM is not created again")
	})
	It("a failed destroy: the VM and its Agent stay until a retry destroys it; the Agent goes after the VM", func(ctx context.Context) {
		_, s, d, pool := startPoolWithISO(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		vas := vsphereAgents(pool)
		Expect(vas).To(HaveLen(1))
		vm, err := vc.WrapVM(string(vas[0].UID))
		Expect(err).NotTo(HaveOccurred())
		vm.FailNextTask("Destroy_Task", &types.InvalidState{})
		destroyFaults := vmOperations("destroy", "Fault") + vmOperations("destroy", "Transient")

		Expect(d.SetReplicas(ctx, s.NodePool, 0)).To(Succeed())
		By("at every observation, an Agent gone means the VM is gone (Agents read first)")
		Eventually(func(g Gomega) {
			agents := agentsOf(pool)
			vms := vc.CountVMsNamed(vas[0].Name)
			Expect(agents == 0 && vms > 0).To(BeFalse(), "the Agent was deleted while its VM still exists")
			g.Expect(vms).To(BeZero())
			g.Expect(agents).To(BeZero())
			g.Expect(vsphereAgents(pool)).To(BeEmpty())
		}, 90*time.Second, 100*time.Millisecond).Should(Succeed())
		Expect(vmOperations("destroy", "Fault")+vmOperations("destroy", "Transient")).To(BeNumerically(">", destroyFaults), "the failed destroy is counted")
		Expect(poolVMs(pool)).To(BeEmpty())
	})
	It("a slow call that then fails (5 s, HostCommunication): the create is retried, one VM", func(ctx context.Context) {
		_, s, d, pool := startPoolWithISO(operatorOptions{}, nil)

		vc.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "CreateVM_Task", ObjectType: "Folder",
			ObjectName: s.Namespace, Probability: 1, FaultType: simulator.FaultTypeCustom, Enabled: true, Delay: 5000,
			InclusionPropertyFilter: onceFilter(), Fault: &types.HostCommunication{}})
		DeferCleanup(func() { vc.Service().ClearFaultRules() })
		start := vsphereCalls()

		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(poolVMs(pool)).To(HaveLen(1), "one VM, never a second")
		Expect(vsphereAgents(pool)).To(HaveLen(1))
		Expect(callsSince(start, "CreateVM_Task")).To(Equal(uint64(2)), "the slow failed call and one retry")
	})
	It("a failed reconfigure (ISO ejection task): EjectionFailed, backoff on the injected clock, then ejected; the VM stays", func(ctx context.Context) {
		es := startEjectScenario(operatorOptions{}, world.Options{}, nil)
		va := es.boundVAs(ctx, 1)[0]
		vm := vcVM(&va)
		vm.FailNextTask("ReconfigVM_Task", &types.GenericVmConfigFault{Reason: "device busy"})
		failures := isoOps(metrics.ISOOpEject, metrics.ResultFailure)

		es.enable()
		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjectionFailed))
		Expect(isoOps(metrics.ISOOpEject, metrics.ResultFailure) - failures).To(BeNumerically(">=", 1))
		Eventually(func() []string { return eventsWith(ctx, &va, "ISOEjectionFailed:") }, 10*time.Second, 250*time.Millisecond).Should(HaveLen(1))
		By("no retry before the backoff has passed on the injected clock")
		pokePool(es.pool)
		Consistently(func() string { return ejectReason(&va) }, 2*time.Second, 100*time.Millisecond).Should(Equal(afv1.ReasonEjectionFailed))

		es.op.clock.Step(11 * time.Minute) // past the longest backoff
		pokePool(es.pool)
		Eventually(func() string { return ejectReason(&va) }, 90*time.Second, 250*time.Millisecond).Should(Equal(afv1.ReasonEjected))
		Expect(attachedISOs(vmOf(&va))).To(BeEmpty())
		Expect(poolVMs(es.pool)).To(HaveLen(1), "the VM stays")
		Expect(boundAgentsOf(es.pool)).To(Equal(1))
	})
	It("a call that outlasts the pass timeout: the pass is cut off, retried, one VM", func(ctx context.Context) {
		_, s, d, pool := startPoolWithISO(operatorOptions{vmPassTimeout: 3 * time.Second}, nil)

		// vCenter does not answer the first create for 20 s (then fails it): longer than the pass may take.
		vc.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "CreateVM_Task", ObjectType: "Folder",
			ObjectName: s.Namespace, Probability: 1, FaultType: simulator.FaultTypeCustom, Enabled: true, Delay: 20000,
			InclusionPropertyFilter: onceFilter(), Fault: &types.HostCommunication{}})
		DeferCleanup(func() { vc.Service().ClearFaultRules() })
		start, transient := vsphereCalls(), vmOperations("create", "Transient")

		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(vmOperations("create", "Transient")).To(BeNumerically(">", transient), "the cut-off create counted as transient")
		Expect(callsSince(start, "CreateVM_Task")).To(BeNumerically(">=", 2), "the hung call and its retry")
		Expect(poolVMs(pool)).To(HaveLen(1), "one VM, never a second")
		Expect(vsphereAgents(pool)).To(HaveLen(1))
	})
})

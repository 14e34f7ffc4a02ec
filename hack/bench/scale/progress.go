package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	vimtypes "github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// Controller names as registered with the manager (their workqueue and worker metrics carry them).
var controllerNames = map[string]string{"pool": "vsphereagentpool", "vm": "vsphereagent"}

// sampler records the pipeline every interval from what the API server, the simulator, the
// operator's metrics and the world driver show, and logs every logEvery-th sample.
type sampler struct {
	// c reads the pipeline: an informer cache, so sampling costs the API server nothing per sample.
	c         client.Reader
	vc        *vim25.Client
	gatherer  prometheus.Gatherer
	world     *world.Driver
	throttled func() int
	start     time.Time

	mu      sync.Mutex
	samples []sample
}

// take reads one sample.
func (s *sampler) take(ctx context.Context) (sample, error) {
	smp := sample{At: time.Since(s.start)}
	ams := &unstructured.UnstructuredList{}
	ams.SetGroupVersionKind(world.AgentMachineGVK.GroupVersion().WithKind("AgentMachineList"))
	if err := s.c.List(ctx, ams); err != nil {
		return smp, err
	}
	smp.Counts[stageMachines] = len(ams.Items)
	for i := range ams.Items {
		if answered(&ams.Items[i]) {
			smp.Counts[stageAsked]++
		}
	}

	var vas afv1.VsphereAgentList
	if err := s.c.List(ctx, &vas); err != nil {
		return smp, err
	}
	names := make(map[string]bool, len(vas.Items))
	for _, va := range vas.Items {
		names[va.Name] = true
	}
	smp.Counts[stageRequested] = len(vas.Items)

	created, on, err := simulatorVMs(ctx, s.vc, names)
	if err != nil {
		return smp, err
	}
	smp.Counts[stageCreated], smp.Counts[stagePoweredOn] = created, on

	agents := &unstructured.UnstructuredList{}
	agents.SetGroupVersionKind(world.AgentGVK.GroupVersion().WithKind("AgentList"))
	if err := s.c.List(ctx, agents, client.HasLabels{world.LabelInfraEnv}); err != nil {
		return smp, err
	}
	for _, a := range agents.Items {
		smp.Counts[stageRegistered]++
		approved, _, _ := unstructured.NestedBool(a.Object, "spec", "approved")
		if approved && a.GetLabels()[afv1.LabelPool] != "" {
			smp.Counts[stagePrepared]++
		}
		if a.GetLabels()[world.LabelAgentMachineRef] != "" {
			smp.Counts[stageBound]++
		}
	}

	var pools afv1.VsphereAgentPoolList
	if err := s.c.List(ctx, &pools); err != nil {
		return smp, err
	}
	for _, p := range pools.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == afv1.ConditionRegistrationOK && c.Status == "False" {
				smp.Op.Breakers++
			}
		}
	}
	s.operatorMetrics(&smp.Op)
	if s.throttled != nil {
		smp.Op.Throttled = s.throttled()
	}
	if s.world != nil {
		t := s.world.Timing()
		now := time.Now()
		smp.World = worldSignals{Phase: t.Phase, LastPass: t.LastPass, LongestPhase: t.LongestPhase,
			LongestPhaseTook: t.LongestPhaseTook, Errors: t.Errors, LastError: t.LastError}
		if !t.PassStart.IsZero() {
			smp.World.PassFor, smp.World.PhaseFor = now.Sub(t.PassStart), now.Sub(t.PhaseStart)
		}
		if t.Loops != nil {
			smp.World.Loops = map[string]loopSignals{}
			for name, l := range t.Loops {
				ls := loopSignals{LongestRun: l.LongestRun, Runs: l.Runs}
				if !l.RunStart.IsZero() {
					ls.RunningFor = now.Sub(l.RunStart)
				}
				smp.World.Loops[name] = ls
			}
		}
	}
	return smp, nil
}

// operatorMetrics reads workqueue depth, active and maximum workers, and retries from the
// in-process controllers' metrics.
func (s *sampler) operatorMetrics(op *opSignals) {
	op.Queue, op.Busy, op.Workers = map[string]int{}, map[string]int{}, map[string]int{}
	families, err := s.gatherer.Gather()
	if err != nil {
		return
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for key, ctl := range controllerNames {
				if !hasLabel(m, ctl) {
					continue
				}
				switch f.GetName() {
				case "workqueue_depth":
					op.Queue[key] = int(m.GetGauge().GetValue())
				case "controller_runtime_active_workers":
					op.Busy[key] = int(m.GetGauge().GetValue())
				case "controller_runtime_max_concurrent_reconciles":
					op.Workers[key] = int(m.GetGauge().GetValue())
				case "controller_runtime_reconcile_total":
					// Rate-limited requeues (with backoff) are passes ending in an error or Requeue;
					// workqueue_retries_total also counts every RequeueAfter timer, which is no backoff.
					if r := labelValue(m, "result"); r == "error" || r == "requeue" {
						op.Retries += int(m.GetCounter().GetValue())
					}
				}
			}
		}
	}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func hasLabel(m *dto.Metric, value string) bool {
	for _, l := range m.GetLabel() {
		if (l.GetName() == "name" || l.GetName() == "controller") && l.GetValue() == value {
			return true
		}
	}
	return false
}

// simulatorVMs counts the simulator's VMs named like a VsphereAgent, and those powered on.
func simulatorVMs(ctx context.Context, c *vim25.Client, names map[string]bool) (created, poweredOn int, err error) {
	v, err := view.NewManager(c).CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var vms []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, []string{"name", "runtime.powerState"}, &vms); err != nil {
		return 0, 0, err
	}
	for _, vm := range vms {
		if !names[vm.Name] {
			continue
		}
		created++
		if vm.Runtime.PowerState == vimtypes.VirtualMachinePowerStatePoweredOn {
			poweredOn++
		}
	}
	return created, poweredOn, nil
}

// run samples every interval until ctx ends or done reports true; it logs every logEvery-th sample.
func (s *sampler) run(ctx context.Context, interval time.Duration, logEvery int, done func(sample) bool) error {
	for n := 0; ; n++ {
		smp, err := s.take(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			logf("progress: sample failed: %v", err)
		} else {
			s.mu.Lock()
			s.samples = append(s.samples, smp)
			s.mu.Unlock()
			if n%logEvery == 0 || done(smp) {
				logf("%s", progressLine(smp))
			}
			if done(smp) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

func (s *sampler) all() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}

// progressLine is one sample for a person: the pipeline, the operator's queues, the world's pace.
func progressLine(smp sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "progress %4.0fs:", smp.At.Seconds())
	for st := stage(0); st < numStages; st++ {
		fmt.Fprintf(&b, " %s %d", st, smp.Counts[st])
		if st+1 < numStages {
			b.WriteString(",")
		}
	}
	fmt.Fprintf(&b, " | pool queue %d (%d/%d busy), vm queue %d (%d/%d busy), rate-limited requeues %d",
		smp.Op.Queue["pool"], smp.Op.Busy["pool"], smp.Op.Workers["pool"], smp.Op.Queue["vm"], smp.Op.Busy["vm"], smp.Op.Workers["vm"], smp.Op.Retries)
	if smp.Op.Breakers > 0 {
		fmt.Fprintf(&b, ", %d breakers open", smp.Op.Breakers)
	}
	switch {
	case smp.World.Loops != nil:
		b.WriteString(" | world loops running:")
		for _, name := range []string{"nodepools", "registration", "binding", "installation"} {
			fmt.Fprintf(&b, " %s %.1fs", name, smp.World.Loops[name].RunningFor.Seconds())
		}
	case smp.World.PassFor > 0:
		fmt.Fprintf(&b, " | world pass running %.0fs (phase %q %.0fs)", smp.World.PassFor.Seconds(), smp.World.Phase, smp.World.PhaseFor.Seconds())
	default:
		fmt.Fprintf(&b, " | world between passes (last %.1fs)", smp.World.LastPass.Seconds())
	}
	return b.String()
}

// answered reports whether the Agent CAPI provider has answered an AgentMachine: an Agent reserved
// (status.agentRef), or NoSuitableAgents, which is the demand the operator acts on. Until then the
// operator has nothing to act on for it.
func answered(am *unstructured.Unstructured) bool {
	if name, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "name"); name != "" {
		return true
	}
	return world.NoSuitableAgents(am)
}

package pool

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/hostreqs"
)

// hardwareRefusal gathers, from the pool's VMs Failed for their host's validations, the hardware
// validations a VM of the current template would fail the same way (hostreqs.SameShortfall against the
// hardware the hub saw): the message naming each VM, validation and the hub's message ("" when none).
// A Failed VM whose Agent is gone says nothing about the shape any more; the registration breaker
// bounds what it costs.
func hardwareRefusal(s *poolScope) string {
	agentOf := map[string]agents.Agent{}
	for _, a := range s.matching {
		if name := a.Labels[afv1.LabelVsphereAgent]; name != "" && s.ourAgents.Has(a.Name) {
			agentOf[name] = a
		}
	}
	tmpl := hostreqs.TemplateOf(s.pool.Spec.Template)
	var found []string
	for i := range s.vas {
		va := &s.vas[i]
		if va.Status.VM.Phase != afv1.VMPhaseFailed || va.Status.VM.Reason != afv1.ReasonHostValidationFailed || !va.DeletionTimestamp.IsZero() {
			continue
		}
		a, ok := agentOf[va.Name]
		if !ok {
			continue
		}
		host := hostreqs.Host{Inventory: agents.InventoryOf(a.Obj)}
		var msgs []string
		for _, v := range agents.FailingValidations(a.Obj) {
			if hostreqs.IsHardwareValidation(v.ID) {
				host.FailedValidations = append(host.FailedValidations, v.ID)
				msgs = append(msgs, v.ID+": "+v.Message)
			}
		}
		if len(host.FailedValidations) > 0 && hostreqs.SameShortfall(tmpl, host) {
			found = append(found, fmt.Sprintf("VM %s (%s)", va.Status.VM.Name, strings.Join(msgs, "; ")))
		}
	}
	if len(found) == 0 {
		return ""
	}
	sort.Strings(found)
	return "a host of the pool fails assisted-service's hardware validations, and spec.template gives each VM no more in that respect: " +
		strings.Join(found, ", ") + "; no further VM of this shape is created until spec.template changes"
}

// setHardwareRefused reports the refusal: HardwareSufficient=False/HostValidationFailing over the
// preflight's verdict of this pass, and a Warning Event when its message is new (rate-limited like the
// pool's other refusals). When the refusal has ended, the preflight's verdict stands.
func (r *Reconciler) setHardwareRefused(s *poolScope) {
	p := s.pool
	topic := client.ObjectKeyFromObject(p).String() + "/hardware-refusal"
	if s.hardwareRefusal == "" {
		r.refusalEvents.Clear(topic)
		return
	}
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionHardwareSufficient, false, afv1.ReasonHostValidationFailing, s.hardwareRefusal, p.Generation)
	if r.refusalEvents.Allow(topic, s.hardwareRefusal, r.Opts.Clock.Now()) {
		r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonHostValidationFailing, events.ActionCreateVM, "%s", s.hardwareRefusal)
	}
}

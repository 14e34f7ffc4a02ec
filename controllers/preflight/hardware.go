package preflight

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/hostreqs"
)

// hostTemplate is the hardware p gives each VM, as the hub's requirements see it.
func hostTemplate(p *afv1.VsphereAgentPool) hostreqs.Template {
	t := p.Spec.Template
	out := hostreqs.Template{CPUs: int64(t.NumCPUs), MemoryMiB: t.MemoryMiB, DisksGiB: []int64{int64(t.DiskGiB)}}
	if t.Hardware != nil {
		for _, d := range t.Hardware.DataDisks {
			out.DisksGiB = append(out.DisksGiB, int64(d.SizeGiB))
		}
	}
	return out
}

// checkHardware warns when the template is below assisted-service's default minimum for the pool's
// role: HardwareSufficient=False/BelowHubDefaultMinimum and a rate-limited Warning Event, before any VM
// is created. It blocks nothing: a hub may be configured with lower requirements. A verdict the hosts
// themselves gave (HostValidationFailing, set by the pool from its Agents' validations) is left alone.
func (c *Checker) checkHardware(s *pass) {
	p := s.pool
	if cur := conditions.FindCondition(p.Status.Conditions, afv1.ConditionHardwareSufficient); cur != nil && cur.Reason == afv1.ReasonHostValidationFailing {
		return
	}
	topic := client.ObjectKeyFromObject(p).String() + "/hardware"
	msg := hostreqs.Warning(hostTemplate(p), p.Spec.Agent.Role)
	if msg == "" {
		c.Events.Clear(topic)
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionHardwareSufficient, true, afv1.ReasonMeetsHubDefaults,
			"spec.template meets assisted-service's default minimum for the role", p.Generation)
		return
	}
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionHardwareSufficient, false, afv1.ReasonBelowHubDefaultMinimum, msg, p.Generation)
	if c.Events.Allow(topic, afv1.ReasonBelowHubDefaultMinimum+"/"+msg, c.Clock.Now()) {
		c.Recorder.Eventf(p, nil, "Warning", afv1.ReasonBelowHubDefaultMinimum, events.ActionPreflight, "%s", msg)
	}
}

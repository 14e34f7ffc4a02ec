package preflight

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/hostreqs"
)

// checkHardware warns when the template is below assisted-service's default minimum for the pool's
// role: HardwareSufficient=False/BelowHubDefaultMinimum and a rate-limited Warning Event, before any VM
// is created. It blocks nothing: a hub may be configured with lower requirements. The hosts' own verdict
// (HostValidationFailing) is the pool's to set after this, in the same pass.
func (c *Checker) checkHardware(s *pass) {
	p := s.pool
	topic := client.ObjectKeyFromObject(p).String() + "/hardware"
	msg := hostreqs.Warning(hostreqs.TemplateOf(p.Spec.Template), p.Spec.Agent.Role)
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

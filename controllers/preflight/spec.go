package preflight

import (
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// checkSpec sets SpecHonoured from the spec values the CRD admits (for pools moved from the upstream
// operator) but this operator cannot honour as written (poolspec.UnhonouredSpec). A value a VM could
// only fail with blocks creation: False, a rate-limited Warning Event. An adjusted value is True with
// its reason and a rate-limited Normal Event, and blocks nothing.
func (c *Checker) checkSpec(s *pass) {
	p := s.pool
	topic := client.ObjectKeyFromObject(p).String() + "/spec"
	issues := poolspec.UnhonouredSpec(p)
	if len(issues) == 0 {
		c.Events.Clear(topic)
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionSpecHonoured, true, afv1.ReasonSpecHonoured,
			"every spec value is used as written", p.Generation)
		return
	}
	msgs := make([]string, len(issues))
	for i, is := range issues {
		msgs[i] = is.Message
	}
	reason, msg, blocks := issues[0].Reason, strings.Join(msgs, "; "), issues[0].Blocks
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionSpecHonoured, !blocks, reason, msg, p.Generation)
	if blocks {
		s.preflightBlock = reason
	}
	if !c.Events.Allow(topic, reason+"/"+msg, c.Clock.Now()) {
		return
	}
	if blocks {
		c.Recorder.Eventf(p, nil, "Warning", reason, events.ActionPreflight, "%s", msg+"; no VM is created")
		return
	}
	c.Recorder.Eventf(p, nil, "Normal", reason, events.ActionPreflight, "%s", msg)
}

package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// selectorMismatch says why Agents carrying have could never satisfy sel ("" when they do). A nil
// selector selects every Agent, as the Agent CAPI provider reads it.
func selectorMismatch(sel *metav1.LabelSelector, have labels.Set) string {
	if sel == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fmt.Sprintf("the NodePool's agentLabelSelector is invalid: %v", err)
	}
	if s.Matches(have) {
		return ""
	}
	var unmet []string
	reqs, _ := s.Requirements()
	for _, r := range reqs {
		if !r.Matches(have) {
			unmet = append(unmet, r.String())
		}
	}
	keys := make([]string, 0, len(have))
	for k, v := range have {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return fmt.Sprintf("the NodePool's agentLabelSelector requires %s, which the pool's Agents (labels %s) never satisfy: fix spec.agent.labels",
		strings.Join(unmet, ", "), strings.Join(keys, ","))
}

// checkSelector compares the NodePool's spec.platform.agent.agentLabelSelector with the labels the
// pool's Agents will carry. A mismatch creates nothing (the Agents could never bind) and says so:
// condition AgentLabelsMatch and a rate-limited Warning Event.
func (c *Checker) checkSelector(ctx context.Context, s *pass) error {
	p := s.pool
	topic := client.ObjectKeyFromObject(p).String() + "/selector"
	u := agents.New(agents.NodePoolGVK)
	err := c.Reader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.NodePoolRef.Name}, u)
	var reason, msg string
	switch {
	case apierrors.IsNotFound(err):
		reason, msg = afv1.ReasonNodePoolNotFound, fmt.Sprintf("NodePool %s not found in namespace %s", p.Spec.NodePoolRef.Name, p.Namespace)
	case err != nil:
		return fmt.Errorf("reading NodePool %s: %w", p.Spec.NodePoolRef.Name, err)
	default:
		if m := selectorMismatch(agents.NodePoolFrom(u).AgentSelector, poolspec.AgentLabels(p)); m != "" {
			reason, msg = afv1.ReasonAgentLabelsMismatch, m
		}
	}
	if reason == "" {
		c.Events.Clear(topic)
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionAgentLabelsMatch, true, afv1.ReasonAgentLabelsMatch,
			"the pool's Agent labels satisfy the NodePool's agentLabelSelector", p.Generation)
		return nil
	}
	s.preflightBlock = reason
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionAgentLabelsMatch, false, reason, msg, p.Generation)
	if c.Events.Allow(topic, reason, c.Clock.Now()) {
		c.Recorder.Eventf(p, nil, "Warning", reason, events.ActionPreflight, "%s", msg+"; no VM is created")
	}
	return nil
}

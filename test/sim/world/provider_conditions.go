package world

import (
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// ProviderGeneration selects which Agent CAPI provider the world plays. Hubs run different ones.
type ProviderGeneration int

const (
	// ProviderCurrent is cluster-api-provider-agent as a current hub runs it: the reservation label holds
	// the AgentMachine's name (since 2de8dad, 2024-09) with the namespace annotation, and the conditions
	// are metav1.Conditions set through CAPI's v1beta2 helpers (since 19c244c, 2026-06): observedGeneration,
	// empty messages allowed, no severity, Ready a summary (IssuesReported / InfoReported).
	ProviderCurrent ProviderGeneration = iota
	// ProviderUIDLabel is an older generation: the reservation label holds the AgentMachine's UID
	// (4bf2401 2022-01 until 2de8dad) and the conditions are CAPI v1beta1 conditions with severity, Ready
	// mirroring the most severe False condition (NoSuitableAgents, Warning, while no Agent fits).
	ProviderUIDLabel
)

func (g ProviderGeneration) String() string {
	if g == ProviderUIDLabel {
		return "uid-label (CAPI v1beta1 conditions)"
	}
	return "current (name label, metav1 conditions)"
}

// agentMachineConditionOrder is the order of the provider's own condition types (Ready's message lists
// the non-True ones in this order).
var agentMachineConditionOrder = []string{CondAgentReserved, CondAgentSpecSynced, CondAgentValidated, CondAgentRequirementsMet, CondAgentMachineInstalled}

// mirroredFrom maps the provider's condition types to the Agent's they mirror once reserved.
var mirroredFrom = map[string]string{
	CondAgentSpecSynced:       CondSpecSynced,
	CondAgentValidated:        CondValidated,
	CondAgentRequirementsMet:  CondRequirementsMet,
	CondAgentMachineInstalled: CondInstalled,
}

// notReservedConditions are the five conditions before a reservation: AgentReserved=False with the reason
// (NoSuitableAgents, or AgentNotYetFound with the error text), the four others AgentNotYetFound.
func notReservedConditions(reason, message string) []cond {
	out := []cond{{Type: CondAgentReserved, Status: "False", Reason: reason, Message: message, Severity: severityOf(reason)}}
	for _, t := range agentMachineConditionOrder[1:] {
		out = append(out, cond{Type: t, Status: "False", Reason: ReasonAgentNotYetFound, Message: "Agent not yet reserved", Severity: "Info"})
	}
	return out
}

// reservedConditions mirror the reserved Agent's conditions: True as True/AgentConditionTrue, False or
// Unknown as False with the Agent's reason and message, missing as False/ConditionNotFound.
func reservedConditions(agent *unstructured.Unstructured) []cond {
	out := []cond{{Type: CondAgentReserved, Status: "True", Reason: ReasonAgentReserved}}
	for _, t := range agentMachineConditionOrder[1:] {
		c, found := unstructuredcond.Get(agent, mirroredFrom[t])
		switch {
		case !found:
			out = append(out, cond{Type: t, Status: "False", Reason: ReasonConditionNotFound, Severity: "Error"})
		case c.Status == "True":
			out = append(out, cond{Type: t, Status: "True", Reason: ReasonAgentConditionTrue})
		default:
			out = append(out, cond{Type: t, Status: "False", Reason: c.Reason, Message: c.Message, Severity: "Error"})
		}
	}
	return out
}

func severityOf(reason string) string {
	if reason == ReasonNoSuitableAgents {
		return "Warning"
	}
	return "Info"
}

// allTrue reports whether every condition is True.
func allTrue(cs []cond) bool {
	for _, c := range cs {
		if c.Status != "True" {
			return false
		}
	}
	return true
}

// withReady adds the Ready summary the generation writes.
func (g ProviderGeneration) withReady(cs []cond) []cond {
	if allTrue(cs) {
		if g == ProviderUIDLabel {
			return append(cs, cond{Type: CondReady, Status: "True"})
		}
		return append(cs, cond{Type: CondReady, Status: "True", Reason: ReasonInfoReported})
	}
	if g == ProviderUIDLabel {
		// CAPI v1beta1 summary: the most severe False condition, first in order on a tie.
		rank := map[string]int{"Error": 3, "Warning": 2, "Info": 1}
		var worst cond
		for _, c := range cs {
			if c.Status != "True" && rank[c.Severity] > rank[worst.Severity] {
				worst = c
			}
		}
		return append(cs, cond{Type: CondReady, Status: "False", Reason: worst.Reason, Message: worst.Message, Severity: worst.Severity})
	}
	var lines []string
	for _, c := range cs {
		if c.Status == "True" {
			continue
		}
		text := c.Message
		if text == "" {
			text = c.Reason
		}
		lines = append(lines, "* "+c.Type+": "+text)
	}
	return append(cs, cond{Type: CondReady, Status: "False", Reason: ReasonIssuesReported, Message: strings.Join(lines, "\n")})
}

// setAgentMachineConditions replaces the AgentMachine's conditions with cs in the generation's shape:
// Ready first, the rest alphabetical; lastTransitionTime (to the second) moves only when the status
// changes. The current generation writes metav1.Conditions (message always present, observedGeneration),
// the older one CAPI v1beta1 conditions (severity on False ones, no empty fields). It reports whether
// anything changed; u is left alone when nothing did.
func (g ProviderGeneration) setAgentMachineConditions(u *unstructured.Unstructured, now time.Time, cs []cond) bool {
	old := unstructuredcond.Entries(u)
	byType := unstructuredcond.ByType(u)
	sort.SliceStable(cs, func(i, j int) bool {
		if (cs[i].Type == CondReady) != (cs[j].Type == CondReady) {
			return cs[i].Type == CondReady
		}
		return cs[i].Type < cs[j].Type
	})
	out := make([]map[string]any, 0, len(cs))
	for _, c := range cs {
		m := map[string]any{"type": c.Type, "status": c.Status, "lastTransitionTime": now.UTC().Truncate(time.Second).Format(time.RFC3339)}
		if g == ProviderUIDLabel {
			if c.Reason != "" {
				m["reason"] = c.Reason
			}
			if c.Message != "" {
				m["message"] = c.Message
			}
			if c.Status == "False" && c.Severity != "" {
				m["severity"] = c.Severity
			}
		} else {
			m["reason"], m["message"], m["observedGeneration"] = c.Reason, c.Message, u.GetGeneration()
		}
		if prev := byType[c.Type]; prev != nil && prev["status"] == c.Status {
			if ts, ok := prev["lastTransitionTime"]; ok {
				m["lastTransitionTime"] = ts
			}
		}
		out = append(out, m)
	}
	if sameConditionList(old, out) {
		return false
	}
	unstructuredcond.Replace(u, out)
	return true
}

func sameConditionList(a, b []map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ma, mb := a[i], b[i]
		if len(ma) != len(mb) {
			return false
		}
		for k, v := range ma {
			if w, ok := mb[k]; !ok || !sameScalar(v, w) {
				return false
			}
		}
	}
	return true
}

// sameScalar compares JSON scalars, treating the API server's int64 and our int64 alike.
func sameScalar(a, b any) bool {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return float64(x) == y
		}
	case float64:
		if y, ok := b.(int64); ok {
			return x == float64(y)
		}
	}
	return a == b
}

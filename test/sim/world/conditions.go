package world

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// cond is a condition to write. Severity is written only when set (CAPI v1beta1 shape).
type cond struct {
	Type, Status, Reason, Message, Severity string
}

// getCondition returns status.conditions[type=t] as a map, or nil.
func getCondition(u *unstructured.Unstructured, t string) map[string]any {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, item := range raw {
		if m, ok := item.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}

// condStatus returns the status ("True"/"False"/"Unknown") and reason of a condition, "" when absent.
func condStatus(u *unstructured.Unstructured, t string) (status, reason string) {
	m := getCondition(u, t)
	if m == nil {
		return "", ""
	}
	s, _ := m["status"].(string)
	r, _ := m["reason"].(string)
	return s, r
}

func isTrue(u *unstructured.Unstructured, t string) bool {
	s, _ := condStatus(u, t)
	return s == "True"
}

func isFalse(u *unstructured.Unstructured, t string) bool {
	s, _ := condStatus(u, t)
	return s == "False"
}

// conditionSince returns the lastTransitionTime of a condition (zero when absent or unparsable).
func conditionSince(u *unstructured.Unstructured, t string) time.Time {
	m := getCondition(u, t)
	if m == nil {
		return time.Time{}
	}
	s, _ := m["lastTransitionTime"].(string)
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return ts
}

// setConditions writes the conditions into status.conditions, keeping lastTransitionTime when the
// status did not change, like the real controllers. It reports whether anything changed.
func setConditions(u *unstructured.Unstructured, now time.Time, conds ...cond) bool {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	changed := false
	for _, c := range conds {
		idx := -1
		for i, item := range raw {
			if m, ok := item.(map[string]any); ok && m["type"] == c.Type {
				idx = i
				break
			}
		}
		m := map[string]any{"type": c.Type, "status": c.Status}
		if c.Reason != "" {
			m["reason"] = c.Reason
		}
		if c.Message != "" {
			m["message"] = c.Message
		}
		if c.Severity != "" {
			m["severity"] = c.Severity
		}
		m["lastTransitionTime"] = now.UTC().Format(time.RFC3339)
		if idx < 0 {
			raw = append(raw, m)
			changed = true
			continue
		}
		old, _ := raw[idx].(map[string]any)
		if old["status"] == c.Status {
			if ts, ok := old["lastTransitionTime"]; ok {
				m["lastTransitionTime"] = ts
			}
		}
		if !sameCondition(old, m) {
			raw[idx] = m
			changed = true
		}
	}
	if changed {
		_ = unstructured.SetNestedSlice(u.Object, raw, "status", "conditions")
	}
	return changed
}

// conditionsWouldChange reports whether setConditions would change u, without touching u (lists
// served from a shared cache must be copied before they are changed).
func conditionsWouldChange(u *unstructured.Unstructured, now time.Time, conds ...cond) bool {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions") // a deep copy
	scratch := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": raw}}}
	return setConditions(scratch, now, conds...)
}

func sameCondition(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Package unstructuredcond reads and writes status.conditions of unstructured objects (Agents,
// AgentMachines, Machines, Clusters, InfraEnvs) for the test world, the harness, chaos and the benches.
// An entry has the Kubernetes condition shape (metav1.Condition: type, status, reason, message,
// lastTransitionTime, observedGeneration), plus severity for CAPI v1beta1 conditions. It is written from
// that shape, not from the product's packages, so the tests do not check the product with its own code.
package unstructuredcond

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The condition statuses.
const (
	True    = "True"
	False   = "False"
	Unknown = "Unknown"
)

// Condition is one condition. Severity exists only in CAPI v1beta1 conditions.
type Condition struct {
	Type, Status, Reason, Message, Severity string
	// LastTransitionTime is zero when absent or not RFC 3339. Set ignores it: it stamps its now.
	LastTransitionTime time.Time
	// ObservedGeneration is 0 when absent.
	ObservedGeneration int64
}

// Entries returns status.conditions as stored, in order: copies, so changing them changes nothing in u.
// Entries that are not objects are left out.
func Entries(u *unstructured.Unstructured) []map[string]any {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions") // a deep copy
	out := make([]map[string]any, 0, len(raw))
	for _, item := range raw {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// Replace writes entries as status.conditions (copies of them).
func Replace(u *unstructured.Unstructured, entries []map[string]any) {
	raw := make([]any, len(entries))
	for i, m := range entries {
		raw[i] = m
	}
	_ = unstructured.SetNestedSlice(u.Object, raw, "status", "conditions")
}

// Edit hands the entries to edit and writes back what it leaves: for tests that write a condition list
// the API server must refuse.
func Edit(u *unstructured.Unstructured, edit func(entries []map[string]any)) {
	entries := Entries(u)
	edit(entries)
	Replace(u, entries)
}

// Raw returns the entry of type t as stored (a copy), or nil when absent.
func Raw(u *unstructured.Unstructured, t string) map[string]any {
	for _, m := range Entries(u) {
		if m["type"] == t {
			return m
		}
	}
	return nil
}

// ByType returns the entries keyed by type (copies; a repeated type keeps the last).
func ByType(u *unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, m := range Entries(u) {
		if t, _ := m["type"].(string); t != "" {
			out[t] = m
		}
	}
	return out
}

// Get returns the condition of type t and whether u has it.
func Get(u *unstructured.Unstructured, t string) (Condition, bool) {
	m := Raw(u, t)
	if m == nil {
		return Condition{}, false
	}
	return fromEntry(m), true
}

func fromEntry(m map[string]any) Condition {
	var c Condition
	c.Type, _ = m["type"].(string)
	c.Status, _ = m["status"].(string)
	c.Reason, _ = m["reason"].(string)
	c.Message, _ = m["message"].(string)
	c.Severity, _ = m["severity"].(string)
	if s, _ := m["lastTransitionTime"].(string); s != "" {
		if ts, err := time.Parse(time.RFC3339, s); err == nil {
			c.LastTransitionTime = ts
		}
	}
	switch g := m["observedGeneration"].(type) {
	case int64:
		c.ObservedGeneration = g
	case float64:
		c.ObservedGeneration = int64(g)
	}
	return c
}

// StatusReason returns the status and reason of the condition of type t, "" when absent.
func StatusReason(u *unstructured.Unstructured, t string) (status, reason string) {
	c, _ := Get(u, t)
	return c.Status, c.Reason
}

// LastTransition returns the lastTransitionTime of the condition of type t (zero when absent or not
// RFC 3339).
func LastTransition(u *unstructured.Unstructured, t string) time.Time {
	c, _ := Get(u, t)
	return c.LastTransitionTime
}

// Is reports whether u has the condition of type t with that status (absent is never a match).
func Is(u *unstructured.Unstructured, t, status string) bool {
	s, _ := StatusReason(u, t)
	return s != "" && s == status
}

// IsTrue reports whether the condition of type t is True (absent is not).
func IsTrue(u *unstructured.Unstructured, t string) bool { return Is(u, t, True) }

// IsFalse reports whether the condition of type t is False (absent is not).
func IsFalse(u *unstructured.Unstructured, t string) bool { return Is(u, t, False) }

// Set writes conds into status.conditions the way Kubernetes controllers do: a condition of a type u
// lacks is appended, one it has is replaced in place; lastTransitionTime is now (RFC 3339, to the second)
// unless the status stays the same, when the old one is kept. Empty reason, message and severity and a
// zero observedGeneration are left out. It reports whether anything changed and leaves u alone if not.
func Set(u *unstructured.Unstructured, now time.Time, conds ...Condition) bool {
	entries := Entries(u)
	changed := false
	for _, c := range conds {
		m := toEntry(c, now)
		idx := -1
		for i, old := range entries {
			if old["type"] == c.Type {
				idx = i
				break
			}
		}
		if idx < 0 {
			entries = append(entries, m)
			changed = true
			continue
		}
		old := entries[idx]
		if ts, ok := old["lastTransitionTime"]; ok && old["status"] == c.Status {
			m["lastTransitionTime"] = ts
		}
		if !sameEntry(old, m) {
			entries[idx] = m
			changed = true
		}
	}
	if changed {
		Replace(u, entries)
	}
	return changed
}

// WouldChange reports whether Set would change u, without touching u (objects served from a shared
// cache must be copied before they are changed).
func WouldChange(u *unstructured.Unstructured, now time.Time, conds ...Condition) bool {
	scratch := &unstructured.Unstructured{Object: map[string]any{}}
	Replace(scratch, Entries(u))
	return Set(scratch, now, conds...)
}

func toEntry(c Condition, now time.Time) map[string]any {
	m := map[string]any{"type": c.Type, "status": c.Status, "lastTransitionTime": now.UTC().Format(time.RFC3339)}
	for k, v := range map[string]string{"reason": c.Reason, "message": c.Message, "severity": c.Severity} {
		if v != "" {
			m[k] = v
		}
	}
	if c.ObservedGeneration != 0 {
		m["observedGeneration"] = c.ObservedGeneration
	}
	return m
}

// sameEntry compares two entries field by field; the API server returns whole numbers as int64, as
// toEntry writes them.
func sameEntry(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

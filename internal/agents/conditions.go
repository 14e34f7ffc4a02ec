package agents

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Condition is a condition read as a plain map: v1beta1 (with severity) and v1beta2 shapes both fit.
type Condition struct {
	Type    string
	Status  string
	Reason  string
	Message string
}

// Conditions reads status.conditions of any object.
func Conditions(u *unstructured.Unstructured) []Condition {
	raw, found, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil || !found {
		return nil
	}
	out := make([]Condition, 0, len(raw))
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		c := Condition{}
		c.Type, _ = m["type"].(string)
		c.Status, _ = m["status"].(string)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		out = append(out, c)
	}
	return out
}

// FindCondition returns the condition of the type, if present.
func FindCondition(conds []Condition, condType string) (Condition, bool) {
	for _, c := range conds {
		if c.Type == condType {
			return c, true
		}
	}
	return Condition{}, false
}

// IsTrue reports whether the condition is present with status True.
func IsTrue(conds []Condition, condType string) bool {
	c, ok := FindCondition(conds, condType)
	return ok && c.Status == "True"
}

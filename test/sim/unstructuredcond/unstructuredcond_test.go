package unstructuredcond

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// object builds an unstructured object from JSON, as the API server would hand it over (whole numbers
// decoded as int64 by the unstructured JSON decoder).
func object(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	return u
}

const agentJSON = `{"apiVersion":"agent-install.openshift.io/v1beta1","kind":"Agent","metadata":{"name":"a"},"status":{"conditions":[
 {"type":"Validated","status":"True","reason":"ValidationsPassing","message":"ok","lastTransitionTime":"2026-01-02T03:04:05Z"},
 {"type":"Bound","status":"False","reason":"Unbound","lastTransitionTime":"not a time"},
 {"type":"Connected","status":"Unknown","observedGeneration":3},
 "not an object",
 {"type":"Ready","status":"False","severity":"Warning","reason":"NoSuitableAgents"}]}}`

func TestGet(t *testing.T) {
	u := object(t, agentJSON)
	for _, tc := range []struct {
		name, typ string
		want      Condition
		found     bool
	}{
		{"every metav1.Condition field", "Validated", Condition{Type: "Validated", Status: True, Reason: "ValidationsPassing", Message: "ok",
			LastTransitionTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, true},
		{"unparsable lastTransitionTime reads as zero", "Bound", Condition{Type: "Bound", Status: False, Reason: "Unbound"}, true},
		{"observedGeneration", "Connected", Condition{Type: "Connected", Status: Unknown, ObservedGeneration: 3}, true},
		{"CAPI v1beta1 severity", "Ready", Condition{Type: "Ready", Status: False, Reason: "NoSuitableAgents", Severity: "Warning"}, true},
		{"absent", "Installed", Condition{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Get(u, tc.typ)
			if ok != tc.found || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Get(%q) = %+v, %t; want %+v, %t", tc.typ, got, ok, tc.want, tc.found)
			}
		})
	}
}

func TestStatusPredicates(t *testing.T) {
	u := object(t, agentJSON)
	for _, tc := range []struct {
		typ, status        string
		is, isTrue, isFals bool
		wantStatus, reason string
	}{
		{"Validated", True, true, true, false, True, "ValidationsPassing"},
		{"Validated", False, false, true, false, True, "ValidationsPassing"},
		{"Bound", False, true, false, true, False, "Unbound"},
		{"Connected", Unknown, true, false, false, Unknown, ""},
		{"Installed", "", false, false, false, "", ""}, // absent matches nothing, not even ""
	} {
		t.Run(tc.typ+"="+tc.status, func(t *testing.T) {
			if got := Is(u, tc.typ, tc.status); got != tc.is {
				t.Errorf("Is = %t, want %t", got, tc.is)
			}
			if got := IsTrue(u, tc.typ); got != tc.isTrue {
				t.Errorf("IsTrue = %t, want %t", got, tc.isTrue)
			}
			if got := IsFalse(u, tc.typ); got != tc.isFals {
				t.Errorf("IsFalse = %t, want %t", got, tc.isFals)
			}
			if s, r := StatusReason(u, tc.typ); s != tc.wantStatus || r != tc.reason {
				t.Errorf("StatusReason = %q, %q; want %q, %q", s, r, tc.wantStatus, tc.reason)
			}
		})
	}
}

func TestRawEntriesAreCopies(t *testing.T) {
	u := object(t, agentJSON)
	if got := len(Entries(u)); got != 4 {
		t.Fatalf("Entries: %d, want the 4 objects (the string left out)", got)
	}
	Raw(u, "Validated")["status"] = False
	ByType(u)["Bound"]["status"] = True
	Entries(u)[0]["status"] = False
	if !IsTrue(u, "Validated") || !IsFalse(u, "Bound") {
		t.Fatal("changing a returned entry changed the object")
	}
	if got := LastTransition(u, "Validated"); !got.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("LastTransition(Validated) = %v", got)
	}
	if got := LastTransition(u, "Installed"); !got.IsZero() {
		t.Errorf("LastTransition of an absent type = %v", got)
	}
	if Raw(u, "Installed") != nil {
		t.Error("Raw of an absent type is not nil")
	}
	if got := ByType(u); len(got) != 4 || got["Ready"]["severity"] != "Warning" {
		t.Errorf("ByType = %v", got)
	}
	if got := Entries(object(t, `{"kind":"Agent"}`)); len(got) != 0 {
		t.Errorf("Entries of an object without status: %v", got)
	}
}

func TestEdit(t *testing.T) {
	u := object(t, agentJSON)
	Edit(u, func(entries []map[string]any) { delete(entries[0], "message") })
	if _, ok := Raw(u, "Validated")["message"]; ok {
		t.Error("Edit did not write the edited entries back")
	}
	if len(Entries(u)) != 4 || !IsFalse(u, "Bound") {
		t.Errorf("Edit lost entries: %v", Entries(u))
	}
}

func TestSet(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(90 * time.Second)
	base := `{"kind":"Agent","status":{"conditions":[{"type":"Bound","status":"False","reason":"Unbound","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	for _, tc := range []struct {
		name    string
		set     []Condition
		changed bool
		want    []map[string]any
	}{
		{"same status and fields: nothing changes", []Condition{{Type: "Bound", Status: False, Reason: "Unbound"}}, false,
			[]map[string]any{{"type": "Bound", "status": False, "reason": "Unbound", "lastTransitionTime": "2026-01-01T00:00:00Z"}}},
		{"same status, new reason: the transition time stays", []Condition{{Type: "Bound", Status: False, Reason: "Unbinding", Message: "m"}}, true,
			[]map[string]any{{"type": "Bound", "status": False, "reason": "Unbinding", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}}},
		{"new status: the transition time moves, to the second", []Condition{{Type: "Bound", Status: True, Reason: "Bound"}}, true,
			[]map[string]any{{"type": "Bound", "status": True, "reason": "Bound", "lastTransitionTime": "2026-01-01T00:01:30Z"}}},
		{"a new type is appended, with severity and observedGeneration", []Condition{{Type: "Ready", Status: False, Reason: "R", Severity: "Info", ObservedGeneration: 2}}, true,
			[]map[string]any{
				{"type": "Bound", "status": False, "reason": "Unbound", "lastTransitionTime": "2026-01-01T00:00:00Z"},
				{"type": "Ready", "status": False, "reason": "R", "severity": "Info", "observedGeneration": int64(2), "lastTransitionTime": "2026-01-01T00:01:30Z"},
			}},
		{"a dropped reason is removed", []Condition{{Type: "Bound", Status: False}}, true,
			[]map[string]any{{"type": "Bound", "status": False, "lastTransitionTime": "2026-01-01T00:00:00Z"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, base)
			before := u.DeepCopy()
			if got := WouldChange(u, t1.Add(300*time.Millisecond), tc.set...); got != tc.changed {
				t.Errorf("WouldChange = %t, want %t", got, tc.changed)
			}
			if !reflect.DeepEqual(u, before) {
				t.Fatal("WouldChange changed the object")
			}
			if got := Set(u, t1.Add(300*time.Millisecond), tc.set...); got != tc.changed {
				t.Errorf("Set = %t, want %t", got, tc.changed)
			}
			if got := Entries(u); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("conditions = %s\nwant %s", jsonOf(got), jsonOf(tc.want))
			}
			if !tc.changed && !reflect.DeepEqual(u, before) {
				t.Error("Set touched the object without a change")
			}
		})
	}
}

func TestSetOnAnObjectWithoutConditions(t *testing.T) {
	u := object(t, `{"kind":"InfraEnv"}`)
	if !Set(u, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Condition{Type: "ImageCreated", Status: True}) {
		t.Fatal("Set reported no change")
	}
	if c, ok := Get(u, "ImageCreated"); !ok || c.Status != True || c.LastTransitionTime.IsZero() {
		t.Errorf("ImageCreated = %+v, %t", c, ok)
	}
	Replace(u, nil)
	if len(Entries(u)) != 0 {
		t.Error("Replace(nil) left conditions")
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

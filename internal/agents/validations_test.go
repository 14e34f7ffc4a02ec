package agents

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestFailingValidations(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"validationsInfo": map[string]any{
			"network": []any{
				map[string]any{"id": "hostname-unique", "status": "failure", "message": "Hostname worker-0 is not unique in cluster"},
				map[string]any{"id": "connected", "status": "success", "message": "Host is connected"},
			},
			"hardware": []any{
				map[string]any{"id": "has-memory-for-role", "status": "failure", "message": "Insufficient memory to deploy worker. Required memory is 8 GiB but found 4 GiB"},
				map[string]any{"id": "has-min-cpu-cores", "status": "success", "message": "Sufficient CPU cores"},
				map[string]any{"id": "has-min-valid-disks", "status": "pending", "message": "Missing inventory"},
				"not an object",
				map[string]any{"status": "failure"},
			},
			"operators": "not a list",
		},
		"inventory": map[string]any{
			"cpu":    map[string]any{"count": int64(2)},
			"memory": map[string]any{"physicalBytes": int64(4 << 30)},
			"disks":  []any{map[string]any{"sizeBytes": int64(20 << 30)}, map[string]any{"sizeBytes": int64(120 << 30)}, "x"},
		},
	}}}
	want := []Validation{
		{Category: "hardware", ID: "has-memory-for-role", Message: "Insufficient memory to deploy worker. Required memory is 8 GiB but found 4 GiB"},
		{Category: "network", ID: "hostname-unique", Message: "Hostname worker-0 is not unique in cluster"},
	}
	if got := FailingValidations(u); !reflect.DeepEqual(got, want) {
		t.Errorf("FailingValidations = %+v, want %+v", got, want)
	}
	if got := FailingValidations(&unstructured.Unstructured{Object: map[string]any{}}); got != nil {
		t.Errorf("no validationsInfo: %+v", got)
	}
	if got, want := InventoryOf(u), (Inventory{CPUCount: 2, MemoryBytes: 4 << 30, LargestDiskBytes: 120 << 30}); got != want {
		t.Errorf("InventoryOf = %+v, want %+v", got, want)
	}
}

// FailsValidations is the one verdict the VsphereAgent's phase and its AgentValidated condition share:
// either the Validated condition or a failed validation says so; a host leaving a cluster does not fail.
func TestFailsValidations(t *testing.T) {
	failed := map[string]any{"network": []any{map[string]any{"id": "ntp-synced", "status": "failure", "message": "Host couldn't synchronize with any NTP server"}}}
	cases := []struct {
		name      string
		validated []any // the Validated condition, if any
		info      map[string]any
		fails     bool
		listed    int
	}{
		{"passing", []any{"True", "ValidationsPassing"}, nil, false, 0},
		{"still running", []any{"Unknown", "ValidationsUnknown"}, nil, false, 0},
		{"condition and list agree", []any{"False", "ValidationsFailing"}, failed, true, 1},
		{"condition only: failing, nothing listed", []any{"False", "ValidationsFailing"}, nil, true, 0},
		{"list only (condition not written yet): failing", nil, failed, true, 1},
		{"unbinding: Validated=False/Unbinding is not a failed validation", []any{"False", "Unbinding"}, nil, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status := map[string]any{}
			if tc.validated != nil {
				status["conditions"] = []any{map[string]any{"type": "Validated", "status": tc.validated[0], "reason": tc.validated[1]}}
			}
			if tc.info != nil {
				status["validationsInfo"] = tc.info
			}
			a := AgentFrom(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "a"}, "status": status}})
			list, fails := a.FailsValidations()
			if fails != tc.fails || len(list) != tc.listed {
				t.Fatalf("FailsValidations = %v (%d listed), want %v (%d listed)", fails, len(list), tc.fails, tc.listed)
			}
		})
	}
}

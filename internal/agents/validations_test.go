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

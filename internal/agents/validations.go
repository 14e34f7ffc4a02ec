package agents

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Validation is one of assisted-service's host validations as the Agent reports it in
// status.validationsInfo: a map from category (hardware, network, operators, ...) to a list of
// {id, status, message} (api/common ValidationsStatus in openshift/assisted-service).
type Validation struct {
	Category, ID, Message string
}

// ValidationStatusFailure is the status of a validation the host fails (others: success, pending,
// error, disabled).
const ValidationStatusFailure = "failure"

// FailsValidations is the one reading of assisted-service's verdict that a host fails its validations,
// for every caller: the Validated condition False (except with reason Unbinding, which a host leaving a
// cluster shows whatever its validations), or a validation in status.validationsInfo reported failing
// (the two are written together by the hub; either is enough). failing lists the failed validations,
// empty when only the condition says so (its message is then the explanation).
func (a Agent) FailsValidations() (failing []Validation, fails bool) {
	if a.Obj != nil {
		failing = FailingValidations(a.Obj)
	}
	c, ok := FindCondition(a.Conditions, "Validated")
	return failing, len(failing) > 0 || (ok && c.Status == "False" && c.Reason != BoundReasonUnbinding)
}

// FailingValidations lists the validations u's status.validationsInfo reports failing, ordered by
// category then id. A malformed entry is skipped.
func FailingValidations(u *unstructured.Unstructured) []Validation {
	info, _, _ := unstructured.NestedMap(u.Object, "status", "validationsInfo")
	var out []Validation
	for category, list := range info {
		items, _ := list.([]any)
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			id, _ := m["id"].(string)
			status, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			if id != "" && status == ValidationStatusFailure {
				out = append(out, Validation{Category: category, ID: id, Message: msg})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Category != out[j].Category {
			return out[i].Category < out[j].Category
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Inventory is the hardware an Agent reports (status.inventory): what the hub judged.
type Inventory struct {
	CPUCount    int64
	MemoryBytes int64
	// LargestDiskBytes is the size of its largest disk.
	LargestDiskBytes int64
}

// InventoryOf reads u's status.inventory (zeros where absent).
func InventoryOf(u *unstructured.Unstructured) Inventory {
	var inv Inventory
	inv.CPUCount, _, _ = unstructured.NestedInt64(u.Object, "status", "inventory", "cpu", "count")
	inv.MemoryBytes, _, _ = unstructured.NestedInt64(u.Object, "status", "inventory", "memory", "physicalBytes")
	disks, _, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "disks")
	for _, d := range disks {
		if m, ok := d.(map[string]any); ok {
			if size, ok := m["sizeBytes"].(int64); ok {
				inv.LargestDiskBytes = max(inv.LargestDiskBytes, size)
			}
		}
	}
	return inv
}

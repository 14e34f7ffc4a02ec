// Package hostreqs holds assisted-service's documented default host requirements and the pure policy
// that compares a pool's VM template with them, so a pool can warn before it creates a VM that the hub
// would mark insufficient.
//
// Source: assisted-service's published hardware requirements (the HW_VALIDATOR_REQUIREMENTS
// "default" entry): a worker needs 2 CPU cores, 8192 MiB of RAM and a 100 GB installation disk; a
// master 4 cores, 16384 MiB and 100 GB. The service compares disk sizes in decimal gigabytes
// (10^9 bytes). A hub can configure other figures, so these are defaults to warn from; the hub's real
// verdict is the Agent's validations (status.validationsInfo).
package hostreqs

import (
	"fmt"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// Minimum is one role's requirement.
type Minimum struct {
	// Role names the role it is for in messages.
	Role      string
	CPUCores  int64
	MemoryMiB int64
	// DiskGB is the smallest eligible installation disk, in decimal gigabytes.
	DiskGB int64
}

// Default minimums per role, as assisted-service documents them.
var (
	DefaultWorker = Minimum{Role: "worker", CPUCores: 2, MemoryMiB: 8192, DiskGB: 100}
	DefaultMaster = Minimum{Role: "master", CPUCores: 4, MemoryMiB: 16384, DiskGB: 100}
)

// ForRole returns the default minimum for an Agent role. A HyperShift NodePool's hosts are workers;
// any role but master is held to the worker minimum.
func ForRole(role string) Minimum {
	if role == "master" {
		return DefaultMaster
	}
	return DefaultWorker
}

// Template is the hardware a pool gives each VM.
type Template struct {
	CPUs      int64
	MemoryMiB int64
	// DisksGiB are the sizes of every disk the VM gets (boot disk first), in GiB.
	DisksGiB []int64
}

// TemplateOf is the hardware a pool's template gives each VM: its CPUs, memory, boot disk and data disks.
func TemplateOf(t afv1.VMTemplateSpec) Template {
	out := Template{CPUs: int64(t.NumCPUs), MemoryMiB: t.MemoryMiB, DisksGiB: []int64{int64(t.DiskGiB)}}
	if t.Hardware != nil {
		for _, d := range t.Hardware.DataDisks {
			out.DisksGiB = append(out.DisksGiB, int64(d.SizeGiB))
		}
	}
	return out
}

// LargestDiskGiB is the size of t's largest disk (0 without one): assisted-service needs one eligible
// installation disk, so only the largest counts.
func (t Template) LargestDiskGiB() int64 {
	largest := int64(0)
	for _, d := range t.DisksGiB {
		largest = max(largest, d)
	}
	return largest
}

const bytesPerGiB, bytesPerGB = 1 << 30, 1_000_000_000

// Shortfalls lists, in a fixed order (CPU, memory, disk), every way t falls below m; none: it meets m.
// The disk requirement is met when any one disk is large enough, as assisted-service needs one
// eligible installation disk.
func Shortfalls(t Template, m Minimum) []string {
	var out []string
	if t.CPUs < m.CPUCores {
		out = append(out, fmt.Sprintf("%d vCPU(s), below the %d cores", t.CPUs, m.CPUCores))
	}
	if t.MemoryMiB < m.MemoryMiB {
		out = append(out, fmt.Sprintf("%d MiB of memory, below the %d MiB", t.MemoryMiB, m.MemoryMiB))
	}
	if largest := t.LargestDiskGiB(); largest*bytesPerGiB < m.DiskGB*bytesPerGB {
		out = append(out, fmt.Sprintf("a largest disk of %d GiB, below the %d GB", largest, m.DiskGB))
	}
	return out
}

// Warning is the message a pool gives for its shortfalls against role's default minimum ("" when none).
func Warning(t Template, role string) string {
	m := ForRole(role)
	s := Shortfalls(t, m)
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf("spec.template gives each VM %s: assisted-service's default minimum for a %s; a hub with the default "+
		"requirements marks such hosts insufficient and never installs them (its requirements are configurable, so VMs are still created)",
		strings.Join(s, ", "), m.Role)
}

// The hardware validations, by assisted-service's IDs, and what each judges: a host fails them for the
// hardware it was given, so every VM of the same template fails them the same way.
var hardwareValidations = map[string]string{
	"has-min-cpu-cores": "cpu", "has-cpu-cores-for-role": "cpu",
	"has-min-memory": "memory", "has-memory-for-role": "memory",
	"has-min-valid-disks": "disk",
}

// IsHardwareValidation reports whether a validation judges the hardware the VM was given.
func IsHardwareValidation(id string) bool { return hardwareValidations[id] != "" }

// Host is a host of the pool as the hub judged it: the hardware it reported (status.inventory; zero
// when not reported) and the hardware validations it failed.
type Host struct {
	agents.Inventory
	FailedValidations []string
}

// SameShortfall reports whether a VM made from t would fail a hardware validation h failed: t gives no
// more than h had in that validation's dimension (CPU cores, memory, disk). Unknown hardware (zero)
// counts as the same: the cautious answer, as another VM of an unknown shape could only fail again.
func SameShortfall(t Template, h Host) bool {
	for _, id := range h.FailedValidations {
		switch hardwareValidations[id] {
		case "cpu":
			if h.CPUCount == 0 || t.CPUs <= h.CPUCount {
				return true
			}
		case "memory":
			if h.MemoryBytes == 0 || t.MemoryMiB*(1<<20) <= h.MemoryBytes {
				return true
			}
		case "disk":
			if h.LargestDiskBytes == 0 || t.LargestDiskGiB()*bytesPerGiB <= h.LargestDiskBytes {
				return true
			}
		}
	}
	return false
}

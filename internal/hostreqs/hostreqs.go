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
)

// Minimum is one role's requirement.
type Minimum struct {
	CPUCores  int64
	MemoryMiB int64
	// DiskGB is the smallest eligible installation disk, in decimal gigabytes.
	DiskGB int64
}

// Default minimums per role, as assisted-service documents them.
var (
	DefaultWorker = Minimum{CPUCores: 2, MemoryMiB: 8192, DiskGB: 100}
	DefaultMaster = Minimum{CPUCores: 4, MemoryMiB: 16384, DiskGB: 100}
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
	largest := int64(0)
	for _, d := range t.DisksGiB {
		largest = max(largest, d)
	}
	if largest*bytesPerGiB < m.DiskGB*bytesPerGB {
		out = append(out, fmt.Sprintf("a largest disk of %d GiB, below the %d GB", largest, m.DiskGB))
	}
	return out
}

// Warning is the message a pool gives for its shortfalls against role's default minimum ("" when none).
func Warning(t Template, role string) string {
	s := Shortfalls(t, ForRole(role))
	if len(s) == 0 {
		return ""
	}
	r := role
	if r != "master" {
		r = "worker"
	}
	return fmt.Sprintf("spec.template gives each VM %s: assisted-service's default minimum for a %s; a hub with the default "+
		"requirements marks such hosts insufficient and never installs them (its requirements are configurable, so VMs are still created)",
		strings.Join(s, ", "), r)
}

// Host is a host of the pool as the hub judged it: the hardware it reported (status.inventory; zero
// when not reported) and the hardware validations it failed.
type Host struct {
	CPUs, MemoryBytes, LargestDiskBytes int64
	FailedValidations                   []string
}

// SameShortfall reports whether a VM made from t would fail a hardware validation h failed: t gives no
// more than h had in that validation's dimension (CPU cores, memory, disk). Unknown hardware (zero)
// counts as the same: the cautious answer, as another VM of an unknown shape could only fail again.
func SameShortfall(t Template, h Host) bool {
	largest := int64(0)
	for _, d := range t.DisksGiB {
		largest = max(largest, d)
	}
	for _, id := range h.FailedValidations {
		switch id {
		case "has-min-cpu-cores", "has-cpu-cores-for-role":
			if h.CPUs == 0 || t.CPUs <= h.CPUs {
				return true
			}
		case "has-min-memory", "has-memory-for-role":
			if h.MemoryBytes == 0 || t.MemoryMiB*(1<<20) <= h.MemoryBytes {
				return true
			}
		case "has-min-valid-disks":
			if h.LargestDiskBytes == 0 || largest*bytesPerGiB <= h.LargestDiskBytes {
				return true
			}
		}
	}
	return false
}

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

package hostreqs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/agents"
)

func TestShortfalls(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Template
		m    Minimum
		want []string
	}{
		{"a default pool meets the worker minimum", Template{CPUs: 4, MemoryMiB: 16384, DisksGiB: []int64{100}}, DefaultWorker, nil},
		{"exactly the minimum", Template{CPUs: 2, MemoryMiB: 8192, DisksGiB: []int64{94}}, DefaultWorker, nil},
		{"93 GiB is below 100 GB", Template{CPUs: 2, MemoryMiB: 8192, DisksGiB: []int64{93}}, DefaultWorker,
			[]string{"a largest disk of 93 GiB, below the 100 GB"}},
		{"a data disk large enough meets the disk minimum", Template{CPUs: 2, MemoryMiB: 8192, DisksGiB: []int64{40, 200}}, DefaultWorker, nil},
		{"memory below", Template{CPUs: 2, MemoryMiB: 4096, DisksGiB: []int64{120}}, DefaultWorker,
			[]string{"4096 MiB of memory, below the 8192 MiB"}},
		{"everything below, in order", Template{CPUs: 1, MemoryMiB: 2048, DisksGiB: []int64{20}}, DefaultWorker,
			[]string{"1 vCPU(s), below the 2 cores", "2048 MiB of memory, below the 8192 MiB", "a largest disk of 20 GiB, below the 100 GB"}},
		{"a worker-sized VM is below the master minimum", Template{CPUs: 2, MemoryMiB: 8192, DisksGiB: []int64{120}}, DefaultMaster,
			[]string{"2 vCPU(s), below the 4 cores", "8192 MiB of memory, below the 16384 MiB"}},
		{"no disk at all", Template{CPUs: 4, MemoryMiB: 16384}, DefaultWorker, []string{"a largest disk of 0 GiB, below the 100 GB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Shortfalls(tc.t, tc.m); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Shortfalls = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWarning(t *testing.T) {
	ok := Template{CPUs: 4, MemoryMiB: 16384, DisksGiB: []int64{120}}
	if w := Warning(ok, "worker"); w != "" {
		t.Errorf("a sufficient worker warns %q", w)
	}
	small := Template{CPUs: 2, MemoryMiB: 4096, DisksGiB: []int64{120}}
	for role, want := range map[string]string{"worker": "for a worker", "": "for a worker", "infra": "for a worker", "master": "for a master"} {
		w := Warning(small, role)
		if !strings.Contains(w, want) || !strings.Contains(w, "4096 MiB of memory, below the") {
			t.Errorf("role %q: warning %q, want it to name %q and the memory", role, w, want)
		}
	}
	if w := Warning(Template{CPUs: 4, MemoryMiB: 16384, DisksGiB: []int64{120}}, "master"); w != "" {
		t.Errorf("a sufficient master warns %q", w)
	}
}

func TestIsHardwareValidation(t *testing.T) {
	for id, want := range map[string]bool{"has-memory-for-role": true, "has-min-cpu-cores": true, "has-min-valid-disks": true,
		"hostname-unique": false, "vsphere-disk-uuid-enabled": false, "": false} {
		if got := IsHardwareValidation(id); got != want {
			t.Errorf("IsHardwareValidation(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestSameShortfall(t *testing.T) {
	small := Host{Inventory: agents.Inventory{CPUCount: 2, MemoryBytes: 4096 << 20, LargestDiskBytes: 120 << 30}, FailedValidations: []string{"has-memory-for-role"}}
	for _, tc := range []struct {
		name string
		t    Template
		h    Host
		want bool
	}{
		{"the same template fails again", Template{CPUs: 2, MemoryMiB: 4096, DisksGiB: []int64{120}}, small, true},
		{"more CPUs do not help a memory failure", Template{CPUs: 8, MemoryMiB: 4096, DisksGiB: []int64{120}}, small, true},
		{"more memory is a new shape", Template{CPUs: 2, MemoryMiB: 8192, DisksGiB: []int64{120}}, small, false},
		{"unknown memory is the same", Template{CPUs: 2, MemoryMiB: 8192, DisksGiB: []int64{120}}, Host{FailedValidations: []string{"has-min-memory"}}, true},
		{"a larger disk answers a disk failure", Template{CPUs: 2, MemoryMiB: 4096, DisksGiB: []int64{20, 200}},
			Host{Inventory: agents.Inventory{LargestDiskBytes: 20 << 30}, FailedValidations: []string{"has-min-valid-disks"}}, false},
		{"cores", Template{CPUs: 2}, Host{Inventory: agents.Inventory{CPUCount: 2}, FailedValidations: []string{"has-cpu-cores-for-role"}}, true},
		{"a validation of no hardware dimension is no shortfall", Template{CPUs: 2}, Host{Inventory: agents.Inventory{CPUCount: 2}, FailedValidations: []string{"hostname-unique"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SameShortfall(tc.t, tc.h); got != tc.want {
				t.Errorf("SameShortfall = %v, want %v", got, tc.want)
			}
		})
	}
}

package pool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vspherefake"
)

// Pools placing VMs in one resource pool share one reading of its hosts' PCI devices: one read per
// deviceCheckInterval whatever the number of pools and passes, and one a minute while no host fits.
func TestPoolsOnOnePlacementShareTheDeviceReading(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	vs := vspherefake.New(clk)
	vs.SetHostDevices(vsphere.HostDevices{Compute: "C0", Hosts: []vsphere.HostPCI{
		{Name: "h0", VGPUProfiles: []string{"grid_t4-4q"}},
		{Name: "h1", Passthrough: []vsphere.PassthroughDevice{{VendorID: 0x10DE, DeviceID: 0x1EB8}}},
	}})
	spec := vsphere.HostDevicesSpec{Datacenter: "dc", ResourcePool: "rp"}
	vgpu := []vsphere.PCIDevice{{VGPUProfile: "grid_t4-4q"}}
	a100 := []vsphere.PCIDevice{{VendorID: 0x10DE, DeviceID: 0x20F1}}
	var tr domainTracker
	fit := func(server string, want []vsphere.PCIDevice) deviceFit {
		return tr.devicesFit(ctx, server, vs, spec, want, clk.Now())
	}
	reads := func() int { return vs.Calls(vspherefake.ReadHostDevices) }

	if f := fit("vc", vgpu); f.shortfall != "" || f.err != "" {
		t.Fatalf("a vGPU profile h0 offers: %+v", f)
	}
	for range 5 { // other pools and passes
		if f := fit("vc", vgpu); f.shortfall != "" {
			t.Fatalf("again: %+v", f)
		}
	}
	if reads() != 1 {
		t.Fatalf("%d reads for six passes on one placement; want 1", reads())
	}
	if f := fit("vc", a100); !strings.Contains(f.shortfall, "no host of C0 offers PCI device 10de:20f1") || reads() != 1 {
		t.Fatalf("an A100 on the same reading: %+v after %d reads; want the shortfall, no read", f, reads())
	}
	if fit("vc-2", vgpu); reads() != 2 {
		t.Fatalf("another vCenter reads its own hosts: %d reads, want 2", reads())
	}

	clk.Step(deviceRecheckInterval)
	if fit("vc", vgpu); reads() != 2 {
		t.Fatalf("a fitting pool after %s: %d reads; want the reading kept (2)", deviceRecheckInterval, reads())
	}
	if fit("vc", a100); reads() != 3 {
		t.Fatalf("a pool no host fits after %s: %d reads; want a fresh reading (3)", deviceRecheckInterval, reads())
	}
	clk.Step(deviceCheckInterval)
	vs.FailNext(vspherefake.ReadHostDevices, errors.New("connection reset"))
	if f := fit("vc", vgpu); !strings.Contains(f.err, "connection reset") {
		t.Fatalf("a failed read: %+v, want its error", f)
	}
	clk.Step(deviceRecheckInterval)
	if f := fit("vc", vgpu); f.err != "" || f.shortfall != "" || reads() != 5 {
		t.Fatalf("after a failed read, a minute later: %+v after %d reads; want a fresh reading that fits (5)", f, reads())
	}
}

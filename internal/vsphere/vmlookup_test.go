package vsphere_test

import (
	"context"

	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// TestLookupVMsReadsKnownVMsInOneRetrieval: the periodic look-up of a pool's VMs costs one property
// retrieval for every VM the session knows, with what FindVM reads (folder, CD-ROMs, power state); a VM
// destroyed outside the session and a VM the session never saw are left out (their callers look them up
// with FindVM, which searches), and a warm session that knows none of them makes no call.
func TestLookupVMsReadsKnownVMsInOneRetrieval(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	a, b, gone := h.createVM(t, "lookup-a", newOwner()), h.createVM(t, "lookup-b", newOwner()), h.createVM(t, "lookup-gone", newOwner())
	admin := adminClient(t, h)
	ref, err := object.NewSearchIndex(admin).FindByUuid(ctx, nil, gone.InstanceUUID, true, types.NewBool(true))
	if err != nil || ref == nil {
		t.Fatalf("finding the VM as admin: %v", err)
	}
	vm := object.NewVirtualMachine(admin, ref.Reference())
	if task, err := vm.PowerOff(ctx); err != nil || task.Wait(ctx) != nil {
		t.Fatalf("power off: %v", err)
	}
	if task, err := vm.Destroy(ctx); err != nil || task.Wait(ctx) != nil {
		t.Fatalf("destroy: %v", err)
	}
	unknown := uuid.NewString()

	var got map[string]*vsphereVMInfo
	calls := h.callsOf(func() {
		got, err = lookup(ctx, h, []string{strings.ToUpper(a.InstanceUUID), b.InstanceUUID, gone.InstanceUUID, unknown})
	})
	if err != nil {
		t.Fatal(err)
	}
	if total(calls) != 1 || reads(calls) != 1 {
		t.Errorf("looking up 4 VMs made %v, want one RetrieveProperties", calls)
	}
	if len(got) != 2 {
		t.Fatalf("got %d VMs, want a and b only: %v", len(got), got)
	}
	for _, want := range []*vsphereVMInfo{a, b} {
		info := got[strings.ToLower(want.InstanceUUID)]
		switch {
		case info == nil:
			t.Errorf("VM %s missing", want.Name)
		case info.Name != want.Name || info.Folder != vcsim.Folder || !info.PoweredOn || len(info.CDROMs) == 0 || info.CDROMs[0].ISOPath != isoPath:
			t.Errorf("VM %s read as %+v; want its name, folder %q, powered on, the ISO's CD-ROM", want.Name, info, vcsim.Folder)
		}
	}

	fresh := newHarness(t)
	if _, err := lookup(ctx, fresh, []string{unknown}); err != nil { // resolves the datacenter once
		t.Fatal(err)
	}
	calls = fresh.callsOf(func() {
		got, err = lookup(ctx, fresh, []string{unknown})
	})
	if err != nil || len(got) != 0 || total(calls) != 0 {
		t.Errorf("a session knowing none of the VMs: %v, %v, calls %v; want nothing and no call", got, err, calls)
	}
}

type vsphereVMInfo = vsphere.VMInfo

func lookup(ctx context.Context, h *harness, uuids []string) (map[string]*vsphere.VMInfo, error) {
	return h.client.LookupVMs(ctx, vcsim.Datacenter, uuids)
}

package vsphere_test

import (
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Someone else renames, moves and powers off a VM: FindVM (by instance UUID) reports its name and folder
// now, PowerOnVM powers only an owned VM on again.
func TestFindVMFollowsARenamedMovedVMAndPowerOnVMChecksOwnership(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	info := h.createVM(t, "hc1-worker-b", owner)
	if got, err := h.client.FindVM(ctx, vcsim.Datacenter, owner.OwnerUID, ""); err != nil || got.Folder != vcsim.Folder {
		t.Fatalf("FindVM folder = %+v, %v; want %s", got, err, vcsim.Folder)
	}

	admin := adminClient(t, h)
	finder := find.NewFinder(admin, false)
	vm, err := finder.VirtualMachine(ctx, "/DC0/vm/"+vcsim.Folder+"/hc1-worker-b")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.env.EnsureFolder(ctx, "elsewhere/deeper"); err != nil {
		t.Fatal(err)
	}
	folder, err := finder.Folder(ctx, "/DC0/vm/elsewhere/deeper")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() (*object.Task, error){
		func() (*object.Task, error) { return vm.Rename(ctx, "renamed") },
		func() (*object.Task, error) {
			return folder.MoveInto(ctx, []types.ManagedObjectReference{vm.Reference()})
		},
		func() (*object.Task, error) { return vm.PowerOff(ctx) },
	} {
		task, err := step()
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.client.FindVM(ctx, vcsim.Datacenter, owner.OwnerUID, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "renamed" || got.Folder != "elsewhere/deeper" || got.PoweredOn || got.BIOSUUID != info.BIOSUUID || got.Ownership != owner {
		t.Fatalf("FindVM after rename, move and power-off = name %q folder %q on %t", got.Name, got.Folder, got.PoweredOn)
	}

	wrong := owner
	wrong.OwnerUID = newOwner().OwnerUID
	wantClass(t, h.client.PowerOnVM(ctx, vcsim.Datacenter, owner.OwnerUID, wrong), vsphere.ClassOwnership)
	if s, err := vm.PowerState(ctx); err != nil || s != types.VirtualMachinePowerStatePoweredOff {
		t.Fatalf("a refused power-on changed the power state: %s, %v", s, err)
	}
	for range 2 { // already on is success
		if err := h.client.PowerOnVM(ctx, vcsim.Datacenter, owner.OwnerUID, owner); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := vm.PowerState(ctx); err != nil || s != types.VirtualMachinePowerStatePoweredOn {
		t.Fatalf("power state = %s, %v", s, err)
	}
	wantClass(t, h.client.PowerOnVM(ctx, vcsim.Datacenter, newOwner().OwnerUID, owner), vsphere.ClassNotFound)
}

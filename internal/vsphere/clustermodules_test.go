package vsphere_test

import (
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// A pool's cluster module on the simulator: the cluster is resolved from the resource pool with its DRS
// setting, a VM created with the module joins it before power-on, the module lists it with its marker,
// the VM leaves it, and the module is deleted (again: absent is success).
func TestClusterModuleLifecycle(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	cl, err := h.client.ComputeClusterOf(ctx, vcsim.Datacenter, vcsim.ResourcePool)
	if err != nil {
		t.Fatal(err)
	}
	if !cl.IsCluster || !cl.DRSEnabled || cl.Name != vcsim.Cluster || cl.Ref == "" {
		t.Fatalf("cluster of %s = %+v, want DRS cluster %s", vcsim.ResourcePool, cl, vcsim.Cluster)
	}
	id, err := h.client.CreateClusterModule(ctx, cl.Ref)
	if err != nil {
		t.Fatal(err)
	}
	owner := newOwner()
	spec := h.env.VMSpec("aa-vm-1", owner)
	spec.ClusterModule = id
	info, err := h.client.CreateVM(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if info.ClusterModule != id || info.ClusterModuleErr != nil {
		t.Fatalf("CreateVM joined %q (err %v), want %q", info.ClusterModule, info.ClusterModuleErr, id)
	}
	mods, err := h.client.ClusterModules(ctx, cl.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 1 || mods[0].ID != id || len(mods[0].Members) != 1 || mods[0].Members[0].Ownership.OwnerUID != owner.OwnerUID {
		t.Fatalf("modules = %+v, want %s with the VM", mods, id)
	}
	if !mods[0].OwnedBy(owner.PoolUID) || mods[0].OwnedBy("another-pool") {
		t.Fatalf("OwnedBy wrong for %+v", mods[0])
	}
	// Joining again is success; a copy's marker is refused.
	if err := h.client.JoinClusterModule(ctx, vcsim.Datacenter, id, owner.OwnerUID, owner); err != nil {
		t.Fatalf("join again: %v", err)
	}
	stranger := owner
	stranger.PoolUID = "another-pool"
	if err := h.client.LeaveClusterModule(ctx, vcsim.Datacenter, id, owner.OwnerUID, stranger); vsphere.ClassOf(err) != vsphere.ClassOwnership {
		t.Fatalf("leave with another owner: %v, want an ownership refusal", err)
	}
	if err := h.client.LeaveClusterModule(ctx, vcsim.Datacenter, id, owner.OwnerUID, owner); err != nil {
		t.Fatal(err)
	}
	if err := h.client.LeaveClusterModule(ctx, vcsim.Datacenter, id, owner.OwnerUID, owner); err != nil {
		t.Fatalf("leave again: %v", err)
	}
	if mods, err = h.client.ClusterModules(ctx, cl.Ref); err != nil || len(mods) != 1 || len(mods[0].Members) != 0 {
		t.Fatalf("after leaving: %+v, %v", mods, err)
	}
	if err := h.client.JoinClusterModule(ctx, vcsim.Datacenter, id, owner.OwnerUID, owner); err != nil {
		t.Fatal(err)
	}
	if err := h.client.DeleteClusterModule(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := h.client.DeleteClusterModule(ctx, id); err != nil {
		t.Fatalf("delete again: %v", err)
	}
	if mods, err = h.client.ClusterModules(ctx, cl.Ref); err != nil || len(mods) != 0 {
		t.Fatalf("after delete: %+v, %v", mods, err)
	}
}

// DRS off is read from configurationEx; a vCenter without the API is ClassUnsupported, and a VM is still
// created (its join error reported, not returned).
func TestClusterModuleDRSOffAndNoAPI(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	if err := h.env.SetDRS(vcsim.Cluster, false); err != nil {
		t.Fatal(err)
	}
	cl, err := h.client.ComputeClusterOf(ctx, vcsim.Datacenter, vcsim.ResourcePool)
	if err != nil || cl.DRSEnabled {
		t.Fatalf("DRS off: %+v, %v", cl, err)
	}
	id, err := h.client.CreateClusterModule(ctx, cl.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.env.SetClusterModulesAPI(false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.ClusterModules(ctx, cl.Ref); vsphere.ClassOf(err) != vsphere.ClassUnsupported {
		t.Fatalf("list without the API: %v, want %s", err, vsphere.ClassUnsupported)
	}
	if _, err := h.client.CreateClusterModule(ctx, cl.Ref); vsphere.ClassOf(err) != vsphere.ClassUnsupported {
		t.Fatalf("create without the API: %v, want %s", err, vsphere.ClassUnsupported)
	}
	spec := h.env.VMSpec("aa-vm-2", newOwner())
	spec.ClusterModule = id
	info, err := h.client.CreateVM(ctx, spec)
	if err != nil {
		t.Fatalf("CreateVM must not fail on the module: %v", err)
	}
	if !info.PoweredOn || info.ClusterModule != "" || info.ClusterModuleErr == nil {
		t.Fatalf("CreateVM without the API: %+v", info)
	}
}

package vsphere_test

import (
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// callsOf runs f and returns the SOAP requests it made, by method.
func (h *harness) callsOf(f func()) map[string]int {
	_, before := h.calls.snapshot()
	f()
	_, after := h.calls.snapshot()
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// reads counts property retrievals (govmomi's collector sends RetrievePropertiesEx).
func reads(calls map[string]int) int {
	return calls["RetrieveProperties"] + calls["RetrievePropertiesEx"]
}

func total(calls map[string]int) int {
	n := 0
	for _, v := range calls {
		n += v
	}
	return n
}

// TestKnownVMCostsOneRetrieval: once the session created (or found) a VM, looking it up costs one
// property retrieval with its folder path (no FindByUuid, no walk up the folders), and an ejection costs
// one retrieval and the reconfigure to start, one retrieval to see it done, whose read of the VM the
// caller gets (no FindVM after it).
func TestKnownVMCostsOneRetrieval(t *testing.T) {
	f := newEjectFixture(t)
	f.vm.SetDoorLocked(false)
	h, ctx := f.h, testContext(t)
	var info *vsphere.VMInfo
	calls := h.callsOf(func() {
		var err error
		if info, err = h.client.FindVM(ctx, vcsim.Datacenter, f.info.InstanceUUID, f.info.BIOSUUID); err != nil {
			t.Fatal(err)
		}
	})
	if total(calls) != 1 || reads(calls) != 1 {
		t.Errorf("FindVM of a known VM made %v, want one RetrieveProperties", calls)
	}
	if info.Folder != vcsim.Folder || info.InstanceUUID != f.info.InstanceUUID || len(info.CDROMs) == 0 {
		t.Errorf("FindVM read folder %q, instance UUID %q, %d CD-ROMs; want %q, %q, the ISO's CD-ROM", info.Folder, info.InstanceUUID, len(info.CDROMs), vcsim.Folder, f.info.InstanceUUID)
	}

	var started *vsphere.EjectResult
	calls = h.callsOf(func() { started = f.eject(t, f.req) })
	if total(calls) != 2 || reads(calls) != 1 || calls["ReconfigVM_Task"] != 1 {
		t.Errorf("starting an ejection made %v, want one RetrieveProperties and one ReconfigVM_Task", calls)
	}
	if started.State != vsphere.EjectInProgress || started.TaskRef == "" {
		t.Fatalf("first step: %+v, want InProgress with a task", started)
	}
	req := f.req
	req.TaskRef = started.TaskRef
	var done *vsphere.EjectResult
	calls = h.callsOf(func() { done = f.pollUntil(t, req, vsphere.EjectDone) })
	if reads(calls) < 1 || total(calls) != reads(calls) {
		t.Errorf("checking the ejection made %v, want property retrievals only", calls)
	}
	if done.VM == nil {
		t.Fatal("the finished step returned no read of the VM")
	}
	for _, cd := range done.VM.CDROMs {
		if cd.Key == f.req.DeviceKey && (cd.ISOPath != "" || cd.Connected) {
			t.Errorf("the finished step's read shows CD-ROM %d still holding %q (connected %t)", cd.Key, cd.ISOPath, cd.Connected)
		}
	}
}

// TestGoneReferenceIsSearchedAgain: a VM destroyed outside the session leaves its remembered reference
// pointing at nothing; the look-up searches by instance UUID again and reports NotFound, and a VM created
// again with that instance UUID is remembered under its new reference.
func TestGoneReferenceIsSearchedAgain(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	created := h.createVM(t, "re-registered", owner)
	admin := adminClient(t, h)
	ref, err := object.NewSearchIndex(admin).FindByUuid(ctx, nil, created.InstanceUUID, true, types.NewBool(true))
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
	calls := h.callsOf(func() {
		_, err = h.client.FindVM(ctx, vcsim.Datacenter, created.InstanceUUID, "")
	})
	wantClass(t, err, vsphere.ClassNotFound)
	if calls["FindByUuid"] != 1 {
		t.Errorf("a gone reference made %v, want a FindByUuid search after it", calls)
	}
	// A new VM of the same owner (as after a crash) is found by search and remembered again.
	again := h.createVM(t, "re-created", owner)
	calls = h.callsOf(func() {
		if _, err := h.client.FindVM(ctx, vcsim.Datacenter, again.InstanceUUID, ""); err != nil {
			t.Fatal(err)
		}
	})
	if calls["FindByUuid"] != 0 {
		t.Errorf("FindVM after CreateVM made %v, want no search", calls)
	}
}

// TestNewOwnerSkipsTheSearch: a spec marked New (its owner was just created and never tried) is created
// without the search by instance UUID; one not marked New searches and adopts the VM it finds.
func TestNewOwnerSkipsTheSearch(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	spec := h.env.VMSpec("brand-new", owner)
	spec.ISOPath, spec.Tags, spec.New = isoPath, nil, true
	var info *vsphere.VMInfo
	calls := h.callsOf(func() {
		var err error
		if info, err = h.client.CreateVM(ctx, spec); err != nil {
			t.Fatal(err)
		}
	})
	if calls["FindByUuid"] != 0 || calls["CreateVM_Task"] != 1 || info.Adopted {
		t.Errorf("a New spec made %v (adopted %t), want a create without a search", calls, info.Adopted)
	}
	spec.New = false
	calls = h.callsOf(func() {
		var err error
		if info, err = h.client.CreateVM(ctx, spec); err != nil {
			t.Fatal(err)
		}
	})
	if calls["FindByUuid"] != 1 || calls["CreateVM_Task"] != 0 || !info.Adopted {
		t.Errorf("a repeated create made %v (adopted %t), want the search to find and adopt the VM", calls, info.Adopted)
	}
}

package vsphere_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
)

// A crash after the create task and before the tags (crash point vm-created), or a failed tag call,
// leaves our VM untagged: the retry adopts it by instance UUID and must tag it, as a fresh create does.
func TestCreateVMAdoptedAfterCrashCarriesTheTags(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	spec := h.env.VMSpec("hc1-worker-crash", owner)
	spec.ISOPath = isoPath
	if len(spec.Tags) == 0 {
		t.Fatal("the simulator's VM spec carries no tags; nothing to check")
	}
	crashCtx, crash := context.WithCancel(ctx)
	defer crash()
	crashCtx = crashpoint.With(crashCtx, func(_ context.Context, point string) {
		if point == crashpoint.VMCreated {
			crash() // the operator dies with the VM created, untagged and powered off
		}
	})
	if _, err := h.client.CreateVM(crashCtx, spec); err == nil {
		t.Fatal("CreateVM went past the crash point")
	}
	info, err := h.client.CreateVM(ctx, spec)
	if err != nil {
		t.Fatalf("CreateVM after the crash: %v", err)
	}
	if !info.Adopted || !info.PoweredOn {
		t.Fatalf("want the VM of the first attempt adopted and powered on, got %+v", info)
	}
	vm := h.env.VMByInstanceUUID(owner.OwnerUID)
	if vm == nil {
		t.Fatal("VM gone")
	}
	tags, err := h.env.AttachedTags(ctx, vm.Reference())
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(tags)
	if !slices.Equal(tags, []string{"agent", "worker"}) {
		t.Fatalf("adopted VM tags = %v, want [agent worker]", tags)
	}
	if n := h.env.CountVMsNamed("hc1-worker-crash"); n != 1 {
		t.Fatalf("%d VMs named hc1-worker-crash, want 1", n)
	}
}

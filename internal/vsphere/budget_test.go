package vsphere_test

import (
	"fmt"
	"testing"

	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// TestRequestBudgetPerVM pins the number of SOAP requests one VM costs on a warm session: create with
// CD-ROM, power on, read identity, destroy. It counts requests, not time.
func TestRequestBudgetPerVM(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	lifecycle := func(name string) {
		owner := newOwner()
		spec := h.env.VMSpec(name, owner)
		spec.ISOPath = isoPath
		spec.Tags = nil // tags go through the REST API, not SOAP
		if _, err := h.client.CreateVM(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if err := h.client.DestroyVM(ctx, vcsim.Datacenter, owner.OwnerUID, owner); err != nil {
			t.Fatal(err)
		}
	}
	lifecycle("warm-up") // resolves and caches datacenter, folder, pool, network, datastore
	const vms = 5
	before, _ := h.calls.snapshot()
	for i := range vms {
		lifecycle(fmt.Sprintf("budget-%d", i))
	}
	after, byMethod := h.calls.snapshot()
	perVM := float64(after-before) / vms
	t.Logf("SOAP requests per VM: %.1f (%v)", perVM, byMethod)
	if perVM > 15 {
		t.Fatalf("%.1f SOAP requests per VM, budget is 15", perVM)
	}
	// Only the creates search by instance UUID: a destroy addresses the VM by the reference it was created with.
	if byMethod["FindByUuid"] != vms+1 {
		t.Fatalf("%d FindByUuid calls for %d creates and destroys, want one per create", byMethod["FindByUuid"], vms+1)
	}
	if byMethod["Login"] != 1 {
		t.Fatalf("%d logins, want 1", byMethod["Login"])
	}
}

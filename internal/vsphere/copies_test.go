package vsphere_test

import (
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// TestIdentityOf: only a VM whose instance UUID is its marker's owner UID, and no template, is the one we
// made; any other VM with a marker is a copy; no marker is foreign.
func TestIdentityOf(t *testing.T) {
	const uid = "6f1c0d0e-0000-4000-8000-000000000001"
	marker := vsphere.Ownership{OwnerUID: uid, PoolUID: "pool"}
	for _, tc := range []struct {
		name     string
		instance string
		template bool
		marker   vsphere.Ownership
		want     vsphere.Identity
	}{
		{"created or adopted VM", uid, false, marker, vsphere.IdentityOriginal},
		{"instance UUID in upper case", "6F1C0D0E-0000-4000-8000-000000000001", false, marker, vsphere.IdentityOriginal},
		{"clone, restored backup or replica: new instance UUID", "11111111-0000-4000-8000-000000000002", false, marker, vsphere.IdentityCopy},
		{"template cloned from the VM", "11111111-0000-4000-8000-000000000003", true, marker, vsphere.IdentityCopy},
		{"the VM itself marked as template", uid, true, marker, vsphere.IdentityCopy},
		{"copy with an empty instance UUID", "", false, marker, vsphere.IdentityCopy},
		{"foreign VM", uid, false, vsphere.Ownership{}, vsphere.IdentityForeign},
		{"foreign template", "", true, vsphere.Ownership{}, vsphere.IdentityForeign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := vsphere.IdentityOf(tc.instance, tc.template, tc.marker); got != tc.want {
				t.Fatalf("IdentityOf = %s, want %s", got, tc.want)
			}
			info := vsphere.VMInfo{InstanceUUID: tc.instance, Template: tc.template, Ownership: tc.marker}
			if info.IsCopy() != (tc.want == vsphere.IdentityCopy) {
				t.Fatalf("IsCopy = %t for %s", info.IsCopy(), tc.want)
			}
		})
	}
}

// TestCopiesAreNeverChanged: clones, a template and a powered-off replica of an owned VM (made with
// vCenter's clone call, so they carry its marker) are listed as copies, and every changing call refuses
// them with ClassOwnership, whichever marker the caller names; the original is destroyed normally.
func TestCopiesAreNeverChanged(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	orig := h.createVM(t, "original", owner)
	copies := map[string]vcsim.CloneOptions{
		"clone":    {Name: "original-clone", PowerOn: true},
		"template": {Name: "original-template", Folder: "templates", Template: true},
		"replica":  {Name: "original-replica", Folder: "dr/replicas"},
	}
	uuids := map[string]string{}
	for kind, opts := range copies {
		uuid, err := h.env.CloneVM(ctx, orig.InstanceUUID, opts)
		if err != nil {
			t.Fatalf("clone %s: %v", kind, err)
		}
		uuids[kind] = uuid
	}
	listed, err := h.client.ListPoolVMs(ctx, vcsim.Datacenter, owner.PoolUID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, vm := range listed {
		if vm.IsCopy() {
			n++
		} else if vm.InstanceUUID != orig.InstanceUUID {
			t.Errorf("VM %s (%s) listed as an original", vm.Name, vm.InstanceUUID)
		}
	}
	if len(listed) != 4 || n != 3 {
		t.Fatalf("ListPoolVMs: %d VMs, %d copies; want 4 and 3", len(listed), n)
	}
	refused := func(what string, err error) {
		t.Helper()
		if vsphere.ClassOf(err) != vsphere.ClassOwnership {
			t.Errorf("%s: err = %v, want %s", what, err, vsphere.ClassOwnership)
		}
	}
	for kind, uuid := range uuids {
		info, err := h.client.FindVM(ctx, vcsim.Datacenter, uuid, "")
		if err != nil {
			t.Fatal(err)
		}
		refused(kind+": destroy with its own marker", h.client.DestroyVM(ctx, vcsim.Datacenter, uuid, info.Ownership))
		refused(kind+": destroy with the owner's marker", h.client.DestroyVM(ctx, vcsim.Datacenter, uuid, owner))
		if kind != "clone" {
			refused(kind+": power on", h.client.PowerOnVM(ctx, vcsim.Datacenter, uuid, owner))
		}
		if len(info.CDROMs) > 0 {
			_, err = h.client.EjectISO(ctx, vsphere.EjectRequest{Datacenter: vcsim.Datacenter, InstanceUUID: uuid, Ownership: owner,
				DeviceKey: info.CDROMs[0].Key, ExpectedISOPath: info.CDROMs[0].ISOPath})
			refused(kind+": eject", err)
		} else {
			t.Errorf("%s: no CD-ROM copied", kind)
		}
		simVM := h.env.VMByInstanceUUID(uuid)
		if simVM == nil {
			t.Fatalf("%s destroyed", kind)
		}
		_, err = h.client.AdoptVM(ctx, vcsim.Datacenter, simVM.Self.Value, info.BIOSUUID, owner)
		refused(kind+": adopt", err)
	}
	if err := h.client.DestroyVM(ctx, vcsim.Datacenter, orig.InstanceUUID, owner); err != nil {
		t.Fatalf("destroy the original: %v", err)
	}
	if h.env.VMByInstanceUUID(orig.InstanceUUID) != nil {
		t.Fatal("the original survived its destroy")
	}
	for kind, uuid := range uuids {
		info, err := h.client.FindVM(ctx, vcsim.Datacenter, uuid, "")
		if err != nil {
			t.Fatalf("%s gone: %v", kind, err)
		}
		if kind == "replica" && info.PoweredOn || kind == "clone" && !info.PoweredOn || len(info.CDROMs) == 0 || info.CDROMs[0].ISOPath == "" {
			t.Errorf("%s changed: %+v", kind, info)
		}
	}
}

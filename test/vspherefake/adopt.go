package vspherefake

import (
	"context"
	"strings"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// The adoption methods of vsphere.Client.
const (
	AdoptionCandidates Method = "AdoptionCandidates"
	AdoptVM            Method = "AdoptVM"
)

// AdoptionCandidates lists the fake's VMs named name (Ref is the map key, the instance UUID).
func (f *Fake) AdoptionCandidates(_ context.Context, datacenter, name string) ([]vsphere.AdoptionCandidate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(AdoptionCandidates); err != nil {
		return nil, err
	}
	var out []vsphere.AdoptionCandidate
	for key, vm := range f.vms {
		if vm.Name == name && vm.Datacenter == datacenter {
			out = append(out, vsphere.AdoptionCandidate{VMInfo: *infoOf(vm), Ref: key, Folder: strings.Trim(vm.Folder, "/")})
		}
	}
	return out, nil
}

// AdoptVM re-keys the VM by owner's UID and marks it, with the real client's checks.
func (f *Fake) AdoptVM(_ context.Context, datacenter, ref, biosUUID string, owner vsphere.Ownership) (*vsphere.VMInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(AdoptVM); err != nil {
		return nil, err
	}
	vm, ok := f.vms[ref]
	if !ok || vm.Datacenter != datacenter {
		return nil, vsphere.NewError(vsphere.ClassNotFound, "AdoptVM", "no VM %q", ref)
	}
	if !strings.EqualFold(vm.BIOSUUID, biosUUID) || owner.OwnerUID == "" ||
		(vm.Ownership.OwnerUID != "" && vm.Ownership.OwnerUID != owner.OwnerUID) {
		return nil, vsphere.NewError(vsphere.ClassOwnership, "AdoptVM", "VM %q is not adoptable by %s", vm.Name, owner.OwnerUID)
	}
	delete(f.vms, ref)
	vm.InstanceUUID, vm.Ownership = owner.OwnerUID, owner
	f.vms[owner.OwnerUID] = vm
	return infoOf(vm), nil
}

package vsphere

import (
	"strings"

	"github.com/vmware/govmomi/vim25/mo"
)

// Identity says what a VM carrying a marker is to the operator (SPEC §4). The marker (extraConfig) is
// copied by every clone, template, restored backup and DR replica, so it names an owner but proves
// nothing alone; the instance UUID is what vCenter gives each VM anew and what CreateVM and AdoptVM set
// to the owner's UID: only a VM whose instance UUID is its marker's owner UID is the one we made.
type Identity string

const (
	// IdentityForeign is a VM with no marker, not the operator's.
	IdentityForeign Identity = "Foreign"
	// IdentityOriginal is a VM whose marker and instance UUID name the same owner, not a template: the VM we made.
	IdentityOriginal Identity = "Original"
	// IdentityCopy is a VM with a marker whose owner is not this VM's instance UUID, or a template: a copy of one of
	// our VMs (clone, template, restored backup, replica). Reported, never destroyed, reconfigured,
	// powered on, ejected or counted as supply.
	IdentityCopy Identity = "Copy"
)

// IdentityOf classifies a VM from its instance UUID, config.template and marker.
func IdentityOf(instanceUUID string, template bool, marker Ownership) Identity {
	switch {
	case marker.OwnerUID == "":
		return IdentityForeign
	case template || !strings.EqualFold(instanceUUID, marker.OwnerUID):
		return IdentityCopy
	default:
		return IdentityOriginal
	}
}

// Identity classifies the VM as read.
func (v *VMInfo) Identity() Identity { return IdentityOf(v.InstanceUUID, v.Template, v.Ownership) }

// IsCopy says the VM carries a marker but is not the VM its marker names (see IdentityCopy).
func (v *VMInfo) IsCopy() bool { return v.Identity() == IdentityCopy }

// verifyIdentity is the guard of every call that changes a VM (destroy, power, reconfigure, eject): the
// marker names want's owner (and pool), and the VM is the original: its instance UUID is that owner's
// UID and it is no template. A copy carries the same marker, so the marker alone is not enough.
func verifyIdentity(op string, vm *mo.VirtualMachine, want Ownership) error {
	if vm.Config == nil {
		return NewError(ClassOwnership, op, "VM %q has no configuration to prove its identity", vm.Name)
	}
	have := ownershipOf(vm.Config.ExtraConfig)
	if err := verifyOwnership(op, vm.Name, have, want); err != nil {
		return err
	}
	if vm.Config.Template {
		return NewError(ClassOwnership, op, "VM %q is a template carrying the marker of %s: a copy, never changed", vm.Name, have.OwnerUID)
	}
	if !strings.EqualFold(vm.Config.InstanceUuid, want.OwnerUID) {
		return NewError(ClassOwnership, op, "VM %q carries the marker of %s but its instance UUID is %s: a copy (clone, restored backup or replica), never changed",
			vm.Name, have.OwnerUID, vm.Config.InstanceUuid)
	}
	return nil
}

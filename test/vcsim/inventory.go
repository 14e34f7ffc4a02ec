package vcsim

import (
	"fmt"
	"sync"

	"github.com/vmware/govmomi/vim25/mo"
)

// hiddenVMs holds the VMs HideVM took out of the inventory, by instance UUID, until RestoreVM.
var hiddenVMs sync.Map

// HideVM takes the VM with that instance UUID out of the inventory the way vCenter shows a VM while it
// is unregistered and registered again (HA restarting it elsewhere, a host reconnecting, a backup
// product restoring it in place): SearchIndex.FindByUuid answers no VM, and a property retrieval of its
// reference reports the object missing (ManagedObjectNotFound, "has already been deleted or has not been
// completely created"). RestoreVM puts the same object back: reference, config and marker unchanged.
func (e *Env) HideVM(uuid string) error {
	if e.ctl != nil {
		return e.ctl.call("vm/hide", uuidReq{UUID: uuid}, nil)
	}
	vm := e.VMByInstanceUUID(uuid)
	if vm == nil {
		return fmt.Errorf("no VM with instance UUID %s", uuid)
	}
	obj := e.Map().Get(vm.Self)
	if obj == nil {
		return fmt.Errorf("VM %s is not in the registry", vm.Self.Value)
	}
	hiddenVMs.Store(uuid, obj)
	e.Map().Remove(e.lockContext(), vm.Self)
	return nil
}

// RestoreVM puts a VM HideVM took out back into the inventory.
func (e *Env) RestoreVM(uuid string) error {
	if e.ctl != nil {
		return e.ctl.call("vm/restore", uuidReq{UUID: uuid}, nil)
	}
	obj, ok := hiddenVMs.LoadAndDelete(uuid)
	if !ok {
		return fmt.Errorf("no hidden VM with instance UUID %s", uuid)
	}
	e.Map().Put(obj.(mo.Reference))
	return nil
}

package vsphere

import (
	"context"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// AdoptionCandidate is a VM the upstream operator may have made, with what adoption compares.
type AdoptionCandidate struct {
	VMInfo
	// Ref is the VM's managed object ID (opaque; AdoptVM addresses the VM by it).
	Ref string
	// Folder is the VM's folder relative to the datacenter's VM folder ("a/b"), "" at its root.
	Folder string
	// Notes is the VM's annotation (upstream 1.1.0+ writes its ownership marker there).
	Notes string
}

// AdoptionCandidates lists, read-only, every VM named name in the datacenter (any folder): adoption
// refuses unless exactly one exists and all of its evidence agrees.
func (c *client) AdoptionCandidates(ctx context.Context, datacenter, name string) ([]AdoptionCandidate, error) {
	out, err := c.adoptionCandidates(ctx, datacenter, name)
	return out, observe("inspect", err)
}

func (c *client) adoptionCandidates(ctx context.Context, datacenter, name string) ([]AdoptionCandidate, error) {
	d, err := c.datacenter(ctx, datacenter)
	if err != nil {
		return nil, err
	}
	folders, err := d.dc.Folders(ctx)
	if err != nil {
		return nil, err
	}
	root := folders.VmFolder.Reference()
	var found []mo.VirtualMachine
	props := append([]string{"parent", "config.annotation"}, vmProps...)
	if err := c.eachVM(ctx, datacenter, props, func(vm *mo.VirtualMachine) {
		if vm.Name == name {
			found = append(found, *vm)
		}
	}); err != nil {
		return nil, err
	}
	out := make([]AdoptionCandidate, 0, len(found))
	for i := range found {
		vm := &found[i]
		cand := AdoptionCandidate{VMInfo: *toVMInfo(vm), Ref: vm.Self.Value}
		if vm.Config != nil {
			cand.Notes = vm.Config.Annotation
		}
		if vm.Parent != nil {
			if cand.Folder, err = c.folderPath(ctx, *vm.Parent, root); err != nil {
				return nil, err
			}
		}
		out = append(out, cand)
	}
	return out, nil
}

// folderPath is ref's path below root ("a/b"); a folder outside root gets a leading "/" so that it
// never equals a pool's relative folder.
func (c *client) folderPath(ctx context.Context, ref, root types.ManagedObjectReference) (string, error) {
	var parts []string
	for depth := 0; depth < 64 && ref != root; depth++ {
		var f mo.ManagedEntity
		if err := c.pc().RetrieveOne(ctx, ref, []string{"name", "parent"}, &f); err != nil {
			return "", err
		}
		parts = append([]string{f.Name}, parts...)
		if f.Parent == nil || f.Parent.Type != "Folder" {
			return "/" + strings.Join(parts, "/"), nil
		}
		ref = *f.Parent
	}
	return strings.Join(parts, "/"), nil
}

// AdoptVM marks the VM ref as owner's in one reconfigure: the instance UUID becomes owner.OwnerUID and
// the extraConfig ownership marker is added, so every later step finds and proves it like a VM this
// operator created. It re-reads the VM first and refuses (ClassOwnership) when its BIOS UUID is no
// longer biosUUID or it carries another owner's marker; a VM already marked for owner is success.
func (c *client) AdoptVM(ctx context.Context, datacenter, ref, biosUUID string, owner Ownership) (*VMInfo, error) {
	info, err := c.adoptVM(ctx, datacenter, ref, biosUUID, owner)
	return info, observe("adopt", err)
}

func (c *client) adoptVM(ctx context.Context, datacenter, ref, biosUUID string, owner Ownership) (*VMInfo, error) {
	if owner.OwnerUID == "" || biosUUID == "" {
		return nil, NewError(ClassOwnership, "AdoptVM", "no owner UID or BIOS UUID given")
	}
	if _, err := c.datacenter(ctx, datacenter); err != nil {
		return nil, err
	}
	mor := types.ManagedObjectReference{Type: "VirtualMachine", Value: ref}
	vm, err := c.readVM(ctx, mor)
	if err != nil {
		return nil, err
	}
	info := toVMInfo(vm)
	if !strings.EqualFold(info.BIOSUUID, biosUUID) {
		return nil, NewError(ClassOwnership, "AdoptVM", "VM %q has BIOS UUID %s, not %s", info.Name, info.BIOSUUID, biosUUID)
	}
	if info.Template {
		return nil, NewError(ClassOwnership, "AdoptVM", "VM %q is a template: never adopted", info.Name)
	}
	if have := info.Ownership; have.OwnerUID != "" {
		// Our marker is there: either an earlier pass adopted this VM and lost its status write, or the VM
		// is a copy of an adopted one (the marker travels with clones); verifyIdentity tells them apart.
		if err := verifyIdentity("AdoptVM", vm, owner); err != nil {
			return nil, err
		}
		return info, nil
	}
	spec := types.VirtualMachineConfigSpec{
		InstanceUuid: owner.OwnerUID,
		ExtraConfig: []types.BaseOptionValue{
			&types.OptionValue{Key: ExtraConfigOwnerUID, Value: owner.OwnerUID},
			&types.OptionValue{Key: ExtraConfigOwner, Value: owner.OwnerName},
			&types.OptionValue{Key: ExtraConfigPoolUID, Value: owner.PoolUID},
			&types.OptionValue{Key: ExtraConfigPool, Value: owner.PoolName},
		},
	}
	t, err := object.NewVirtualMachine(c.vim, mor).Reconfigure(ctx, spec)
	if err == nil {
		_, err = c.waitTaskOf(ctx, "Reconfigure", t.Reference())
	}
	if err != nil {
		return nil, err
	}
	if vm, err = c.readVM(ctx, mor); err != nil {
		return nil, err
	}
	c.log.Info("adopted VM", "vm", info.Name, "instanceUUID", owner.OwnerUID)
	return toVMInfo(vm), nil
}

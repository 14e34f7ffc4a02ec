package vsphere

import (
	"context"
	"strings"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// LookupVMs reads the VMs of the datacenter whose references this session knows, by instance UUID, in
// one property retrieval with their ancestor folders (what FindVM reads for one VM). A VM whose
// reference is not known, whose object is gone, or that no longer carries that instance UUID is left out
// of the result: the caller looks it up with FindVM, which searches. Keys are lower-case instance UUIDs.
// A periodic look-up of many VMs then costs one call instead of one per VM.
func (c *client) LookupVMs(ctx context.Context, datacenter string, instanceUUIDs []string) (map[string]*VMInfo, error) {
	out, err := c.lookupVMs(ctx, datacenter, instanceUUIDs)
	return out, observe("find", err)
}

func (c *client) lookupVMs(ctx context.Context, datacenter string, instanceUUIDs []string) (map[string]*VMInfo, error) {
	out := map[string]*VMInfo{}
	d, err := c.datacenter(ctx, datacenter)
	if err != nil {
		return nil, err
	}
	var objects []types.ObjectSpec
	for _, uuid := range instanceUUIDs {
		if ref, ok := d.refs.get(uuid); ok {
			objects = append(objects, types.ObjectSpec{Obj: ref, SelectSet: parentFolders()})
		}
	}
	if len(objects) == 0 {
		return out, nil
	}
	yes := true
	req := types.RetrieveProperties{SpecSet: []types.PropertyFilterSpec{{
		ObjectSet: objects,
		PropSet: []types.PropertySpec{
			{Type: "VirtualMachine", PathSet: withInstanceUUID(vmProps)},
			{Type: "Folder", PathSet: []string{"name", "parent"}},
		},
		ReportMissingObjectsInResults: &yes,
	}}}
	res, err := c.pc().RetrieveProperties(ctx, req)
	if err == nil && sessionLost(res.Returnval) {
		c.renewSession(ctx) // as retrieveVM: a forgotten session answers with per-object faults
		res, err = c.pc().RetrieveProperties(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	folders := map[types.ManagedObjectReference]mo.Folder{}
	var vms []*mo.VirtualMachine
	for _, oc := range res.Returnval {
		if missing(oc) {
			continue
		}
		content := []types.ObjectContent{oc}
		switch oc.Obj.Type {
		case "VirtualMachine":
			vm := new(mo.VirtualMachine)
			if err := mo.LoadObjectContent(content, vm); err != nil {
				return nil, err
			}
			vms = append(vms, vm)
		case "Folder":
			var f mo.Folder
			if err := mo.LoadObjectContent(content, &f); err != nil {
				return nil, err
			}
			folders[oc.Obj] = f
		}
	}
	root, err := d.folder(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, vm := range vms {
		if vm.Config == nil {
			continue
		}
		uuid := strings.ToLower(vm.Config.InstanceUuid)
		if known, ok := d.refs.get(uuid); !ok || known != vm.Self {
			continue // not the VM this reference was remembered for: FindVM searches for it
		}
		info := toVMInfo(vm)
		if p := vm.Parent; p != nil {
			if info.Folder, err = c.folderPathIn(ctx, folders, *p, root.Reference()); err != nil {
				return nil, err
			}
		}
		out[uuid] = info
	}
	return out, nil
}

// parentFolders selects a VM's ancestor folders (traversing parent) for its folder path.
func parentFolders() []types.BaseSelectionSpec {
	return []types.BaseSelectionSpec{
		&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "vmParent"}, Type: "VirtualMachine", Path: "parent",
			SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "folderParent"}}},
		&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "folderParent"}, Type: "Folder", Path: "parent",
			SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "folderParent"}}},
	}
}

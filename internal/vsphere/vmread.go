package vsphere

import (
	"context"
	"strings"
	"sync"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// maxKnownRefs bounds the remembered VM references of one datacenter; past it the memory starts over
// (each forgotten VM costs one FindByUuid again, nothing else).
const maxKnownRefs = 20000

// vmRefs remembers, per datacenter of a session, the reference of each VM this session created or found
// by instance UUID. vCenter never gives a reference to another object, so a remembered one is either
// still that VM or gone: readers compare the instance UUID they read back and look the VM up again
// (FindByUuid) when it differs or the object is gone. A VM look-up then costs one property retrieval
// instead of a search-index call plus a retrieval.
type vmRefs struct {
	mu sync.Mutex
	m  map[string]types.ManagedObjectReference
}

func (r *vmRefs) get(uuid string) (types.ManagedObjectReference, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, ok := r.m[strings.ToLower(uuid)]
	return ref, ok
}

func (r *vmRefs) put(uuid string, ref types.ManagedObjectReference) {
	if uuid == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxKnownRefs {
		r.m = map[string]types.ManagedObjectReference{}
	}
	r.m[strings.ToLower(uuid)] = ref
}

func (r *vmRefs) drop(uuid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, strings.ToLower(uuid))
}

// vmRead is what one property retrieval of a VM returns besides props (which always include
// config.instanceUuid): its ancestor folders, its recent tasks, or one given task.
type vmRead struct {
	props   []string
	folders bool
	recent  bool
	task    *types.ManagedObjectReference
}

// vmReadResult holds the retrieved objects; vm is nil when the VM was not among them.
type vmReadResult struct {
	vm      *mo.VirtualMachine
	folders map[types.ManagedObjectReference]mo.Folder
	tasks   map[types.ManagedObjectReference]mo.Task
}

// retrieveVM reads the VM ref and what r asks for in one RetrieveProperties: the ancestor folders (by
// traversing parent) for the VM's folder path, the recent tasks (by traversing recentTask) to find a
// running reconfigure, and a given task's info. The task is listed first so that a VM read after it
// does not predate the task's end. Objects that vanished meanwhile are left out of the result.
func (c *client) retrieveVM(ctx context.Context, ref types.ManagedObjectReference, r vmRead) (*vmReadResult, error) {
	vmSpec := types.ObjectSpec{Obj: ref}
	propSet := []types.PropertySpec{{Type: "VirtualMachine", PathSet: withInstanceUUID(r.props)}}
	if r.folders {
		vmSpec.SelectSet = append(vmSpec.SelectSet, parentFolders()...)
		propSet = append(propSet, types.PropertySpec{Type: "Folder", PathSet: []string{"name", "parent"}})
	}
	if r.recent {
		vmSpec.SelectSet = append(vmSpec.SelectSet,
			&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "vmTasks"}, Type: "VirtualMachine", Path: "recentTask"})
	}
	var objects []types.ObjectSpec
	if r.task != nil {
		objects = append(objects, types.ObjectSpec{Obj: *r.task})
	}
	if r.recent || r.task != nil {
		propSet = append(propSet, types.PropertySpec{Type: "Task", PathSet: []string{"info"}})
	}
	objects = append(objects, vmSpec)
	yes := true
	spec := types.PropertyFilterSpec{ObjectSet: objects, PropSet: propSet, ReportMissingObjectsInResults: &yes}
	req := types.RetrieveProperties{SpecSet: []types.PropertyFilterSpec{spec}}
	res, err := c.pc().RetrieveProperties(ctx, req)
	if err == nil && sessionLost(res.Returnval) {
		// A property retrieval on a session vCenter forgot may answer with per-object NotAuthenticated
		// faults instead of a SOAP fault (the simulator does), which the re-login transport never sees.
		c.renewSession(ctx)
		res, err = c.pc().RetrieveProperties(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	out := &vmReadResult{folders: map[types.ManagedObjectReference]mo.Folder{}, tasks: map[types.ManagedObjectReference]mo.Task{}}
	for _, oc := range res.Returnval {
		if missing(oc) {
			continue
		}
		content := []types.ObjectContent{oc}
		switch {
		case oc.Obj == ref:
			out.vm = new(mo.VirtualMachine)
			err = mo.LoadObjectContent(content, out.vm)
		case oc.Obj.Type == "Task":
			var t mo.Task
			if err = mo.LoadObjectContent(content, &t); err == nil {
				out.tasks[oc.Obj] = t
			}
		case oc.Obj.Type == "Folder":
			var f mo.Folder
			if err = mo.LoadObjectContent(content, &f); err == nil {
				out.folders[oc.Obj] = f
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sessionLost reports object contents whose properties were refused because the session is not
// authenticated.
func sessionLost(contents []types.ObjectContent) bool {
	for _, oc := range contents {
		for _, m := range oc.MissingSet {
			if _, ok := m.Fault.Fault.(*types.NotAuthenticated); ok {
				return true
			}
		}
	}
	return false
}

// missing reports an object content that only says its object is gone (reportMissingObjectsInResults).
func missing(oc types.ObjectContent) bool {
	for _, m := range oc.MissingSet {
		if m.Path == "" {
			return true
		}
		if _, ok := m.Fault.Fault.(*types.ManagedObjectNotFound); ok {
			return true
		}
	}
	return false
}

func withInstanceUUID(props []string) []string {
	for _, p := range props {
		if p == "config.instanceUuid" {
			return props
		}
	}
	return append(append([]string(nil), props...), "config.instanceUuid")
}

// vmByUUID finds the VM whose instance UUID is uuid in the datacenter and reads it as r asks, in one
// retrieval when the session knows its reference (else a FindByUuid first). nil when there is none.
func (c *client) vmByUUID(ctx context.Context, d *dcCache, uuid string, r vmRead) (*types.ManagedObjectReference, *vmReadResult, error) {
	if uuid == "" {
		return nil, nil, nil
	}
	if ref, ok := d.refs.get(uuid); ok {
		res, err := c.retrieveVM(ctx, ref, r)
		if err != nil && !IsNotFound(classify("", err)) {
			return nil, nil, err
		}
		if err == nil && res.vm != nil && res.vm.Config != nil && strings.EqualFold(res.vm.Config.InstanceUuid, uuid) {
			return &ref, res, nil
		}
		// Gone, re-registered under another reference, or its instance UUID changed: search again.
		d.refs.drop(uuid)
	}
	ref, err := c.findRef(ctx, d, uuid, true)
	if err != nil || ref == nil {
		return nil, nil, err
	}
	res, err := c.retrieveVM(ctx, *ref, r)
	if err != nil {
		return nil, nil, err
	}
	if res.vm == nil {
		return nil, nil, nil // removed between the search and the read
	}
	return ref, res, nil
}

// folderPathIn is the path of the VM folder parent below the datacenter's VM folder root, walked
// through folders already read (retrieveVM with folders); a folder missing from them is read.
func (c *client) folderPathIn(ctx context.Context, folders map[types.ManagedObjectReference]mo.Folder, parent, root types.ManagedObjectReference) (string, error) {
	var parts []string
	ref := parent
	for depth := 0; depth < 64 && ref != root; depth++ {
		f, ok := folders[ref]
		if !ok {
			rest, err := c.folderPath(ctx, ref, root)
			if err != nil {
				return "", err
			}
			return joinPath(rest, parts), nil
		}
		parts = append([]string{f.Name}, parts...)
		if f.Parent == nil || f.Parent.Type != "Folder" {
			return "/" + strings.Join(parts, "/"), nil
		}
		ref = *f.Parent
	}
	return strings.Join(parts, "/"), nil
}

// joinPath appends parts below prefix ("a" + [b c] = "a/b/c").
func joinPath(prefix string, parts []string) string {
	if len(parts) == 0 {
		return prefix
	}
	if prefix == "" {
		return strings.Join(parts, "/")
	}
	return prefix + "/" + strings.Join(parts, "/")
}

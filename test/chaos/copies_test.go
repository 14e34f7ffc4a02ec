package chaos

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/google/uuid"
	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Copies of a pool VM and a foreign VM with the pool's marker (issue 38): what backup, DR and template
// workflows leave in a real vCenter. Every run makes them once its pool has a VM, with vCenter's own
// CloneVM_Task: a powered-off clone in the pool's folder, a powered-off replica in another folder, a
// template (MarkAsTemplate) in the pool's folder, and a foreign VM in the other folder whose marker names
// an owner no VsphereAgent has. A real vCenter's clone keeps the source's extraConfig (the marker), with a
// new instance UUID; where the simulator's clone lacks it, the source's marker keys are written with
// ReconfigVM, so each copy looks as it would on a real vCenter. None of them may ever be destroyed,
// reconfigured (an ISO ejection is a reconfigure) or powered on: checked at the simulator's
// Destroy_Task and ReconfigVM_Task (moments.onVMCall), and their state (power, changeVersion) once the
// run settled.

// copyVM is one copy the run made.
type copyVM struct {
	kind, name, ref, instanceUUID string
	// state is power state and config.changeVersion once the copy was made.
	state string
}

// copyKinds name the copies in the order makeCopies makes them.
const (
	copyClone    = "clone in the pool's folder"
	copyReplica  = "powered-off replica in another folder"
	copyTemplate = "template in the pool's folder"
	copyForeign  = "foreign VM with an unknown owner's marker"
)

// backupFolder is the run's folder outside the pool's (setup creates it before the operator could walk it).
func backupFolder(ns string) string { return "chaos/" + ns + "-backup" }

// makeCopies makes the run's copies of one of the pool's VMs (once per run; an error is a setup failure).
func (r *run) makeCopies(source vsphere.VMInfo) error {
	r.copiesMu.Lock()
	made := r.copies != nil
	if !made {
		r.copies = []copyVM{}
	}
	r.copiesMu.Unlock()
	if made {
		return nil
	}
	ctx := r.ctx
	c, err := r.c.h.VC.Login(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = c.Logout(context.Background()) }()
	finder := find.NewFinder(c.Client, false)
	dc, err := finder.Datacenter(ctx, vcsim.Datacenter)
	if err != nil {
		return err
	}
	finder.SetDatacenter(dc)
	src, err := findVM(ctx, c, dc, source.InstanceUUID)
	if err != nil {
		return fmt.Errorf("finding the source VM %s: %w", source.Name, err)
	}
	marker, err := markerOf(ctx, c, src.Reference())
	if err != nil {
		return err
	}
	poolFolder, err := finder.Folder(ctx, path.Join(dc.InventoryPath, "vm", "chaos", r.s.Namespace))
	if err != nil {
		return err
	}
	otherFolder, err := finder.Folder(ctx, path.Join(dc.InventoryPath, "vm", backupFolder(r.s.Namespace)))
	if err != nil {
		return err
	}
	unknown := append([]types.BaseOptionValue(nil), marker...)
	for i, o := range unknown {
		ov := *o.GetOptionValue()
		switch ov.Key {
		case vsphere.ExtraConfigOwnerUID:
			ov.Value = uuid.NewString()
		case vsphere.ExtraConfigOwner:
			ov.Value = r.s.Namespace + "/someone-else"
		}
		unknown[i] = &ov
	}
	for _, want := range []struct {
		kind     string
		folder   *object.Folder
		marker   []types.BaseOptionValue
		template bool
	}{
		{copyClone, poolFolder, marker, false},
		{copyReplica, otherFolder, marker, false},
		{copyTemplate, poolFolder, marker, true},
		{copyForeign, otherFolder, unknown, false},
	} {
		name := fmt.Sprintf("copy-%d-%s", len(r.copies), r.s.Namespace)
		cp, err := r.cloneOf(ctx, c, src, want.folder, name, want.marker, want.template)
		if err != nil {
			return fmt.Errorf("making the %s: %w", want.kind, err)
		}
		cp.kind = want.kind
		r.copiesMu.Lock()
		r.copies = append(r.copies, *cp)
		r.copiesMu.Unlock()
	}
	r.note("made %d copies of VM %s (clone, replica, template, foreign marker) with CloneVM_Task", len(r.copies), source.Name)
	return nil
}

func findVM(ctx context.Context, c *govmomi.Client, dc *object.Datacenter, instanceUUID string) (*object.VirtualMachine, error) {
	ref, err := object.NewSearchIndex(c.Client).FindByUuid(ctx, dc, instanceUUID, true, types.NewBool(true))
	if err != nil {
		return nil, err
	}
	if ref == nil {
		return nil, fmt.Errorf("no VM with instance UUID %s", instanceUUID)
	}
	return object.NewVirtualMachine(c.Client, ref.Reference()), nil
}

// markerOf returns the VM's marker keys of extraConfig.
func markerOf(ctx context.Context, c *govmomi.Client, ref types.ManagedObjectReference) ([]types.BaseOptionValue, error) {
	var m mo.VirtualMachine
	if err := property.DefaultCollector(c.Client).RetrieveOne(ctx, ref, []string{"config.extraConfig"}, &m); err != nil {
		return nil, err
	}
	var out []types.BaseOptionValue
	if m.Config == nil {
		return nil, fmt.Errorf("VM %s has no config", ref.Value)
	}
	for _, o := range m.Config.ExtraConfig {
		if ov := o.GetOptionValue(); ov != nil && isMarkerKey(ov.Key) {
			out = append(out, &types.OptionValue{Key: ov.Key, Value: ov.Value})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("VM %s carries no marker", ref.Value)
	}
	return out, nil
}

func isMarkerKey(k string) bool {
	switch k {
	case vsphere.ExtraConfigOwnerUID, vsphere.ExtraConfigOwner, vsphere.ExtraConfigPoolUID, vsphere.ExtraConfigPool:
		return true
	}
	return false
}

// cloneOf clones src into folder, powered off, gives the clone marker where the clone's extraConfig does
// not already carry it as wanted (the simulator's clone drops extraConfig; a real vCenter's keeps it),
// marks it a template when asked, and returns it with its state.
func (r *run) cloneOf(ctx context.Context, c *govmomi.Client, src *object.VirtualMachine, folder *object.Folder, name string,
	marker []types.BaseOptionValue, template bool) (*copyVM, error) {
	task, err := src.Clone(ctx, folder, name, types.VirtualMachineCloneSpec{PowerOn: false, Template: false})
	if err != nil {
		return nil, err
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		return nil, err
	}
	ref, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return nil, fmt.Errorf("CloneVM_Task returned %T", info.Result)
	}
	vm := object.NewVirtualMachine(c.Client, ref)
	have, _ := markerOf(ctx, c, ref)
	if !sameMarker(have, marker) {
		t, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{ExtraConfig: marker})
		if err == nil {
			err = t.Wait(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("writing the marker on %s: %w", name, err)
		}
	}
	if template {
		if err := vm.MarkAsTemplate(ctx); err != nil {
			return nil, err
		}
	}
	cp := &copyVM{name: name, ref: ref.Value}
	if cp.instanceUUID, cp.state, err = copyState(ctx, c, ref); err != nil {
		return nil, err
	}
	return cp, nil
}

func sameMarker(have, want []types.BaseOptionValue) bool {
	values := map[string]any{}
	for _, o := range have {
		values[o.GetOptionValue().Key] = o.GetOptionValue().Value
	}
	for _, o := range want {
		if values[o.GetOptionValue().Key] != o.GetOptionValue().Value {
			return false
		}
	}
	return true
}

// copyState reads what must not change on a copy: power state, template flag and config.changeVersion
// (every reconfigure, an ejection too, moves it).
func copyState(ctx context.Context, c *govmomi.Client, ref types.ManagedObjectReference) (string, string, error) {
	var m mo.VirtualMachine
	if err := property.DefaultCollector(c.Client).RetrieveOne(ctx, ref, []string{"config.instanceUuid", "config.changeVersion", "config.template", "runtime.powerState"}, &m); err != nil {
		return "", "", err
	}
	if m.Config == nil {
		return "", "", fmt.Errorf("VM %s has no config", ref.Value)
	}
	return m.Config.InstanceUuid, fmt.Sprintf("power %s, template %t, change %s", m.Runtime.PowerState, m.Config.Template, m.Config.ChangeVersion), nil
}

// isCopy reports whether the simulator VM (by managed object reference or instance UUID) is one of the
// run's copies, and which.
func (r *run) isCopy(ref, instanceUUID string) (copyVM, bool) {
	r.copiesMu.Lock()
	defer r.copiesMu.Unlock()
	for _, cp := range r.copies {
		if (ref != "" && cp.ref == ref) || (instanceUUID != "" && strings.EqualFold(cp.instanceUUID, instanceUUID)) {
			return cp, true
		}
	}
	return copyVM{}, false
}

// checkCopyCall runs at the simulator's Destroy_Task and ReconfigVM_Task: a copy never receives either,
// and the operator destroys only a VM whose identity proves it made it (instance UUID = owner UID).
func (r *run) checkCopyCall(call vcsim.VMCall) {
	if cp, ok := r.isCopy(call.Ref, call.InstanceUUID); ok {
		r.momentViolation("copy %s (%s) received %s", cp.name, cp.kind, call.Method)
		return
	}
	if call.Method == vcsim.MethodDestroyVM && call.OwnerUID != "" && !strings.EqualFold(call.OwnerUID, call.InstanceUUID) {
		r.momentViolation("VM %s received Destroy_Task: its marker names owner %s but its instance UUID is %s (a copy, not the VM we created)",
			call.Name, call.OwnerUID, call.InstanceUUID)
	}
}

// checkCopies: once the run settled, every copy still exists unchanged (counted in the campaign's line).
func (r *run) checkCopies() {
	if len(r.copies) == 0 {
		return
	}
	c, err := r.c.h.VC.Login(r.ctx)
	if err != nil {
		r.violate("checking the copies: %v", err)
		return
	}
	defer func() { _ = c.Logout(context.Background()) }()
	for _, cp := range r.copies {
		r.copiesChecked++
		_, state, err := copyState(r.ctx, c, types.ManagedObjectReference{Type: "VirtualMachine", Value: cp.ref})
		switch {
		case err != nil:
			r.violate("copy %s (%s) is gone or cannot be read (destroyed?): %v", cp.name, cp.kind, err)
		case state != cp.state:
			r.violate("copy %s (%s) was touched: %s -> %s", cp.name, cp.kind, cp.state, state)
		}
	}
}

// destroyCopies removes the run's copies with the admin session (cleanup, after the checks).
func (r *run) destroyCopies(ctx context.Context) {
	if len(r.copies) == 0 {
		return
	}
	c, err := r.c.h.VC.Login(ctx)
	if err != nil {
		return
	}
	defer func() { _ = c.Logout(context.Background()) }()
	for _, cp := range r.copies {
		if t, err := object.NewVirtualMachine(c.Client, types.ManagedObjectReference{Type: "VirtualMachine", Value: cp.ref}).Destroy(ctx); err == nil {
			_ = t.Wait(ctx)
		}
	}
}

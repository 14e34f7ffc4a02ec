package vsphere

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
)

// CreateVM finds the VM whose instance UUID is the owner UID (a retry after a crash) or creates it, then
// powers it on, makes it boot its disk first (bootorder.go) and reads its identity back. Every step is
// idempotent, so a failure at any point is retried by calling CreateVM again and never yields a second VM.
func (c *client) CreateVM(ctx context.Context, spec VMSpec) (*VMInfo, error) {
	info, err := c.createVM(ctx, spec)
	return info, observe("create", err)
}

func (c *client) createVM(ctx context.Context, spec VMSpec) (*VMInfo, error) {
	if err := validateSpec(spec); err != nil {
		return nil, err
	}
	if err := validateHardware(spec); err != nil {
		return nil, err
	}
	d, err := c.datacenter(ctx, spec.Datacenter)
	if err != nil {
		return nil, err
	}
	var ref *types.ManagedObjectReference
	if !spec.New {
		if ref, err = c.findRef(ctx, d, spec.Ownership.OwnerUID, true); err != nil {
			return nil, err
		}
	}
	if ref != nil {
		return c.adoptExisting(ctx, spec, *ref)
	}
	var policyID string
	ref, policyID, err = c.createFromScratch(ctx, d, spec)
	if err != nil {
		if ClassOf(classify("", err)) == ClassNotFound {
			c.forget(spec.Datacenter) // a cached folder/pool/datastore vanished; resolve again next time
		}
		return nil, err
	}
	d.refs.put(spec.Ownership.OwnerUID, *ref) // the task's result: later look-ups skip the search
	c.log.Info("created VM", "vm", spec.Name, "instanceUUID", spec.Ownership.OwnerUID)
	joinErr := c.joinBeforePowerOn(ctx, spec, *ref) // DRS places the VM at power-on: join first
	info, err := c.powerOnAndRead(ctx, *ref)
	if info != nil {
		info.StoragePolicyID = policyID
		setJoined(info, spec, joinErr)
	}
	return info, err
}

// adoptExisting continues with a VM found by instance UUID: ours only when the marker matches.
func (c *client) adoptExisting(ctx context.Context, spec VMSpec, ref types.ManagedObjectReference) (*VMInfo, error) {
	vm, err := c.readVM(ctx, ref)
	if err != nil {
		return nil, err
	}
	info := toVMInfo(vm)
	if err := verifyIdentity("CreateVM", vm, spec.Ownership); err != nil {
		return nil, err
	}
	// ... or before the VM joined its cluster module (joining again is success).
	joinErr := c.joinBeforePowerOn(ctx, spec, ref)
	c.log.Info("found the VM of an earlier attempt; adopting it", "vm", info.Name, "instanceUUID", spec.Ownership.OwnerUID)
	// The earlier attempt may have stopped between the create task and the tags (attaching is idempotent).
	if err := c.attachTags(ctx, ref, spec.Tags); err != nil {
		return nil, err
	}
	if !info.PoweredOn {
		if info, err = c.powerOnAndRead(ctx, ref); err != nil {
			return nil, err
		}
	} else {
		// ... or between the power-on and the boot order.
		if info.DiskFirstBoot, err = c.ensureDiskFirstBoot(ctx, ref, vm, true); err != nil {
			return nil, err
		}
	}
	info.Adopted = true
	setJoined(info, spec, joinErr)
	// The earlier attempt's policy ID is not on the VM's properties: resolve the name again for the caller.
	if info.StoragePolicyID, err = c.storagePolicyID(ctx, spec.Hardware.StoragePolicyName); err != nil {
		return nil, err
	}
	return info, nil
}

// powerOnAndRead powers on (already on is success), reads identity in the same retrieval that sees the
// power-on task done, and starts the reconfigure that makes the VM boot its disk first (not waited for:
// see bootorder.go; DiskFirstBoot stays false until a read sees the order).
func (c *client) powerOnAndRead(ctx context.Context, ref types.ManagedObjectReference) (*VMInfo, error) {
	t, err := object.NewVirtualMachine(c.vim, ref).PowerOn(ctx)
	var vm *mo.VirtualMachine
	if err == nil {
		_, vm, err = c.waitTaskReadingVM(ctx, "PowerOn", t.Reference(), &ref)
	}
	if err != nil && !isFault(err, &types.InvalidPowerState{}) {
		return nil, err
	}
	if vm == nil {
		if vm, err = c.readVM(ctx, ref); err != nil {
			return nil, err
		}
	}
	diskFirst, err := c.ensureDiskFirstBoot(ctx, ref, vm, false)
	if err != nil {
		return nil, err
	}
	info := toVMInfo(vm)
	info.PoweredOn = true // the task succeeded (or the VM was already on); the read may predate its end
	info.DiskFirstBoot = diskFirst
	return info, nil
}

func validateSpec(spec VMSpec) error {
	switch {
	case spec.Ownership.OwnerUID == "":
		return NewError(ClassInvalid, "CreateVM", "ownership owner UID is required")
	case spec.Name == "":
		return NewError(ClassInvalid, "CreateVM", "VM name is required")
	case spec.DatastoreCluster == "":
		return NewError(ClassInvalid, "CreateVM", "datastore or datastore cluster is required")
	case spec.Network == "":
		return NewError(ClassInvalid, "CreateVM", "network is required")
	case len(spec.AdditionalNICs) > 9:
		return NewError(ClassInvalid, "CreateVM", "a VM has at most 10 NICs, not %d", 1+len(spec.AdditionalNICs))
	case spec.NumCPUs <= 0 || spec.MemoryMiB <= 0 || spec.DiskGiB <= 0:
		return NewError(ClassInvalid, "CreateVM", "CPUs, memory and disk must be positive")
	}
	return nil
}

// createFromScratch builds the config spec, places it and runs CreateVM_Task; the task result is the VM.
func (c *client) createFromScratch(ctx context.Context, d *dcCache, spec VMSpec) (*types.ManagedObjectReference, string, error) {
	folder, err := d.folder(ctx, spec.Folder)
	if err != nil {
		return nil, "", err
	}
	pool, err := d.pool(ctx, spec.ResourcePool)
	if err != nil {
		return nil, "", err
	}
	backing, err := d.network(ctx, spec.Network)
	if err != nil {
		return nil, "", err
	}
	backings := []types.BaseVirtualDeviceBackingInfo{backing}
	for _, n := range spec.AdditionalNICs {
		b, err := d.network(ctx, n.Network)
		if err != nil {
			return nil, "", err
		}
		backings = append(backings, b)
	}
	storage, err := d.storageFor(ctx, spec.DatastoreCluster)
	if err != nil {
		return nil, "", err
	}
	policyID, err := c.storagePolicyID(ctx, spec.Hardware.StoragePolicyName)
	if err != nil {
		return nil, "", err
	}
	cfg, disks, err := configSpec(spec, backings, policyID)
	if err != nil {
		return nil, "", err
	}
	// Data disks naming a datastore go there; the others follow the boot disk.
	pinned := map[*types.VirtualDisk]*object.Datastore{}
	var follow []*types.VirtualDisk
	for i, disk := range disks {
		if i == 0 || spec.Hardware.DataDisks[i-1].Datastore == "" {
			follow = append(follow, disk)
			continue
		}
		if pinned[disk], err = d.datastore(ctx, spec.Hardware.DataDisks[i-1].Datastore); err != nil {
			return nil, "", err
		}
	}
	ds := storage.ds
	if storage.pod != nil {
		if ds, err = c.recommendDatastore(ctx, d, storage.pod, pool, &cfg, follow); err != nil {
			return nil, "", err
		}
	}
	for _, disk := range follow {
		pinned[disk] = ds
	}
	for disk, target := range pinned {
		ref := target.Reference()
		b := disk.Backing.(*types.VirtualDiskFlatVer2BackingInfo)
		b.Datastore = &ref
		if target != ds {
			b.FileName = fmt.Sprintf("[%s]", target.Name())
		}
	}
	cfg.Files = &types.VirtualMachineFileInfo{VmPathName: fmt.Sprintf("[%s]", ds.Name())}

	t, err := folder.CreateVM(ctx, cfg, pool, nil)
	if err != nil {
		return nil, "", createError(err)
	}
	if err := crashpoint.Hit(ctx, crashpoint.VMCreateTaskStarted); err != nil {
		return nil, "", err
	}
	info, err := c.waitTaskOf(ctx, "CreateVM", t.Reference())
	if err != nil {
		return nil, "", createError(err)
	}
	if err := crashpoint.Hit(ctx, crashpoint.VMCreated); err != nil {
		return nil, "", err
	}
	ref, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return nil, "", NewError(ClassFault, "CreateVM", "CreateVM task returned no VM")
	}
	if err := c.attachTags(ctx, ref, spec.Tags); err != nil {
		// The VM exists and carries our marker; a retry finds it by instance UUID and tags it again.
		return nil, "", err
	}
	return &ref, policyID, nil
}

// createError: vCenter refuses a name already taken in the folder (DuplicateName, from the call or the
// task). The VM of that name is not ours (ours would have been found by instance UUID before creating):
// it is never touched, and the name is never retried (ClassDuplicateName is permanent).
func createError(err error) error {
	if isFault(err, &types.DuplicateName{}) {
		return &Error{Class: ClassDuplicateName, FaultType: "DuplicateName", Op: "CreateVM",
			Err: fmt.Errorf("another VM (not carrying our instance UUID) already has this name in the folder: %w", err)}
	}
	return err
}

// recommendDatastore asks Storage DRS where the new VM's disk goes and applies the first recommendation
// by pinning the disk (and VM files) to its destination datastore, as initial placement does.
func (c *client) recommendDatastore(ctx context.Context, d *dcCache, pod *object.StoragePod, pool *object.ResourcePool,
	cfg *types.VirtualMachineConfigSpec, disks []*types.VirtualDisk) (*object.Datastore, error) {
	podRef := pod.Reference()
	poolRef := pool.Reference()
	locators := make([]types.PodDiskLocator, 0, len(disks))
	for _, disk := range disks {
		locators = append(locators, types.PodDiskLocator{DiskId: disk.Key, DiskBackingInfo: disk.Backing})
	}
	sps := types.StoragePlacementSpec{
		Type:         string(types.StoragePlacementSpecPlacementTypeCreate),
		ResourcePool: &poolRef,
		ConfigSpec:   cfg,
		PodSelectionSpec: types.StorageDrsPodSelectionSpec{
			StoragePod: &podRef,
			InitialVmConfig: []types.VmPodConfigForPlacement{{
				StoragePod: podRef,
				Disk:       locators,
			}},
		},
	}
	res, err := object.NewStorageResourceManager(c.vim).RecommendDatastores(ctx, sps)
	if err != nil {
		return nil, err
	}
	for _, rec := range res.Recommendations {
		for _, a := range rec.Action {
			if p, ok := a.(*types.StoragePlacementAction); ok {
				return d.datastoreByRef(ctx, c, p.Destination)
			}
		}
	}
	return nil, NewError(ClassFault, "CreateVM", "Storage DRS gave no placement for datastore cluster %q", pod.Name())
}

// joinBeforePowerOn adds the new VM to spec.ClusterModule (none: nothing). Its error is reported on the
// VMInfo, never returned: the VM is created and powered on without anti-affinity rather than not at all.
func (c *client) joinBeforePowerOn(ctx context.Context, spec VMSpec, ref types.ManagedObjectReference) error {
	if spec.ClusterModule == "" {
		return nil
	}
	return observe("cluster_module_join", c.joinModule(ctx, spec.ClusterModule, ref))
}

// setJoined records on info whether the VM joined spec.ClusterModule.
func setJoined(info *VMInfo, spec VMSpec, joinErr error) {
	if spec.ClusterModule == "" {
		return
	}
	if joinErr != nil {
		info.ClusterModuleErr = joinErr
		return
	}
	info.ClusterModule = spec.ClusterModule
}

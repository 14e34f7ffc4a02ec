package vsphere

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// PrivilegeSpec is what a pool's VMs are placed on plus the optional features that need privileges of
// their own.
type PrivilegeSpec struct {
	PlacementSpec
	// EjectAfterInstall: the VMs' CD-ROM is disconnected and ejected and the lock question answered.
	EjectAfterInstall bool
	// RecoverDiscoveryBoot: a worker that booted discovery again has its ISO ejected (as above) and is reset.
	RecoverDiscoveryBoot bool
	// PCIDevices: the VMs get PCI passthrough or vGPU devices (VirtualMachine.Config.AddRemoveDevice, as
	// every VM) and so a memory reservation of all their memory (VirtualMachine.Config.Resource).
	PCIDevices bool
	// AntiAffinity: the pool keeps cluster modules in the compute cluster owning the resource pool.
	AntiAffinity bool
}

// Entities whose privileges CheckPrivileges checks (MissingPrivileges.Kind).
const (
	// PrivilegeFolder is the VM folder, or its nearest existing ancestor when the folder is created with
	// the first VM (the VMs inherit the folder's permissions).
	PrivilegeFolder       = "Folder"
	PrivilegeResourcePool = "ResourcePool"
	// PrivilegeDatastore is the VM datastore, or each datastore of the datastore cluster.
	PrivilegeDatastore    = "Datastore"
	PrivilegeISODatastore = "ISODatastore"
	PrivilegeNetwork      = "Network"
	// PrivilegeCluster is the compute cluster owning the resource pool (anti-affinity's cluster modules).
	PrivilegeCluster = "Cluster"
)

// Privilege IDs the operator needs (docs/vcenter-privileges.md maps each to the calls that need it).
const (
	PrivFolderCreate        = "Folder.Create"
	PrivVMCreate            = "VirtualMachine.Inventory.Create"
	PrivVMDelete            = "VirtualMachine.Inventory.Delete"
	PrivVMAddNewDisk        = "VirtualMachine.Config.AddNewDisk"
	PrivVMAddRemoveDevice   = "VirtualMachine.Config.AddRemoveDevice"
	PrivVMAdvancedConfig    = "VirtualMachine.Config.AdvancedConfig"
	PrivVMCPUCount          = "VirtualMachine.Config.CPUCount"
	PrivVMMemory            = "VirtualMachine.Config.Memory"
	PrivVMSettings          = "VirtualMachine.Config.Settings"
	PrivVMResource          = "VirtualMachine.Config.Resource"
	PrivVMPowerOn           = "VirtualMachine.Interact.PowerOn"
	PrivVMPowerOff          = "VirtualMachine.Interact.PowerOff"
	PrivVMSetCDMedia        = "VirtualMachine.Interact.SetCDMedia"
	PrivVMDeviceConnection  = "VirtualMachine.Interact.DeviceConnection"
	PrivVMAnswerQuestion    = "VirtualMachine.Interact.AnswerQuestion"
	PrivVMReset             = "VirtualMachine.Interact.Reset"
	PrivAssignVMToPool      = "Resource.AssignVMToPool"
	PrivDatastoreAllocate   = "Datastore.AllocateSpace"
	PrivDatastoreBrowse     = "Datastore.Browse"
	PrivDatastoreFileMgmt   = "Datastore.FileManagement"
	PrivNetworkAssign       = "Network.Assign"
	PrivTagObjectAttachable = "InventoryService.Tagging.ObjectAttachable"
	PrivTagAttachTag        = "InventoryService.Tagging.AttachTag"
	// PrivClusterEdit ("Modify cluster") on the compute cluster for its cluster modules: VMware publishes
	// no privilege for the cluster-modules API, so the operator asks for the cluster-configuration
	// privilege a DRS rule needs (docs/vcenter-privileges.md).
	PrivClusterEdit = "Host.Inventory.EditCluster"
)

const (
	privilegeCheckOp          = "privileges"             // metric op of CheckPrivileges
	privilegeCheckFaultPrefix = "HasPrivilegeOnEntities" // Op of its errors
)

// RequiredPrivileges returns the privilege IDs the operator needs on each entity kind for spec, in the
// order the calls need them. createFolder says the VM folder does not exist yet (Folder.Create on its
// nearest existing ancestor). InventoryService.Tagging.AttachTag is needed on the tags themselves, which
// are not inventory entities: vCenter cannot be asked about it here, and it is not listed.
func RequiredPrivileges(spec PrivilegeSpec, createFolder bool) map[string][]string {
	folder := []string{PrivVMCreate, PrivVMDelete, PrivVMAddNewDisk, PrivVMAddRemoveDevice, PrivVMAdvancedConfig,
		PrivVMCPUCount, PrivVMMemory, PrivVMSettings, PrivVMPowerOn, PrivVMPowerOff}
	if spec.EjectAfterInstall || spec.RecoverDiscoveryBoot {
		folder = append(folder, PrivVMSetCDMedia, PrivVMDeviceConnection, PrivVMAnswerQuestion)
	}
	if spec.RecoverDiscoveryBoot {
		folder = append(folder, PrivVMReset)
	}
	if spec.PCIDevices {
		folder = append(folder, PrivVMResource)
	}
	if len(spec.Tags) > 0 {
		folder = append(folder, PrivTagObjectAttachable)
	}
	if createFolder {
		folder = append([]string{PrivFolderCreate}, folder...)
	}
	need := map[string][]string{
		PrivilegeFolder:       folder,
		PrivilegeResourcePool: {PrivAssignVMToPool},
		PrivilegeDatastore:    {PrivDatastoreAllocate},
		PrivilegeISODatastore: {PrivDatastoreBrowse, PrivDatastoreFileMgmt},
		PrivilegeNetwork:      {PrivNetworkAssign},
	}
	if spec.AntiAffinity {
		need[PrivilegeCluster] = []string{PrivClusterEdit}
	}
	return need
}

// MissingPrivileges is one entity on which the session lacks privileges.
type MissingPrivileges struct {
	// Kind is Folder, ResourcePool, Datastore, ISODatastore or Network.
	Kind string
	// Name is the entity's inventory path (or name).
	Name string
	// Privileges are the missing privilege IDs, in RequiredPrivileges order.
	Privileges []string
}

// privilegeTarget is one entity to ask about and what is needed on it.
type privilegeTarget struct {
	kind, name string
	ref        types.ManagedObjectReference
	privs      []string
}

// CheckPrivileges asks vCenter (AuthorizationManager.HasPrivilegeOnEntities for the session's own key,
// read-only, one call) whether the session holds RequiredPrivileges on the entities of spec, and lists
// the entities with missing privileges. The placement must resolve (CheckPlacement); an error means
// vCenter could not be asked (or the placement no longer resolves).
func (c *client) CheckPrivileges(ctx context.Context, spec PrivilegeSpec) ([]MissingPrivileges, error) {
	missing, err := c.checkPrivileges(ctx, spec)
	return missing, observe(privilegeCheckOp, err)
}

func (c *client) checkPrivileges(ctx context.Context, spec PrivilegeSpec) ([]MissingPrivileges, error) {
	targets, err := c.privilegeTargets(ctx, spec)
	if err != nil {
		return nil, err
	}
	us, err := c.sessions.UserSession(ctx)
	if err != nil {
		return nil, classify(privilegeCheckFaultPrefix, err)
	}
	if us == nil {
		return nil, NewError(ClassAuth, privilegeCheckFaultPrefix, "no current session")
	}
	refs := make([]types.ManagedObjectReference, 0, len(targets))
	var ids []string
	for _, t := range targets {
		if !slices.Contains(refs, t.ref) {
			refs = append(refs, t.ref)
		}
		for _, p := range t.privs {
			if !slices.Contains(ids, p) {
				ids = append(ids, p)
			}
		}
	}
	res, err := methods.HasPrivilegeOnEntities(ctx, c.vim, &types.HasPrivilegeOnEntities{
		This: *c.vim.ServiceContent.AuthorizationManager, Entity: refs, SessionId: us.Key, PrivId: ids})
	if err != nil {
		return nil, classify(privilegeCheckFaultPrefix, err)
	}
	return missingPrivileges(targets, res.Returnval), nil
}

// missingPrivileges compares what each target needs with what vCenter answered; a privilege vCenter
// did not answer about counts as missing. Targets on one entity are merged (in the first one's kind).
func missingPrivileges(targets []privilegeTarget, answers []types.EntityPrivilege) []MissingPrivileges {
	granted := map[types.ManagedObjectReference]map[string]bool{}
	for _, a := range answers {
		if granted[a.Entity] == nil {
			granted[a.Entity] = map[string]bool{}
		}
		for _, p := range a.PrivAvailability {
			granted[a.Entity][p.PrivId] = p.IsGranted
		}
	}
	var out []MissingPrivileges
	index := map[types.ManagedObjectReference]int{}
	for _, t := range targets {
		var lacking []string
		for _, p := range t.privs {
			if !granted[t.ref][p] {
				lacking = append(lacking, p)
			}
		}
		if len(lacking) == 0 {
			continue
		}
		if i, ok := index[t.ref]; ok {
			for _, p := range lacking {
				if !slices.Contains(out[i].Privileges, p) {
					out[i].Privileges = append(out[i].Privileges, p)
				}
			}
			continue
		}
		index[t.ref] = len(out)
		out = append(out, MissingPrivileges{Kind: t.kind, Name: t.name, Privileges: lacking})
	}
	return out
}

// privilegeTargets resolves the entities of spec (read-only) with the privileges each needs.
func (c *client) privilegeTargets(ctx context.Context, spec PrivilegeSpec) ([]privilegeTarget, error) {
	d, err := c.datacenter(ctx, spec.Datacenter)
	if err != nil {
		return nil, err
	}
	folder, complete, err := d.existingFolder(ctx, spec.Folder)
	if err != nil {
		return nil, err
	}
	need := RequiredPrivileges(spec, !complete)
	targets := []privilegeTarget{{kind: PrivilegeFolder, name: folder.InventoryPath, ref: folder.Reference(), privs: need[PrivilegeFolder]}}

	pool, err := d.pool(ctx, spec.ResourcePool)
	if err != nil {
		return nil, err
	}
	targets = append(targets, privilegeTarget{kind: PrivilegeResourcePool, name: nameOf(pool.InventoryPath, spec.ResourcePool),
		ref: pool.Reference(), privs: need[PrivilegeResourcePool]})
	if privs := need[PrivilegeCluster]; len(privs) > 0 {
		var rp mo.ResourcePool
		if err := c.pc().RetrieveOne(ctx, pool.Reference(), []string{"owner"}, &rp); err != nil {
			return nil, classify("ReadCluster", err)
		}
		if rp.Owner.Type == "ClusterComputeResource" { // a standalone host has no modules (condition AntiAffinity says so)
			var cl mo.ClusterComputeResource
			if err := c.pc().RetrieveOne(ctx, rp.Owner, []string{"name"}, &cl); err != nil {
				return nil, classify("ReadCluster", err)
			}
			targets = append(targets, privilegeTarget{kind: PrivilegeCluster, name: cl.Name, ref: rp.Owner, privs: privs})
		}
	}

	storage, err := d.storageFor(ctx, spec.DatastoreCluster)
	if err != nil {
		return nil, err
	}
	if storage.pod != nil {
		members, err := c.podDatastores(ctx, storage.pod)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			targets = append(targets, privilegeTarget{kind: PrivilegeDatastore, name: m.Name + " (in datastore cluster " + spec.DatastoreCluster + ")",
				ref: m.Self, privs: need[PrivilegeDatastore]})
		}
	} else {
		targets = append(targets, privilegeTarget{kind: PrivilegeDatastore, name: storage.ds.Name(), ref: storage.ds.Reference(),
			privs: need[PrivilegeDatastore]})
	}

	iso, err := d.datastore(ctx, spec.ISODatastore)
	if err != nil {
		return nil, err
	}
	targets = append(targets, privilegeTarget{kind: PrivilegeISODatastore, name: iso.Name(), ref: iso.Reference(),
		privs: need[PrivilegeISODatastore]})

	n, err := d.finder.Network(ctx, spec.Network)
	if err != nil {
		return nil, inventoryError("FindNetwork", "network", spec.Network, err)
	}
	targets = append(targets, privilegeTarget{kind: PrivilegeNetwork, name: spec.Network, ref: n.Reference(),
		privs: need[PrivilegeNetwork]})
	return targets, nil
}

// nameOf prefers an inventory path, else the name from the spec.
func nameOf(inventoryPath, name string) string {
	if inventoryPath != "" {
		return inventoryPath
	}
	return name
}

// podDatastores lists the datastores of a datastore cluster (name and reference, one retrieval).
func (c *client) podDatastores(ctx context.Context, pod *object.StoragePod) ([]mo.Datastore, error) {
	var p mo.StoragePod
	if err := c.pc().RetrieveOne(ctx, pod.Reference(), []string{"childEntity"}, &p); err != nil {
		return nil, classify("FindDatastore", err)
	}
	var refs []types.ManagedObjectReference
	for _, r := range p.ChildEntity {
		if r.Type == "Datastore" {
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		return nil, NewError(ClassInvalid, "FindDatastore", "datastore cluster %q holds no datastore", pod.Name())
	}
	var dss []mo.Datastore
	if err := c.pc().Retrieve(ctx, refs, []string{"name"}, &dss); err != nil {
		return nil, classify("FindDatastore", err)
	}
	slices.SortFunc(dss, func(a, b mo.Datastore) int { return strings.Compare(a.Name, b.Name) })
	return dss, nil
}

// existingFolder walks rel below the VM folder without creating anything and returns the deepest folder
// that exists; complete is false when the rest of rel is created with the first VM.
func (d *dcCache) existingFolder(ctx context.Context, rel string) (*object.Folder, bool, error) {
	current, err := d.folder(ctx, "") // the datacenter's VM folder: read, never created
	if err != nil {
		return nil, false, err
	}
	rel = strings.Trim(rel, "/")
	if rel == "" {
		return current, true, nil
	}
	for _, name := range strings.Split(rel, "/") {
		p := path.Join(current.InventoryPath, name)
		elems, err := d.finder.ManagedObjectList(ctx, p)
		if err != nil {
			return nil, false, classify("FindFolder", err)
		}
		if len(elems) == 0 {
			return current, false, nil
		}
		ref := elems[0].Object.Reference()
		if ref.Type != "Folder" {
			return nil, false, NewError(ClassInvalid, "FindFolder", "%q is a %s, not a folder", p, ref.Type)
		}
		f := object.NewFolder(d.dc.Client(), ref)
		f.InventoryPath = p
		current = f
	}
	return current, true, nil
}

package vsphere

import (
	"context"
	"strings"

	"github.com/vmware/govmomi/vapi/tags"
)

// PlacementSpec names every vSphere object a pool's VMs are placed on.
type PlacementSpec struct {
	Datacenter string
	// DatastoreCluster is a datastore cluster or a single datastore (VM disks).
	DatastoreCluster string
	ISODatastore     string
	// ResourcePool empty means the datacenter's only resource pool.
	ResourcePool string
	// Folder is the VM folder below the datacenter's VM folder; missing folders are created at VM
	// creation, so only an existing path element that is not a folder is a problem.
	Folder  string
	Network string
	Tags    []string
	// DataDiskDatastores are the single datastores the hardware profile's data disks name.
	DataDiskDatastores []string
	// StoragePolicy is the hardware profile's SPBM policy name (empty: none).
	StoragePolicy string
}

// PlacementProblem is one object of a PlacementSpec that does not resolve.
type PlacementProblem struct {
	// Kind is Datacenter, Datastore, ISODatastore, ResourcePool, Folder, Network, Tag or StoragePolicy.
	Kind    string
	Name    string
	Message string
}

// Placement problem kinds.
const (
	PlacementDatacenter   = "Datacenter"
	PlacementDatastore    = "Datastore"
	PlacementISODatastore = "ISODatastore"
	PlacementResourcePool = "ResourcePool"
	PlacementFolder       = "Folder"
	PlacementNetwork      = "Network"
	PlacementTag          = "Tag"
	// PlacementStoragePolicy: the hardware profile's storage policy does not exist.
	PlacementStoragePolicy = "StoragePolicy"
)

// CheckPlacement resolves every object of spec (read-only: nothing is created) and lists those that
// do not exist or are not of the right kind. An error is returned only when vCenter could not be asked
// (transient, authentication, permission): then the placement is unknown, not invalid.
func (c *client) CheckPlacement(ctx context.Context, spec PlacementSpec) ([]PlacementProblem, error) {
	problems, err := c.checkPlacement(ctx, spec)
	return problems, observe("placement", err)
}

func (c *client) checkPlacement(ctx context.Context, spec PlacementSpec) ([]PlacementProblem, error) {
	var problems []PlacementProblem
	// note records a lookup: an invalid object is a problem, anything else ends the check with err.
	note := func(kind, name string, err error) error {
		if err == nil {
			return nil
		}
		if ClassOf(err) == ClassInvalid || ClassOf(err) == ClassNotFound {
			problems = append(problems, PlacementProblem{Kind: kind, Name: name, Message: err.Error()})
			return nil
		}
		return err
	}
	d, err := c.datacenter(ctx, spec.Datacenter)
	if err != nil {
		return problems, note(PlacementDatacenter, spec.Datacenter, err)
	}
	if _, err := d.storageFor(ctx, spec.DatastoreCluster); note(PlacementDatastore, spec.DatastoreCluster, err) != nil {
		return nil, err
	}
	if _, err := d.datastore(ctx, spec.ISODatastore); note(PlacementISODatastore, spec.ISODatastore, err) != nil {
		return nil, err
	}
	if _, err := d.pool(ctx, spec.ResourcePool); note(PlacementResourcePool, spec.ResourcePool, err) != nil {
		return nil, err
	}
	if err := d.checkFolderPath(ctx, spec.Folder); note(PlacementFolder, spec.Folder, err) != nil {
		return nil, err
	}
	if _, err := d.network(ctx, spec.Network); note(PlacementNetwork, spec.Network, err) != nil {
		return nil, err
	}
	for _, ds := range spec.DataDiskDatastores {
		if _, err := d.datastore(ctx, ds); note(PlacementDatastore, ds, err) != nil {
			return nil, err
		}
	}
	if _, err := c.storagePolicyID(ctx, spec.StoragePolicy); note(PlacementStoragePolicy, spec.StoragePolicy, err) != nil {
		return nil, err
	}
	if len(spec.Tags) > 0 {
		err := c.withREST(ctx, func(m *tags.Manager) error {
			for _, t := range spec.Tags {
				if _, err := c.tagID(ctx, m, t); note(PlacementTag, t, err) != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, classify("CheckTags", err)
		}
	}
	return problems, nil
}

// checkFolderPath walks rel below the VM folder without creating anything: every existing element must
// be a folder; the first missing one (and what follows) is created at VM creation.
func (d *dcCache) checkFolderPath(ctx context.Context, rel string) error {
	rel = strings.Trim(rel, "/")
	if rel == "" {
		return nil
	}
	root := d.dc.InventoryPath + "/vm"
	p := root
	for _, name := range strings.Split(rel, "/") {
		p += "/" + name
		elems, err := d.finder.ManagedObjectList(ctx, p)
		if err != nil {
			return classify("FindFolder", err)
		}
		if len(elems) == 0 {
			return nil // missing from here on: created with the first VM
		}
		if elems[0].Object.Reference().Type != "Folder" {
			return NewError(ClassInvalid, "FindFolder", "%q is a %s, not a folder", p, elems[0].Object.Reference().Type)
		}
	}
	return nil
}

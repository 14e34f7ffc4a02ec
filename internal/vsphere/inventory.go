package vsphere

import (
	"context"
	"errors"
	"path"
	"strings"
	"sync"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// dcCache remembers inventory lookups of one datacenter for the life of a session. Inventory objects
// named in a pool's spec rarely change; a stale entry shows up as ManagedObjectNotFound, after which the
// cache of that datacenter is dropped (client.forget) and the next call resolves again.
type dcCache struct {
	dc     *object.Datacenter
	finder *find.Finder

	mu         sync.Mutex
	vmFolder   *object.Folder
	folders    map[string]*object.Folder
	pools      map[string]*object.ResourcePool
	networks   map[string]types.BaseVirtualDeviceBackingInfo
	storage    map[string]storageTarget
	datastores map[string]*object.Datastore
	browsers   map[string]types.ManagedObjectReference

	// refs remembers the VMs' references by instance UUID (vmByUUID).
	refs vmRefs
}

// storageTarget is what VMSpec.DatastoreCluster names: a datastore cluster or a single datastore.
type storageTarget struct {
	pod *object.StoragePod
	ds  *object.Datastore
}

// inventoryError maps finder misses to ClassInvalid: the pool names an object that does not exist.
func inventoryError(op, kind, name string, err error) error {
	var nf *find.NotFoundError
	var mf *find.MultipleFoundError
	if errors.As(err, &nf) {
		return NewError(ClassInvalid, op, "%s %q not found", kind, name)
	}
	if errors.As(err, &mf) {
		return NewError(ClassInvalid, op, "%s %q is ambiguous; give its full inventory path", kind, name)
	}
	return classify(op, err)
}

// datacenter returns the cached lookups of datacenter name, resolving it on first use.
func (c *client) datacenter(ctx context.Context, name string) (*dcCache, error) {
	c.mu.Lock()
	d, ok := c.dcs[name]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	f := find.NewFinder(c.vim, false)
	dc, err := f.Datacenter(ctx, name)
	if err != nil {
		return nil, inventoryError("FindDatacenter", "datacenter", name, err)
	}
	f.SetDatacenter(dc)
	// govmomi's Finder fills its datacenter-folders cache lazily on first use, unsynchronised; the dcCache is
	// shared by concurrent reconciles, so fill it here, before the Finder is published.
	if _, err := f.DefaultFolder(ctx); err != nil {
		return nil, inventoryError("FindDatacenter", "datacenter", name, err)
	}
	d = &dcCache{dc: dc, finder: f, folders: map[string]*object.Folder{}, pools: map[string]*object.ResourcePool{},
		networks: map[string]types.BaseVirtualDeviceBackingInfo{}, storage: map[string]storageTarget{},
		datastores: map[string]*object.Datastore{}, browsers: map[string]types.ManagedObjectReference{}}
	c.mu.Lock()
	if existing, ok := c.dcs[name]; ok {
		d = existing
	} else {
		c.dcs[name] = d
	}
	c.mu.Unlock()
	return d, nil
}

// forget drops the cached inventory of a datacenter after an object of it vanished.
func (c *client) forget(name string) {
	c.mu.Lock()
	delete(c.dcs, name)
	c.mu.Unlock()
}

// folder returns the VM folder at rel (relative to the datacenter's VM folder, "a/b"), creating missing
// folders. An empty rel is the datacenter's VM folder.
func (d *dcCache) folder(ctx context.Context, rel string) (*object.Folder, error) {
	rel = strings.Trim(rel, "/")
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.folders[rel]; ok {
		return f, nil
	}
	if d.vmFolder == nil {
		folders, err := d.dc.Folders(ctx)
		if err != nil {
			return nil, classify("FindFolder", err)
		}
		d.vmFolder = folders.VmFolder
		d.vmFolder.InventoryPath = path.Join(d.dc.InventoryPath, "vm")
	}
	current := d.vmFolder
	if rel == "" {
		d.folders[rel] = current
		return current, nil
	}
	for i, name := range strings.Split(rel, "/") {
		sub := strings.Join(strings.Split(rel, "/")[:i+1], "/")
		if f, ok := d.folders[sub]; ok {
			current = f
			continue
		}
		next, err := d.childFolder(ctx, current, name)
		if err != nil {
			return nil, err
		}
		d.folders[sub] = next
		current = next
	}
	return current, nil
}

// childFolder finds or creates the folder name under parent. A concurrent creator (DuplicateName) wins
// and its folder is used.
func (d *dcCache) childFolder(ctx context.Context, parent *object.Folder, name string) (*object.Folder, error) {
	p := path.Join(parent.InventoryPath, name)
	f, err := d.finder.Folder(ctx, p)
	if err == nil {
		return f, nil
	}
	var nf *find.NotFoundError
	if !errors.As(err, &nf) {
		return nil, inventoryError("FindFolder", "folder", p, err)
	}
	f, err = parent.CreateFolder(ctx, name)
	if isFault(err, &types.DuplicateName{}) {
		if f, err = d.finder.Folder(ctx, p); err != nil {
			return nil, inventoryError("FindFolder", "folder", p, err)
		}
		return f, nil
	}
	if err != nil {
		return nil, classify("CreateFolder", err)
	}
	f.InventoryPath = p
	return f, nil
}

// pool returns the resource pool at p ("Cluster/Resources", "Cluster", or a full path); empty p is the
// datacenter's only resource pool.
func (d *dcCache) pool(ctx context.Context, p string) (*object.ResourcePool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rp, ok := d.pools[p]; ok {
		return rp, nil
	}
	var rp *object.ResourcePool
	var err error
	if p == "" {
		rp, err = d.finder.DefaultResourcePool(ctx)
	} else {
		rp, err = d.finder.ResourcePool(ctx, p)
		var nf *find.NotFoundError
		if errors.As(err, &nf) && !strings.Contains(p, "/") {
			rp, err = d.finder.ResourcePool(ctx, p+"/Resources") // a cluster name: its root pool
		}
	}
	if err != nil {
		return nil, inventoryError("FindResourcePool", "resource pool", p, err)
	}
	d.pools[p] = rp
	return rp, nil
}

// network returns the NIC backing for the named network (standard port group or distributed port group).
func (d *dcCache) network(ctx context.Context, name string) (types.BaseVirtualDeviceBackingInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if b, ok := d.networks[name]; ok {
		return b, nil
	}
	n, err := d.finder.Network(ctx, name)
	if err != nil {
		return nil, inventoryError("FindNetwork", "network", name, err)
	}
	b, err := n.EthernetCardBackingInfo(ctx)
	if err != nil {
		return nil, classify("FindNetwork", err)
	}
	d.networks[name] = b
	return b, nil
}

// storageFor resolves a datastore cluster first, then a single datastore of that name.
func (d *dcCache) storageFor(ctx context.Context, name string) (storageTarget, error) {
	d.mu.Lock()
	if t, ok := d.storage[name]; ok {
		d.mu.Unlock()
		return t, nil
	}
	d.mu.Unlock()
	var t storageTarget
	pod, err := d.finder.DatastoreCluster(ctx, name)
	var nf *find.NotFoundError
	switch {
	case err == nil:
		t.pod = pod
	case errors.As(err, &nf):
		ds, err := d.datastore(ctx, name)
		if err != nil {
			return t, err
		}
		t.ds = ds
	default:
		return t, inventoryError("FindDatastore", "datastore cluster", name, err)
	}
	d.mu.Lock()
	d.storage[name] = t
	d.mu.Unlock()
	return t, nil
}

// datastore returns a datastore by name (with its datacenter path set, as HTTP file access needs).
func (d *dcCache) datastore(ctx context.Context, name string) (*object.Datastore, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ds, ok := d.datastores[name]; ok {
		return ds, nil
	}
	ds, err := d.finder.Datastore(ctx, name)
	if err != nil {
		return nil, inventoryError("FindDatastore", "datastore", name, err)
	}
	d.datastores[name] = ds
	return ds, nil
}

// datastoreByRef returns a datastore named by reference (a Storage DRS destination), caching its name.
func (d *dcCache) datastoreByRef(ctx context.Context, c *client, ref types.ManagedObjectReference) (*object.Datastore, error) {
	d.mu.Lock()
	for _, ds := range d.datastores {
		if ds.Reference() == ref {
			d.mu.Unlock()
			return ds, nil
		}
	}
	d.mu.Unlock()
	var m mo.Datastore
	if err := c.pc().RetrieveOne(ctx, ref, []string{"name"}, &m); err != nil {
		return nil, classify("FindDatastore", err)
	}
	return d.datastore(ctx, m.Name)
}

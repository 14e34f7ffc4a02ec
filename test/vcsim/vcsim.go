// Package vcsim starts govmomi's vCenter simulator (VPX model) with the inventory the operator expects,
// for tests, the demo and benchmarks:
//
//	env, err := vcsim.Start(vcsim.Options{})
//	if err != nil { ... }
//	defer env.Close()
//	client, err := vsphere.NewSessions(vsphere.SessionOptions{}).Get(ctx, env.Credentials)
//	spec := env.VMSpec("vm-1", vsphere.Ownership{OwnerUID: uid, PoolUID: poolUID})
//
// The simulator listens on 127.0.0.1 with TLS; Credentials trust its certificate through CABundle (no
// insecure mode). Inventory: datacenter DC0, cluster DC0_C0 (pool "DC0_C0/Resources"), datastore
// LocalDS_0, a datastore cluster DC0_POD0 holding LocalDS_1, distributed port group DC0_DVPG0, vSphere
// tags (category "agent-forge", tags "worker" and "agent"), and the stock VMs of the VPX model (foreign
// VMs carrying no ownership marker). The VM folder named by Folder does not exist yet: creating the
// first VM creates it.
//
// StartProcess runs the same simulator in its own process (hack/vcsim, built without -race) behind the
// same Env: suites that run the operator's concurrent workers under -race use it, since govmomi's
// simulator races with itself on concurrent tasks; the knobs (WrapVM, Service, CountVMsNamed, ...) then
// travel over a loopback control endpoint (control.go).
package vcsim

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	// Registers the storage policy (SPBM) endpoint with the simulator: its stock policies include
	// "vSAN Default Storage Policy".
	_ "github.com/vmware/govmomi/pbm/simulator"
	// Registers the vAPI (REST: tags, content library) endpoints with the simulator.
	_ "github.com/vmware/govmomi/vapi/simulator"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Inventory names of the simulator started by Start.
const (
	Datacenter       = "DC0"
	Cluster          = "DC0_C0"
	ResourcePool     = "DC0_C0/Resources"
	Datastore        = "LocalDS_0"
	DatastoreCluster = "DC0_POD0"
	PodDatastore     = "LocalDS_1"
	Network          = "DC0_DVPG0"
	Folder           = "agent-forge/test"
	TagCategory      = "agent-forge"
	Username         = "agent-forge@vsphere.local"
	Password         = "not-a-real-secret"
)

// Tags are the vSphere tags created in TagCategory.
var Tags = []string{"worker", "agent"}

// Options tune the simulator.
type Options struct {
	// Delay adds server-side latency per SOAP call (DelayConfig.Delay, ms) and per method
	// (DelayConfig.MethodDelay, e.g. {"Login": 100}), e.g. to model a remote vCenter in benchmarks.
	Delay simulator.DelayConfig
	// NoTLS serves plain HTTP (only for tools that cannot take a CA bundle).
	NoTLS bool
	// Clusters is the number of clusters (DC0_C0 ...; 0 means 1). With more than one each cluster i also
	// gets its own datastore (ZoneOf(i)), for failure domains.
	Clusters int
}

// Env is a running simulator: in this process (Start) or in its own (StartProcess). The methods work
// the same on both; Model, Server and Map exist only in process.
type Env struct {
	// Model and Server are nil when the simulator runs in its own process.
	Model  *simulator.Model
	Server *simulator.Server
	// URL is the SDK endpoint without credentials, e.g. https://127.0.0.1:PORT/sdk.
	URL *url.URL
	// Credentials log in as Username and trust the simulator's certificate via CABundle.
	Credentials vsphere.Credentials
	// Thumbprint is the SHA-256 fingerprint of the server certificate (for thumbprint-pinning tests).
	Thumbprint string

	closeOnce sync.Once
	// ctl and proc are set when the simulator runs in its own process (StartProcess).
	ctl       *controlClient
	proc      *process
	callbacks *callbacks   // fault rules' filter callbacks, served to the process
	pci       *pciRegistry // the hosts' PCI devices (pcidevices.go); in process only
}

// Start creates the model, serves it on a loopback port and prepares the inventory.
func Start(opts Options) (*Env, error) {
	model := simulator.VPX()
	model.Datastore = 2
	if opts.Clusters > 1 {
		model.Cluster = opts.Clusters
		model.Datastore = 2 + opts.Clusters
	}
	model.DelayConfig = opts.Delay
	if err := model.Create(); err != nil {
		return nil, fmt.Errorf("create simulator model: %w", err)
	}
	model.Service.RegisterEndpoints = true
	if !opts.NoTLS {
		model.Service.TLS = new(tls.Config)
	}
	model.Service.Listen = &url.URL{Host: "127.0.0.1:0", User: url.UserPassword(Username, Password)}
	srv := model.Service.NewServer()
	env := &Env{Model: model, Server: srv}
	model.Map().Handler = vmCallHandler(func(VMCall) {}) // clones as vCenter makes them; OnVMCall reports
	u := *srv.URL
	u.User = nil
	env.URL = &u
	env.Credentials = vsphere.Credentials{Server: u.String(), Username: Username, Password: Password}
	if !opts.NoTLS {
		cert := srv.Certificate()
		env.Credentials.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
		env.Thumbprint = soap.ThumbprintSHA256(cert)
	}
	if err := env.prepare(context.Background()); err != nil {
		env.Close()
		return nil, err
	}
	env.prepareCapacity()
	env.preparePCIDevices()
	return env, nil
}

// Close stops the server and removes the model's temporary files (in process), or stops the
// simulator's process.
func (e *Env) Close() {
	e.closeOnce.Do(func() {
		if e.proc != nil {
			e.proc.stop()
			e.callbacks.close()
			e.ctl.http.CloseIdleConnections()
			return
		}
		e.Server.Close()
		modulesMuxes.Delete(e.Model.Service)
		e.Model.Remove()
	})
}

// Map is the simulator's object registry (for Map.Put of wrapped objects, direct inspection). In
// process only: it panics on a simulator started by StartProcess.
func (e *Env) Map() *simulator.Registry {
	if e.ctl != nil {
		panic("vcsim: Map() of a simulator in its own process; use the Env's methods")
	}
	return e.Model.Map()
}

// Faults adds and clears the simulator's fault injection rules.
type Faults interface {
	// AddFaultRule adds a rule (simulator.Service.AddFaultRule). Out of process, filter callbacks run in
	// the calling process and receive a RemoteObject (reference and name), and MaxCount/SkipCount of a
	// rule with Probability 1 are exact under concurrent calls.
	AddFaultRule(rule *simulator.FaultInjectionRule)
	// ClearFaultRules removes every rule.
	ClearFaultRules()
}

// Service is the simulator's fault injection (AddFaultRule, ClearFaultRules), in process or in the
// simulator's process.
func (e *Env) Service() Faults {
	if e.ctl != nil {
		return remoteFaults{e}
	}
	return e.Model.Service
}

// Login opens an independent admin session for test assertions and setup; the caller logs it out.
func (e *Env) Login(ctx context.Context) (*govmomi.Client, error) {
	u := *e.URL
	u.User = url.UserPassword(Username, Password)
	return govmomi.NewClient(ctx, &u, true)
}

// VMSpec returns a complete VMSpec for this inventory (every knob set; ISO path left empty).
func (e *Env) VMSpec(name string, owner vsphere.Ownership) vsphere.VMSpec {
	return vsphere.VMSpec{
		Name: name, Datacenter: Datacenter, DatastoreCluster: DatastoreCluster, ResourcePool: ResourcePool,
		Folder: Folder, Network: Network, Tags: append([]string(nil), Tags...), GuestID: "rhel9_64Guest",
		SCSIType: "pvscsi", Firmware: "efi", NetworkAdapter: "vmxnet3", NumCPUs: 2, MemoryMiB: 4096, DiskGiB: 20,
		Ownership: owner,
	}
}

// adminSession logs in as the admin and resolves the datacenter: a finder scoped to it and its
// folders. The caller logs the client out.
func (e *Env) adminSession(ctx context.Context) (*govmomi.Client, *find.Finder, *object.DatacenterFolders, error) {
	c, err := e.Login(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("login to simulator: %w", err)
	}
	finder := find.NewFinder(c.Client, false)
	dc, err := finder.Datacenter(ctx, Datacenter)
	if err == nil {
		finder.SetDatacenter(dc)
		var folders *object.DatacenterFolders
		if folders, err = dc.Folders(ctx); err == nil {
			return c, finder, folders, nil
		}
	}
	_ = c.Logout(ctx)
	return nil, nil, nil, err
}

// prepare builds the datastore cluster and the tags.
func (e *Env) prepare(ctx context.Context) error {
	c, finder, folders, err := e.adminSession(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = c.Logout(ctx) }()

	pod, err := folders.DatastoreFolder.CreateStoragePod(ctx, DatastoreCluster)
	if err != nil {
		return fmt.Errorf("create datastore cluster: %w", err)
	}
	ds, err := finder.Datastore(ctx, PodDatastore)
	if err != nil {
		return err
	}
	task, err := pod.MoveInto(ctx, []types.ManagedObjectReference{ds.Reference()})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("move %s into %s: %w", PodDatastore, DatastoreCluster, err)
	}

	rc := rest.NewClient(c.Client)
	if err := rc.Login(ctx, url.UserPassword(Username, Password)); err != nil {
		return fmt.Errorf("vAPI login: %w", err)
	}
	defer func() { _ = rc.Logout(ctx) }()
	m := tags.NewManager(rc)
	catID, err := m.CreateCategory(ctx, &tags.Category{Name: TagCategory, Cardinality: "MULTIPLE",
		AssociableTypes: []string{"VirtualMachine"}})
	if err != nil {
		return fmt.Errorf("create tag category: %w", err)
	}
	for _, t := range Tags {
		if _, err := m.CreateTag(ctx, &tags.Tag{Name: t, CategoryID: catID}); err != nil {
			return fmt.Errorf("create tag %s: %w", t, err)
		}
	}
	return nil
}

// AttachedTags lists the names of the tags attached to a VM (for assertions).
func (e *Env) AttachedTags(ctx context.Context, vm types.ManagedObjectReference) ([]string, error) {
	c, err := e.Login(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Logout(ctx) }()
	rc := rest.NewClient(c.Client)
	if err := rc.Login(ctx, url.UserPassword(Username, Password)); err != nil {
		return nil, err
	}
	defer func() { _ = rc.Logout(ctx) }()
	attached, err := tags.NewManager(rc).GetAttachedTags(ctx, vm)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(attached))
	for _, t := range attached {
		names = append(names, t.Name)
	}
	return names, nil
}

// VMByInstanceUUID returns the simulator's VM object with that instance UUID, or nil.
//
// Out of process the result is a snapshot carrying Self, Name, Config.InstanceUuid and
// Runtime.PowerState only (read it over SOAP for more).
func (e *Env) VMByInstanceUUID(uuid string) *simulator.VirtualMachine {
	if e.ctl != nil {
		return e.remoteVMByInstanceUUID(uuid)
	}
	for _, obj := range e.Map().All("VirtualMachine") {
		vm := asVM(obj)
		if vm == nil {
			continue
		}
		match := false
		e.withLock(obj, func() { match = vm.Config != nil && vm.Config.InstanceUuid == uuid })
		if match {
			return vm
		}
	}
	return nil
}

// CountVMsNamed counts the VMs with that name (to prove idempotent creation).
func (e *Env) CountVMsNamed(name string) int {
	if e.ctl != nil {
		var res countResp
		e.ctl.must("vms/count", nameReq{Name: name}, &res)
		return res.Count
	}
	n := 0
	for _, obj := range e.Map().All("VirtualMachine") {
		if vm := asVM(obj); vm != nil {
			e.withLock(obj, func() {
				if vm.Name == name {
					n++
				}
			})
		}
	}
	return n
}

// withLock runs f holding the simulator's lock of obj, so reads do not race with running tasks.
func (e *Env) withLock(obj mo.Reference, f func()) {
	e.Map().WithLock(&simulator.Context{}, obj, f)
}

// asVM unwraps a registry object into the simulator VM (plain or wrapped by this package).
func asVM(obj mo.Reference) *simulator.VirtualMachine {
	switch vm := obj.(type) {
	case *simulator.VirtualMachine:
		return vm
	case *VM:
		return vm.VirtualMachine
	}
	return nil
}

// NewObjectVM returns a govmomi VM handle for ref on client c.
func NewObjectVM(c *govmomi.Client, ref types.ManagedObjectReference) *object.VirtualMachine {
	return object.NewVirtualMachine(c.Client, ref)
}

// EnsureFolder creates the VM folder at inventoryPath (relative to the datacenter's VM folder, e.g.
// "agent-forge/ns") unless it exists. Test setups call it before the operator runs: the simulator's
// container views walk folder children without its object locks, so creating a folder while a view is
// walked is a data race inside govmomi's simulator (seen under -race); a real vCenter has no such race.
func (e *Env) EnsureFolder(ctx context.Context, inventoryPath string) error {
	c, finder, folders, err := e.adminSession(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = c.Logout(ctx) }()
	parent := folders.VmFolder
	for _, name := range strings.Split(strings.Trim(inventoryPath, "/"), "/") {
		p := path.Join(parent.InventoryPath, name)
		f, err := finder.Folder(ctx, p)
		if err != nil {
			if f, err = parent.CreateFolder(ctx, name); err != nil {
				return fmt.Errorf("create folder %s: %w", p, err)
			}
			f.InventoryPath = p
		}
		parent = f
	}
	return nil
}

// Package vspherefake is an in-memory vsphere.Client for fast, direct controller tests: VMs keyed like
// the real client (instance UUID = the owner UID, names unique per datacenter folder, the ownership
// marker verified before anything destructive), errors of the real classes scriptable per method, and
// call counts. It models only what the Client interface promises; behaviour against a real vCenter is
// tested against the govmomi simulator (internal/vsphere, test/vcsim).
package vspherefake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Method names one method of vsphere.Client (for scripted errors and call counts).
type Method string

// The methods of vsphere.Client.
const (
	CreateVM  Method = "CreateVM"
	FindVM    Method = "FindVM"
	LookupVMs Method = "LookupVMs"
	DestroyVM Method = "DestroyVM"
	PowerOnVM Method = "PowerOnVM"
	ResetVM   Method = "ResetVM"
	// SetDiskFirstBoot: the boot order (see VM.BootsCDROMFirst).
	SetDiskFirstBoot Method = "SetDiskFirstBoot"
	ListPoolVMs      Method = "ListPoolVMs"
	ListMarkedVMs    Method = "ListMarkedVMs"
	NICMACs          Method = "NICMACs"
	UploadISO        Method = "UploadISO"
	UploadFile       Method = "UploadFile"
	MoveFile         Method = "MoveFile"
	StatFile         Method = "StatFile"
	ListFiles        Method = "ListFiles"
	DeleteFile       Method = "DeleteFile"
	VMsWithISO       Method = "VMsWithISO"
	CheckPlacement   Method = "CheckPlacement"
	CheckPrivileges  Method = "CheckPrivileges"
	ReadCapacity     Method = "ReadCapacity"
	ReadHostDevices  Method = "ReadHostDevices"
	EjectISO         Method = "EjectISO"
	// Cluster modules (clustermodules.go).
	ComputeClusterOf    Method = "ComputeClusterOf"
	ClusterModules      Method = "ClusterModules"
	CreateClusterModule Method = "CreateClusterModule"
	DeleteClusterModule Method = "DeleteClusterModule"
	JoinClusterModule   Method = "JoinClusterModule"
	LeaveClusterModule  Method = "LeaveClusterModule"
)

var (
	_ vsphere.Client   = (*Fake)(nil)
	_ vsphere.Sessions = (*Sessions)(nil)
)

// VM is one VM of the fake inventory.
type VM struct {
	Name, Datacenter, Folder string
	InstanceUUID, BIOSUUID   string
	MACAddress               string
	PoweredOn                bool
	// Ownership is the marker in the VM's extraConfig; zero for a VM that carries none (a foreign VM).
	Ownership vsphere.Ownership
	CDROMs    []vsphere.CDROM
	Spec      vsphere.VMSpec
	// BootsCDROMFirst: the VM's boot order does not start with its disk (someone changed it, or the
	// reconfigure CreateVM starts failed). Zero: disk first, as the real client's VMs end up.
	BootsCDROMFirst bool
}

// Fake is an in-memory vCenter session. The zero value is not ready: use New. Safe for concurrent use.
type Fake struct {
	clock clock.PassiveClock

	mu       sync.Mutex
	vms      map[string]*VM // by instance UUID
	files    map[string]fakeFile
	next     int
	calls    map[Method]int
	queued   map[Method][]error
	always   map[Method]error
	problems []vsphere.PlacementProblem
	missing  []vsphere.MissingPrivileges
	capacity vsphere.Capacity
	devices  vsphere.HostDevices
	modules  moduleState
	// lookupRTT is how long a LookupVMs call takes in real time (SetLookupRoundTrip).
	lookupRTT time.Duration
}

type fakeFile struct {
	size     int64
	modified time.Time
}

// New returns an empty inventory; clk stamps uploaded files (nil: the real clock).
func New(clk clock.PassiveClock) *Fake {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Fake{clock: clk, vms: map[string]*VM{}, files: map[string]fakeFile{}, calls: map[Method]int{},
		queued: map[Method][]error{}, always: map[Method]error{}, capacity: RoomyCapacity(),
		devices: vsphere.HostDevices{Compute: "cluster", Hosts: []vsphere.HostPCI{{Name: "host-0"}}}}
}

// RoomyCapacity is what ReadCapacity reports unless SetCapacity says otherwise: a cluster and a datastore
// with room for many VMs.
func RoomyCapacity() vsphere.Capacity {
	return vsphere.Capacity{Compute: "cluster", EffectiveCPUMHz: 1_000_000, EffectiveMemoryMiB: 4 << 20, CoreMHz: 2_000,
		Datastores: []vsphere.DatastoreSpace{{Name: "ds", CapacityBytes: 100 << 40, FreeBytes: 90 << 40}}}
}

// SetCapacity scripts what ReadCapacity reports.
func (f *Fake) SetCapacity(c vsphere.Capacity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.capacity = c
}

// SetHostDevices scripts what ReadHostDevices reports (by default one host offering no device).
func (f *Fake) SetHostDevices(h vsphere.HostDevices) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.devices = h
}

// SetLookupRoundTrip makes every LookupVMs call take d of real time before it answers, outside the
// fake's lock, as a vCenter round trip does: for tests of look-ups that overlap in time (passes running
// concurrently), not of anything paced by a clock.
func (f *Fake) SetLookupRoundTrip(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookupRTT = d
}

// FailNext makes the next len(errs) calls of m fail with errs, in order (nil lets a call through).
func (f *Fake) FailNext(m Method, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued[m] = append(f.queued[m], errs...)
}

// FailAlways makes every call of m fail with err until Recover(m).
func (f *Fake) FailAlways(m Method, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.always[m] = err
}

// Recover drops every scripted error of m.
func (f *Fake) Recover(m Method) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.always, m)
	delete(f.queued, m)
}

// SetPlacementProblems scripts what CheckPlacement reports.
func (f *Fake) SetPlacementProblems(p ...vsphere.PlacementProblem) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = p
}

// SetMissingPrivileges scripts what CheckPrivileges reports.
func (f *Fake) SetMissingPrivileges(m ...vsphere.MissingPrivileges) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.missing = m
}

// Calls returns how often m was called (failed calls included).
func (f *Fake) Calls(m Method) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[m]
}

// AllCalls returns a copy of every method's call count.
func (f *Fake) AllCalls() map[Method]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[Method]int, len(f.calls))
	for m, n := range f.calls {
		out[m] = n
	}
	return out
}

// AddVM puts a VM into the inventory as if someone else created it (e.g. a foreign VM holding a name:
// no Ownership). Its instance UUID is generated when empty; it returns the stored copy.
func (f *Fake) AddVM(vm VM) VM {
	f.mu.Lock()
	defer f.mu.Unlock()
	if vm.InstanceUUID == "" {
		vm.InstanceUUID = f.uuid("5000")
	}
	if vm.BIOSUUID == "" {
		vm.BIOSUUID = f.uuid("4200")
	}
	f.vms[vm.InstanceUUID] = &vm
	return vm
}

// VMs lists the inventory, by name.
func (f *Fake) VMs() []VM {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]VM, 0, len(f.vms))
	for _, vm := range f.vms {
		out = append(out, *vm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// VM returns the VM with instance UUID uuid.
func (f *Fake) VM(uuid string) (VM, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	vm, ok := f.vms[uuid]
	if !ok {
		return VM{}, false
	}
	return *vm, true
}

// call counts a call of m and returns its scripted error, if any. Called with f.mu held.
func (f *Fake) call(m Method) error {
	f.calls[m]++
	if q := f.queued[m]; len(q) > 0 {
		f.queued[m] = q[1:]
		return q[0]
	}
	return f.always[m]
}

// uuid returns a unique UUID-shaped string starting with prefix (4 hex digits). Called with f.mu held.
func (f *Fake) uuid(prefix string) string {
	f.next++
	return fmt.Sprintf("%s%04x-0000-4000-8000-%012x", prefix, f.next>>16, f.next)
}

// CreateVM finds the VM with the owner UID as instance UUID (adopted when its marker is ours, refused
// with ClassOwnership otherwise) or creates and powers it on; a name taken in the folder by another VM
// is refused with ClassDuplicateName, as vCenter does.
func (f *Fake) CreateVM(_ context.Context, spec vsphere.VMSpec) (*vsphere.VMInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(CreateVM); err != nil {
		return nil, err
	}
	switch {
	case spec.Ownership.OwnerUID == "":
		return nil, vsphere.NewError(vsphere.ClassInvalid, "CreateVM", "ownership owner UID is required")
	case spec.Name == "":
		return nil, vsphere.NewError(vsphere.ClassInvalid, "CreateVM", "VM name is required")
	}
	if vm, ok := f.vms[spec.Ownership.OwnerUID]; ok {
		if err := verifyOwnership("CreateVM", vm, spec.Ownership); err != nil {
			return nil, err
		}
		vm.PoweredOn = true
		info := infoOf(vm)
		info.Adopted = true
		f.joinOnCreate(info, spec)
		return info, nil
	}
	for _, vm := range f.vms {
		if vm.Name == spec.Name && vm.Datacenter == spec.Datacenter && vm.Folder == spec.Folder {
			return nil, &vsphere.Error{Class: vsphere.ClassDuplicateName, FaultType: "DuplicateName", Op: "CreateVM",
				Err: fmt.Errorf("another VM (not carrying our instance UUID) already has the name %q in the folder", spec.Name)}
		}
	}
	f.next++
	vm := &VM{
		Name: spec.Name, Datacenter: spec.Datacenter, Folder: spec.Folder, InstanceUUID: spec.Ownership.OwnerUID,
		BIOSUUID: fmt.Sprintf("4200%04x-0000-4000-8000-%012x", f.next>>16, f.next), MACAddress: fmt.Sprintf("00:50:56:%02x:%02x:%02x", (f.next>>16)&0xff, (f.next>>8)&0xff, f.next&0xff),
		PoweredOn: true, Ownership: spec.Ownership, Spec: spec,
	}
	if spec.MACAddress != "" { // a manually assigned MAC (static-IP pools)
		vm.MACAddress = strings.ToLower(spec.MACAddress)
	}
	if spec.ISOPath != "" {
		vm.CDROMs = []vsphere.CDROM{{Key: 3000, ISOPath: spec.ISOPath, Connected: true}}
	}
	f.vms[vm.InstanceUUID] = vm
	info := infoOf(vm)
	f.joinOnCreate(info, spec)
	return info, nil
}

// FindVM looks a VM up by instance UUID, then BIOS UUID; absent is ClassNotFound.
func (f *Fake) FindVM(_ context.Context, datacenter, instanceUUID, biosUUID string) (*vsphere.VMInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(FindVM); err != nil {
		return nil, err
	}
	if vm, ok := f.vms[instanceUUID]; ok && instanceUUID != "" && vm.Datacenter == datacenter {
		return infoOf(vm), nil
	}
	for _, vm := range f.vms {
		if biosUUID != "" && vm.BIOSUUID == biosUUID && vm.Datacenter == datacenter {
			return infoOf(vm), nil
		}
	}
	return nil, vsphere.NewError(vsphere.ClassNotFound, "FindVM", "no VM with instance UUID %q or BIOS UUID %q", instanceUUID, biosUUID)
}

// LookupVMs reads the VMs that exist by instance UUID in one call; absent ones are left out.
func (f *Fake) LookupVMs(_ context.Context, datacenter string, instanceUUIDs []string) (map[string]*vsphere.VMInfo, error) {
	f.mu.Lock()
	rtt := f.lookupRTT
	f.mu.Unlock()
	time.Sleep(rtt)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(LookupVMs); err != nil {
		return nil, err
	}
	out := map[string]*vsphere.VMInfo{}
	for _, uuid := range instanceUUIDs {
		if vm, ok := f.vms[uuid]; ok && uuid != "" && vm.Datacenter == datacenter {
			out[strings.ToLower(uuid)] = infoOf(vm)
		}
	}
	return out, nil
}

// DestroyVM removes the VM after verifying its marker; absent is success.
func (f *Fake) DestroyVM(_ context.Context, datacenter, instanceUUID string, owner vsphere.Ownership) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(DestroyVM); err != nil {
		return err
	}
	vm, ok := f.vms[instanceUUID]
	if !ok || vm.Datacenter != datacenter {
		return nil
	}
	if err := verifyOwnership("DestroyVM", vm, owner); err != nil {
		return err
	}
	delete(f.vms, instanceUUID)
	return nil
}

// PowerOnVM powers an owned VM on; absent is a NotFound error.
func (f *Fake) PowerOnVM(_ context.Context, datacenter, instanceUUID string, owner vsphere.Ownership) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(PowerOnVM); err != nil {
		return err
	}
	vm, ok := f.vms[instanceUUID]
	if !ok || vm.Datacenter != datacenter {
		return vsphere.NewError(vsphere.ClassNotFound, "PowerOnVM", "no VM with instance UUID %q", instanceUUID)
	}
	if err := verifyOwnership("PowerOnVM", vm, owner); err != nil {
		return err
	}
	vm.PoweredOn = true
	return nil
}

// ResetVM verifies ownership and the BIOS UUID and counts the reset; the VM stays (or comes) on and boots
// its disk first.
func (f *Fake) ResetVM(_ context.Context, datacenter, instanceUUID, biosUUID string, owner vsphere.Ownership) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ResetVM); err != nil {
		return err
	}
	vm, err := f.ownedHost("ResetVM", datacenter, instanceUUID, biosUUID, owner)
	if err != nil {
		return err
	}
	vm.PoweredOn = true
	return nil
}

// SetDiskFirstBoot puts an owned VM's disk first in its boot order (see ResetVM for the checks) and
// reports whether it changed it.
func (f *Fake) SetDiskFirstBoot(_ context.Context, datacenter, instanceUUID, biosUUID string, owner vsphere.Ownership) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(SetDiskFirstBoot); err != nil {
		return false, err
	}
	vm, err := f.ownedHost("SetDiskFirstBoot", datacenter, instanceUUID, biosUUID, owner)
	if err != nil {
		return false, err
	}
	changed := vm.BootsCDROMFirst
	vm.BootsCDROMFirst = false
	return changed, nil
}

// ownedHost finds an owned VM (verifyOwnership) whose BIOS UUID is the recorded one, as the real client
// does before an operation that changes how a host boots. Called with f.mu held.
func (f *Fake) ownedHost(op, datacenter, instanceUUID, biosUUID string, owner vsphere.Ownership) (*VM, error) {
	vm, ok := f.vms[instanceUUID]
	if !ok || vm.Datacenter != datacenter {
		return nil, vsphere.NewError(vsphere.ClassNotFound, op, "no VM with instance UUID %q", instanceUUID)
	}
	if err := verifyOwnership(op, vm, owner); err != nil {
		return nil, err
	}
	if !strings.EqualFold(vm.BIOSUUID, biosUUID) {
		return nil, vsphere.NewError(vsphere.ClassOwnership, op, "VM has BIOS UUID %q, not %q", vm.BIOSUUID, biosUUID)
	}
	return vm, nil
}

// ListPoolVMs lists the VMs whose marker names poolUID.
func (f *Fake) ListPoolVMs(_ context.Context, datacenter, poolUID string) ([]vsphere.VMInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ListPoolVMs); err != nil {
		return nil, err
	}
	var out []vsphere.VMInfo
	for _, vm := range f.vms {
		if poolUID != "" && vm.Datacenter == datacenter && vm.Ownership.PoolUID == poolUID {
			out = append(out, *infoOf(vm))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ListMarkedVMs lists the VMs whose marker names any pool.
func (f *Fake) ListMarkedVMs(_ context.Context, datacenter string) ([]vsphere.VMInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ListMarkedVMs); err != nil {
		return nil, err
	}
	var out []vsphere.VMInfo
	for _, vm := range f.vms {
		if vm.Datacenter == datacenter && vm.Ownership.PoolUID != "" {
			out = append(out, *infoOf(vm))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// NICMACs lists the MAC of every VM in the datacenter (one NIC each), lower case.
func (f *Fake) NICMACs(_ context.Context, datacenter string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(NICMACs); err != nil {
		return nil, err
	}
	var out []string
	for _, vm := range f.vms {
		if vm.Datacenter == datacenter {
			out = append(out, strings.ToLower(vm.MACAddress))
		}
	}
	sort.Strings(out)
	return out, nil
}

// UploadISO stores the file at finalPath (the real client's temporary name and move are not modelled).
func (f *Fake) UploadISO(_ context.Context, _, finalPath string, r io.Reader, _ int64) error {
	return f.upload(UploadISO, finalPath, r)
}

// UploadFile stores the file at path.
func (f *Fake) UploadFile(_ context.Context, _, p string, r io.Reader, _ int64) error {
	return f.upload(UploadFile, p, r)
}

func (f *Fake) upload(m Method, p string, r io.Reader) error {
	var buf bytes.Buffer
	_, readErr := io.Copy(&buf, r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(m); err != nil {
		return err
	}
	if err := checkPath(string(m), p); err != nil {
		return err
	}
	if readErr != nil {
		return vsphere.NewError(vsphere.ClassTransient, string(m), "reading the upload: %v", readErr)
	}
	f.files[p] = fakeFile{size: int64(buf.Len()), modified: f.clock.Now()}
	return nil
}

// MoveFile renames a file, overwriting dstPath; a missing source is ClassNotFound.
func (f *Fake) MoveFile(_ context.Context, _, srcPath, dstPath string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(MoveFile); err != nil {
		return err
	}
	file, ok := f.files[srcPath]
	if !ok {
		return vsphere.NewError(vsphere.ClassNotFound, "MoveFile", "%s not found", srcPath)
	}
	delete(f.files, srcPath)
	f.files[dstPath] = file
	return nil
}

// StatFile returns the file or ClassNotFound.
func (f *Fake) StatFile(_ context.Context, _, p string) (*vsphere.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(StatFile); err != nil {
		return nil, err
	}
	file, ok := f.files[p]
	if !ok {
		return nil, vsphere.NewError(vsphere.ClassNotFound, "StatFile", "%s not found", p)
	}
	return &vsphere.FileInfo{Path: p, Name: path.Base(p), SizeBytes: file.size, Modified: file.modified}, nil
}

// ListFiles lists the files directly under dirPath ("[ds] dir").
func (f *Fake) ListFiles(_ context.Context, _, dirPath string) ([]vsphere.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ListFiles); err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(dirPath, "/") + "/"
	var out []vsphere.FileInfo
	for p, file := range f.files {
		if rest, ok := strings.CutPrefix(p, prefix); ok && !strings.Contains(rest, "/") {
			out = append(out, vsphere.FileInfo{Path: p, Name: rest, SizeBytes: file.size, Modified: file.modified})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// DeleteFile removes a file; absent is success.
func (f *Fake) DeleteFile(_ context.Context, _, p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(DeleteFile); err != nil {
		return err
	}
	delete(f.files, p)
	return nil
}

// VMsWithISO lists the names of every VM (any owner) with a CD-ROM backed by isoPath.
func (f *Fake) VMsWithISO(_ context.Context, datacenter, isoPath string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(VMsWithISO); err != nil {
		return nil, err
	}
	var out []string
	for _, vm := range f.vms {
		for _, cd := range vm.CDROMs {
			if vm.Datacenter == datacenter && cd.ISOPath == isoPath {
				out = append(out, vm.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// CheckPlacement reports the scripted problems (SetPlacementProblems).
func (f *Fake) CheckPlacement(_ context.Context, _ vsphere.PlacementSpec) ([]vsphere.PlacementProblem, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(CheckPlacement); err != nil {
		return nil, err
	}
	return append([]vsphere.PlacementProblem(nil), f.problems...), nil
}

// CheckPrivileges reports the scripted missing privileges (SetMissingPrivileges).
func (f *Fake) CheckPrivileges(_ context.Context, _ vsphere.PrivilegeSpec) ([]vsphere.MissingPrivileges, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(CheckPrivileges); err != nil {
		return nil, err
	}
	return append([]vsphere.MissingPrivileges(nil), f.missing...), nil
}

// ReadCapacity reports the scripted capacity (SetCapacity; RoomyCapacity by default).
func (f *Fake) ReadCapacity(_ context.Context, _ vsphere.CapacitySpec) (*vsphere.Capacity, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ReadCapacity); err != nil {
		return nil, err
	}
	c := f.capacity
	c.Datastores = append([]vsphere.DatastoreSpace(nil), c.Datastores...)
	return &c, nil
}

// ReadHostDevices reports the scripted hosts' devices (SetHostDevices).
func (f *Fake) ReadHostDevices(_ context.Context, _ vsphere.HostDevicesSpec) (*vsphere.HostDevices, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ReadHostDevices); err != nil {
		return nil, err
	}
	h := f.devices
	h.Hosts = append([]vsphere.HostPCI(nil), h.Hosts...)
	return &h, nil
}

// EjectISO disconnects and ejects one CD-ROM of an owned VM at once (no task, no lock question): Done.
func (f *Fake) EjectISO(_ context.Context, req vsphere.EjectRequest) (*vsphere.EjectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(EjectISO); err != nil {
		return nil, err
	}
	vm, ok := f.vms[req.InstanceUUID]
	if !ok || vm.Datacenter != req.Datacenter {
		return nil, vsphere.NewError(vsphere.ClassNotFound, vsphere.OpEject, "no VM with instance UUID %q", req.InstanceUUID)
	}
	if err := verifyOwnership(vsphere.OpEject, vm, req.Ownership); err != nil {
		return nil, err
	}
	for i := range vm.CDROMs {
		cd := &vm.CDROMs[i]
		if cd.Key != req.DeviceKey {
			continue
		}
		if cd.ISOPath != "" && cd.ISOPath != req.ExpectedISOPath {
			return nil, vsphere.NewError(vsphere.ClassRefused, vsphere.OpEject, "CD-ROM %d holds %q, not %q: media changed", cd.Key, cd.ISOPath, req.ExpectedISOPath)
		}
		cd.ISOPath, cd.Connected = "", false
		// As the real client: the finished step hands back its read of the VM.
		return &vsphere.EjectResult{State: vsphere.EjectDone, VM: infoOf(vm)}, nil
	}
	return nil, vsphere.NewError(vsphere.ClassRefused, vsphere.OpEject, "VM %q has no CD-ROM with key %d", vm.Name, req.DeviceKey)
}

// verifyOwnership refuses unless the VM's marker names the expected owner (and pool, when given), as the
// real client does before adopting or destroying a VM.
func verifyOwnership(op string, vm *VM, want vsphere.Ownership) error {
	have := vm.Ownership
	switch {
	case want.OwnerUID == "":
		return vsphere.NewError(vsphere.ClassOwnership, op, "no owner UID given for VM %q", vm.Name)
	case have.OwnerUID == "":
		return vsphere.NewError(vsphere.ClassOwnership, op, "VM %q carries no ownership marker", vm.Name)
	case have.OwnerUID != want.OwnerUID || (want.PoolUID != "" && have.PoolUID != want.PoolUID):
		return vsphere.NewError(vsphere.ClassOwnership, op, "VM %q is owned by %s (pool %s), not %s (pool %s)",
			vm.Name, have.OwnerUID, have.PoolUID, want.OwnerUID, want.PoolUID)
	}
	return nil
}

func checkPath(op, p string) error {
	if !strings.HasPrefix(p, "[") || !strings.Contains(p, "] ") {
		return vsphere.NewError(vsphere.ClassInvalid, op, "%q is not a datastore path \"[datastore] dir/file\"", p)
	}
	return nil
}

func infoOf(vm *VM) *vsphere.VMInfo {
	spec := vm.Spec
	return &vsphere.VMInfo{
		Name: vm.Name, InstanceUUID: vm.InstanceUUID, BIOSUUID: vm.BIOSUUID, MACAddress: vm.MACAddress,
		PoweredOn: vm.PoweredOn, Ownership: vm.Ownership, CDROMs: append([]vsphere.CDROM(nil), vm.CDROMs...),
		NumCPUs: spec.NumCPUs, MemoryMiB: spec.MemoryMiB, DiskGiB: spec.DiskGiB, Folder: strings.Trim(spec.Folder, "/"),
		DiskFirstBoot: spec.DiskGiB > 0 && !vm.BootsCDROMFirst,
	}
}

// Sessions hands out one Fake (or a scripted login error) for any credentials, counting the logins.
type Sessions struct {
	Client vsphere.Client

	mu     sync.Mutex
	err    error
	gets   int
	closed bool
}

// NewSessions serves c.
func NewSessions(c vsphere.Client) *Sessions { return &Sessions{Client: c} }

// FailLogin makes every Get fail with err (nil: logins succeed again).
func (s *Sessions) FailLogin(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Get returns the client or the scripted login error.
func (s *Sessions) Get(_ context.Context, _ vsphere.Credentials) (vsphere.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.err != nil {
		return nil, s.err
	}
	return s.Client, nil
}

// Gets returns how often Get was called.
func (s *Sessions) Gets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets
}

// Close marks the sessions closed.
func (s *Sessions) Close(context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}

// Transient is a retryable error of op (network trouble, a busy object), as the real client classifies it.
func Transient(op string) error {
	return vsphere.NewError(vsphere.ClassTransient, op, "connection reset by peer")
}

// NoPermission is vCenter's NoPermission fault on op.
func NoPermission(op, privilege string) error {
	return &vsphere.Error{Class: vsphere.ClassPermission, FaultType: "NoPermission", Op: op,
		Err: fmt.Errorf("permission to perform this operation was denied: %s", privilege)}
}

// InvalidPlacement is a create refused because an object of the placement does not resolve.
func InvalidPlacement(op, what string) error {
	return vsphere.NewError(vsphere.ClassInvalid, op, "%s not found", what)
}

package world

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// VM is what a booted host tells assisted-service about itself, as read from vSphere.
type VM struct {
	// Name is the VM's inventory name.
	Name string
	// Folder is the name of the VM's parent folder.
	Folder string
	// BIOSUUID is config.uuid (what the guest sees as its system UUID).
	BIOSUUID string
	// InstanceUUID is config.instanceUuid.
	InstanceUUID string
	// MAC is the first NIC's MAC address, lower case.
	MAC string
	// MACs are every NIC's MAC in device order (the first is MAC), lower case.
	MACs []string
	// ISOPath is the datastore path of the first connected ISO-backed CD-ROM ("" if none).
	ISOPath string
	// ISOSHA256 is the hex SHA-256 of the ISO file's content on the datastore, filled in by the
	// registration behaviour when it reads the file ("" before, or when it could not be read).
	ISOSHA256 string
	// NumCPU and MemoryMB are config.hardware.numCPU and memoryMB: what the guest sees.
	NumCPU   int32
	MemoryMB int32
	// Disks are the VM's virtual disks in device order.
	Disks []Disk
	// DiskUUIDEnabled is extraConfig disk.EnableUUID=TRUE: only then does the guest see the disks' UUIDs
	// (their serial numbers and WWNs).
	DiskUUIDEnabled bool
	// CDROMBootsFirst is whether firmware tries the CD-ROM before the disks at the next boot:
	// config.bootOptions.bootOrder puts a CD-ROM entry before every disk entry, or names no device at all
	// (the firmware's own order then decides; see the world's docs for the cautious choice).
	CDROMBootsFirst bool
	// BootTime is summary.runtime.bootTime, when the VM was last powered on (a reset counts: the host
	// starts again), zero when not reported.
	BootTime time.Time
}

// Disk is one virtual disk as the guest will see it.
type Disk struct {
	// CapacityBytes is capacityInBytes (or capacityInKB x 1024).
	CapacityBytes int64
	// UUID is the backing's uuid ("6000C29x-..."): with disk.EnableUUID it is the guest's disk serial.
	UUID string
}

// SerialFromBIOSUUID renders a BIOS UUID the way VMware firmware reports the system serial number:
// "VMware-42 1e 5c 3f 2b 8a 1c 9d-8e 7f 6a 5b 4c 3d 2e 1f" for 421e5c3f-2b8a-1c9d-8e7f-6a5b4c3d2e1f.
func SerialFromBIOSUUID(uuid string) string {
	h := strings.ToLower(strings.ReplaceAll(uuid, "-", ""))
	if len(h) != 32 {
		return ""
	}
	pairs := func(s string) string {
		out := make([]string, 0, len(s)/2)
		for i := 0; i < len(s); i += 2 {
			out = append(out, s[i:i+2])
		}
		return strings.Join(out, " ")
	}
	return "VMware-" + pairs(h[:16]) + "-" + pairs(h[16:])
}

// AgentNameFor derives the Agent name assisted-service would use for a host: a UUID-shaped host ID
// derived from (but not equal to) the BIOS UUID, so nothing can match Agents to VMs by name.
func AgentNameFor(biosUUID string) string {
	sum := sha1.Sum([]byte("assisted-host-id/" + strings.ToLower(biosUUID)))
	h := hex.EncodeToString(sum[:16])
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// vmReads keeps the last full read of each powered-on VM, keyed by its reference, with the
// config.changeVersion and boot time it was read at. vCenter changes config.changeVersion on every change
// of a VM's configuration (vSphere API reference, VirtualMachineConfigInfo.changeVersion), so a pass reads
// the small properties of every VM and the full configuration (devices, extra config, boot order) only of
// the VMs that changed or booted since, as a client watching many VMs does. Reading every VM in full on
// every pass made the world the largest CPU user of the scenario suite's process.
type vmReads struct {
	mu    sync.Mutex
	byRef map[types.ManagedObjectReference]vmRead
}

type vmRead struct {
	version  string
	bootTime time.Time
	vm       VM // without Name and Folder, which are read every pass
}

// vmSummaryProps are read of every VM on every pass; vmConfigProps of the VMs whose configuration changed
// or that booted since the last full read.
var (
	vmSummaryProps = []string{"name", "parent", "runtime.powerState", "config.changeVersion", "summary.runtime.bootTime"}
	vmConfigProps  = []string{"config.uuid", "config.instanceUuid", "config.hardware", "config.extraConfig", "config.bootOptions"}
)

// poweredOnVMs lists the powered-on VMs of the datacenter with their identity.
func (r *vmReads) poweredOnVMs(ctx context.Context, c *vim25.Client, datacenter string) ([]VM, error) {
	finder := find.NewFinder(c, false)
	var (
		dc interface {
			Reference() types.ManagedObjectReference
		}
		err error
	)
	if datacenter == "" {
		dc, err = finder.DefaultDatacenter(ctx)
	} else {
		dc, err = finder.Datacenter(ctx, datacenter)
	}
	if err != nil {
		return nil, fmt.Errorf("finding datacenter: %w", err)
	}
	v, err := view.NewManager(c).CreateContainerView(ctx, dc.Reference(), []string{"VirtualMachine"}, true)
	if err != nil {
		return nil, fmt.Errorf("creating VM view: %w", err)
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()

	var summaries []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, vmSummaryProps, &summaries); err != nil {
		return nil, fmt.Errorf("listing VMs: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byRef == nil {
		r.byRef = map[types.ManagedObjectReference]vmRead{}
	}
	seen := map[types.ManagedObjectReference]bool{}
	var stale []types.ManagedObjectReference
	for _, m := range summaries {
		if m.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn || m.Config == nil {
			continue
		}
		seen[m.Self] = true
		if got, ok := r.byRef[m.Self]; !ok || got.version != m.Config.ChangeVersion || !got.bootTime.Equal(bootTimeOf(m)) {
			stale = append(stale, m.Self)
		}
	}
	for ref := range r.byRef {
		if !seen[ref] {
			delete(r.byRef, ref)
		}
	}
	if len(stale) > 0 {
		var full []mo.VirtualMachine
		if err := property.DefaultCollector(c).Retrieve(ctx, stale, append(vmConfigProps, "config.changeVersion", "summary.runtime.bootTime"), &full); err != nil {
			if !fault.Is(err, &types.ManagedObjectNotFound{}) {
				return nil, fmt.Errorf("reading VMs: %w", err)
			}
			full = nil // one of them went away since the listing: read them again next pass
		}
		for _, m := range full {
			if m.Config != nil {
				r.byRef[m.Self] = vmRead{version: m.Config.ChangeVersion, bootTime: bootTimeOf(m), vm: vmFromConfig(m)}
			}
		}
	}
	folders := map[types.ManagedObjectReference]string{}
	out := make([]VM, 0, len(seen))
	for _, m := range summaries {
		got, ok := r.byRef[m.Self]
		if !ok || !seen[m.Self] {
			continue
		}
		vm := got.vm
		vm.Name = m.Name
		if m.Parent != nil {
			name, ok := folders[*m.Parent]
			if !ok {
				var f mo.Folder
				if err := v.Properties(ctx, *m.Parent, []string{"name"}, &f); err == nil {
					name = f.Name
				}
				folders[*m.Parent] = name
			}
			vm.Folder = name
		}
		out = append(out, vm)
	}
	return out, nil
}

func bootTimeOf(m mo.VirtualMachine) time.Time {
	if t := m.Summary.Runtime.BootTime; t != nil {
		return *t
	}
	return time.Time{}
}

// vmFromConfig is what a booted host reports of itself, from its VM's configuration.
func vmFromConfig(m mo.VirtualMachine) VM {
	vm := VM{BIOSUUID: m.Config.Uuid, InstanceUUID: m.Config.InstanceUuid,
		NumCPU: m.Config.Hardware.NumCPU, MemoryMB: m.Config.Hardware.MemoryMB, BootTime: bootTimeOf(m)}
	for _, o := range m.Config.ExtraConfig {
		if ov := o.GetOptionValue(); strings.EqualFold(ov.Key, "disk.EnableUUID") {
			vm.DiskUUIDEnabled = strings.EqualFold(fmt.Sprint(ov.Value), "true")
		}
	}
	vm.CDROMBootsFirst = cdromBootsFirst(m.Config.BootOptions)
	for _, dev := range m.Config.Hardware.Device {
		switch d := dev.(type) {
		case *types.VirtualDisk:
			disk := Disk{CapacityBytes: d.CapacityInBytes}
			if disk.CapacityBytes == 0 {
				disk.CapacityBytes = d.CapacityInKB * 1024
			}
			if b, ok := d.Backing.(*types.VirtualDiskFlatVer2BackingInfo); ok {
				disk.UUID = b.Uuid
			}
			vm.Disks = append(vm.Disks, disk)
		case types.BaseVirtualEthernetCard:
			if vm.MAC == "" {
				vm.MAC = strings.ToLower(d.GetVirtualEthernetCard().MacAddress)
			}
			vm.MACs = append(vm.MACs, strings.ToLower(d.GetVirtualEthernetCard().MacAddress))
		case *types.VirtualCdrom:
			if b, ok := d.Backing.(*types.VirtualCdromIsoBackingInfo); ok && vm.ISOPath == "" && cdromConnected(d) {
				vm.ISOPath = b.FileName
			}
		}
	}
	return vm
}

// stillPoweredOn reads a listed VM again by its BIOS UUID: whether it still exists and runs.
func stillPoweredOn(ctx context.Context, c *vim25.Client, vm VM) (bool, error) {
	ref, err := object.NewSearchIndex(c).FindByUuid(ctx, nil, vm.BIOSUUID, true, types.NewBool(false))
	if err != nil {
		return false, fmt.Errorf("finding VM %s: %w", vm.Name, err)
	}
	if ref == nil {
		return false, nil
	}
	var m mo.VirtualMachine
	if err := property.DefaultCollector(c).RetrieveOne(ctx, ref.Reference(), []string{"runtime.powerState"}, &m); err != nil {
		if fault.Is(err, &types.ManagedObjectNotFound{}) {
			return false, nil
		}
		return false, fmt.Errorf("reading VM %s: %w", vm.Name, err)
	}
	return m.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn, nil
}

// cdromBootsFirst reads the boot order: true when a CD-ROM entry comes before every disk entry, or when
// the order names no device (cautious: the firmware may try a bootable CD-ROM first).
func cdromBootsFirst(o *types.VirtualMachineBootOptions) bool {
	if o == nil {
		return true
	}
	for _, dev := range o.BootOrder {
		switch dev.(type) {
		case *types.VirtualMachineBootOptionsBootableCdromDevice:
			return true
		case *types.VirtualMachineBootOptionsBootableDiskDevice:
			return false
		}
	}
	return true
}

// cdromConnected reports whether a CD-ROM is (or will be at power-on) connected: a booting host
// reads the ISO only then.
func cdromConnected(d *types.VirtualCdrom) bool {
	c := d.Connectable
	return c == nil || c.Connected || c.StartConnected
}

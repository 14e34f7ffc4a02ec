package vsphere

import (
	"context"
	"regexp"
	"sort"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/pbm"
	pbmtypes "github.com/vmware/govmomi/pbm/types"
	"github.com/vmware/govmomi/vim25/types"
)

// Hardware is the optional hardware profile of a VM. The zero value changes nothing: the VM is the one
// created before the profile existed.
type Hardware struct {
	// NumCoresPerSocket, when > 0, groups the CPUs into sockets of that many cores.
	NumCoresPerSocket int32
	// MemoryReservationMiB, when > 0, reserves that much memory.
	MemoryReservationMiB int64
	// DataDisks are created after the boot disk, on its SCSI controller.
	DataDisks []DataDisk
	// StoragePolicyName is an SPBM policy applied to the VM home and every disk.
	StoragePolicyName string
	NestedHV          bool
	SecureBoot        bool
	// ExtraConfig is added to the VM's extraConfig; only AllowedExtraConfigKey keys are accepted.
	ExtraConfig map[string]string
	// PCIDevices are passthrough devices and vGPUs added to the VM (pcidevices.go); with any, all the
	// VM's memory is reserved (memoryReservationLockedToMax), as vSphere requires.
	PCIDevices []PCIDevice
}

// DataDisk is one extra disk.
type DataDisk struct {
	Name    string
	SizeGiB int32
	// Provisioning is Thin (default), Thick or EagerlyZeroed.
	Provisioning string
	// Datastore is a single datastore; empty means the boot disk's.
	Datastore string
}

// Provisioning modes of a DataDisk (the API's names).
const (
	ProvisioningThin          = "Thin"
	ProvisioningThick         = "Thick"
	ProvisioningEagerlyZeroed = "EagerlyZeroed"
)

// Disk is one virtual disk of a VM as read back.
type Disk struct {
	Key          int32
	SizeGiB      int32
	Datastore    string // datastore name from the backing file path
	Thin         bool
	EagerlyScrub bool
	UnitNumber   int32
}

// allowedExtraConfig mirrors the CRD's CEL allow-list, so the client refuses on its own what the API
// server refuses: guest data, NUMA and passthrough tuning, and CPU latency sensitivity. Never the
// ownership marker, disk.EnableUUID or a question/lock override.
var allowedExtraConfig = regexp.MustCompile(`^(guestinfo|numa|pciPassthru)\.[A-Za-z0-9_.-]+$`)

// AllowedExtraConfigKey reports whether a user may set this extraConfig key.
func AllowedExtraConfigKey(k string) bool {
	return len(k) <= 128 && (allowedExtraConfig.MatchString(k) || k == "sched.cpu.latencySensitivity")
}

// validateHardware refuses a profile the CRD would have refused (the client is safe on its own).
func validateHardware(spec VMSpec) error {
	h := spec.Hardware
	if h.NumCoresPerSocket < 0 || (h.NumCoresPerSocket > 0 && spec.NumCPUs%h.NumCoresPerSocket != 0) {
		return NewError(ClassInvalid, "CreateVM", "numCPUs %d is not a multiple of numCoresPerSocket %d", spec.NumCPUs, h.NumCoresPerSocket)
	}
	if h.MemoryReservationMiB < 0 || h.MemoryReservationMiB > spec.MemoryMiB {
		return NewError(ClassInvalid, "CreateVM", "memory reservation %d MiB exceeds memory %d MiB", h.MemoryReservationMiB, spec.MemoryMiB)
	}
	if h.SecureBoot && orDefault(spec.Firmware, DefaultFirmware) != "efi" {
		return NewError(ClassInvalid, "CreateVM", "secure boot needs efi firmware")
	}
	if h.HasPCIDevices() && h.MemoryReservationMiB != 0 && h.MemoryReservationMiB != spec.MemoryMiB {
		return NewError(ClassInvalid, "CreateVM", "a VM with PCI passthrough or vGPU devices reserves all its memory: memory reservation %d MiB must be 0 or %d MiB", h.MemoryReservationMiB, spec.MemoryMiB)
	}
	for _, d := range h.PCIDevices {
		if d.VGPUProfile == "" && (d.VendorID <= 0 || d.VendorID > 0xFFFF || d.DeviceID < 0 || d.DeviceID > 0xFFFF) {
			return NewError(ClassInvalid, "CreateVM", "%s: vendor and device ID must be 16-bit PCI IDs (vendor not 0)", d)
		}
	}
	for k := range h.ExtraConfig {
		if !AllowedExtraConfigKey(k) {
			return NewError(ClassInvalid, "CreateVM", "extraConfig key %q is not allowed", k)
		}
	}
	for _, d := range h.DataDisks {
		switch d.Provisioning {
		case "", ProvisioningThin, ProvisioningThick, ProvisioningEagerlyZeroed:
		default:
			return NewError(ClassInvalid, "CreateVM", "data disk %q: unknown provisioning mode %q", d.Name, d.Provisioning)
		}
		if d.SizeGiB <= 0 {
			return NewError(ClassInvalid, "CreateVM", "data disk %q: size must be positive", d.Name)
		}
	}
	return nil
}

// newDisk is a flat disk of sizeGiB allocated per mode.
func newDisk(sizeGiB int32, mode string) *types.VirtualDisk {
	return &types.VirtualDisk{
		VirtualDevice: types.VirtualDevice{
			Backing: &types.VirtualDiskFlatVer2BackingInfo{
				DiskMode:        string(types.VirtualDiskModePersistent),
				ThinProvisioned: types.NewBool(mode == "" || mode == ProvisioningThin),
				EagerlyScrub:    types.NewBool(mode == ProvisioningEagerlyZeroed),
			},
		},
		CapacityInKB: int64(sizeGiB) * 1024 * 1024,
	}
}

// bootProvisioning maps the pool's diskEagerlyScrub to a mode: eager-zeroed thick or thin, as before.
func bootProvisioning(eagerlyScrub bool) string {
	if eagerlyScrub {
		return ProvisioningEagerlyZeroed
	}
	return ProvisioningThin
}

// applyHardware sets the profile's VM-level knobs on cfg; policyID (resolved from StoragePolicyName) is
// set on the VM home and every disk being created.
func applyHardware(cfg *types.VirtualMachineConfigSpec, h Hardware, policyID string) {
	if h.NumCoresPerSocket > 0 {
		cfg.NumCoresPerSocket = types.NewInt32(h.NumCoresPerSocket)
	}
	switch {
	case h.HasPCIDevices():
		// vSphere powers on a VM with a passthrough or vGPU device only with all its memory reserved: lock
		// the reservation to the memory size ("Reserve all guest memory (All locked)").
		cfg.MemoryReservationLockedToMax = types.NewBool(true)
		cfg.MemoryAllocation = &types.ResourceAllocationInfo{Reservation: types.NewInt64(cfg.MemoryMB)}
	case h.MemoryReservationMiB > 0:
		cfg.MemoryAllocation = &types.ResourceAllocationInfo{Reservation: types.NewInt64(h.MemoryReservationMiB)}
	}
	if h.NestedHV {
		cfg.NestedHVEnabled = types.NewBool(true)
	}
	if h.SecureBoot {
		cfg.BootOptions = &types.VirtualMachineBootOptions{EfiSecureBootEnabled: types.NewBool(true)}
	}
	keys := make([]string, 0, len(h.ExtraConfig))
	for k := range h.ExtraConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cfg.ExtraConfig = append(cfg.ExtraConfig, &types.OptionValue{Key: k, Value: h.ExtraConfig[k]})
	}
	if policyID == "" {
		return
	}
	profile := func() []types.BaseVirtualMachineProfileSpec {
		return []types.BaseVirtualMachineProfileSpec{&types.VirtualMachineDefinedProfileSpec{ProfileId: policyID}}
	}
	cfg.VmProfile = profile()
	for _, ch := range cfg.DeviceChange {
		if spec := ch.GetVirtualDeviceConfigSpec(); spec.FileOperation == types.VirtualDeviceConfigSpecFileOperationCreate {
			if _, ok := spec.Device.(*types.VirtualDisk); ok {
				spec.Profile = profile()
			}
		}
	}
}

// storagePolicyID resolves an SPBM policy name to its profile ID through the session's PBM endpoint.
// A policy that does not exist is ClassInvalid (the pool names it; a preflight problem, not a blip).
func (c *client) storagePolicyID(ctx context.Context, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	pc, err := c.pbmClient(ctx)
	if err != nil {
		return "", err
	}
	ids, err := pc.QueryProfile(ctx, pbmtypes.PbmProfileResourceType{ResourceType: string(pbmtypes.PbmProfileResourceTypeEnumSTORAGE)},
		string(pbmtypes.PbmProfileCategoryEnumREQUIREMENT))
	if err != nil {
		return "", classify("QueryStoragePolicy", err)
	}
	profiles, err := pc.RetrieveContent(ctx, ids)
	if err != nil {
		return "", classify("QueryStoragePolicy", err)
	}
	for _, p := range profiles {
		if pp := p.GetPbmProfile(); pp.Name == name {
			return pp.ProfileId.UniqueId, nil
		}
	}
	return "", NewError(ClassInvalid, "QueryStoragePolicy", "storage policy %q not found", name)
}

// pbmClient is the session's storage policy (SPBM) client, created once; it shares the session cookie.
func (c *client) pbmClient(ctx context.Context) (*pbm.Client, error) {
	c.pbmMu.Lock()
	defer c.pbmMu.Unlock()
	if c.pbm != nil {
		return c.pbm, nil
	}
	// pbm.NewClient asks the new service client for its service content before it can be guarded.
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	pc, err := pbm.NewClient(ctx, c.vim)
	if err != nil {
		return nil, classify("ConnectStoragePolicyService", err)
	}
	c.guardServiceClient(pc.Client)
	c.pbm = pc
	return pc, nil
}

// disksOf lists a VM's virtual disks in bus order (boot disk first: unit 0 of the first controller).
func disksOf(devices object.VirtualDeviceList) []Disk {
	var disks []Disk
	ctrl := map[int32]int32{}
	for _, d := range devices.SelectByType((*types.VirtualDisk)(nil)) {
		disk := d.(*types.VirtualDisk)
		out := Disk{Key: disk.Key, SizeGiB: int32(disk.CapacityInKB / (1024 * 1024))}
		if disk.UnitNumber != nil {
			out.UnitNumber = *disk.UnitNumber
		}
		ctrl[disk.Key] = disk.ControllerKey
		if b, ok := disk.Backing.(*types.VirtualDiskFlatVer2BackingInfo); ok {
			var p object.DatastorePath
			if p.FromString(b.FileName) {
				out.Datastore = p.Datastore
			}
			out.Thin = b.ThinProvisioned != nil && *b.ThinProvisioned
			out.EagerlyScrub = b.EagerlyScrub != nil && *b.EagerlyScrub
		}
		disks = append(disks, out)
	}
	sort.SliceStable(disks, func(i, j int) bool {
		if ci, cj := ctrl[disks[i].Key], ctrl[disks[j].Key]; ci != cj {
			return ci < cj
		}
		return disks[i].UnitNumber < disks[j].UnitNumber
	})
	return disks
}

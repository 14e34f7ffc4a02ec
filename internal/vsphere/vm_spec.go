package vsphere

import (
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
)

// Defaults for VMSpec knobs left empty (the CRD defaults them too; these keep the client safe on its own).
const (
	DefaultGuestID        = "rhel9_64Guest"
	DefaultSCSIType       = "pvscsi"
	DefaultFirmware       = "efi"
	DefaultNetworkAdapter = "vmxnet3"
)

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// configSpec builds the CreateVM config: SCSI controller + disk, IDE controller + CD-ROM with the ISO,
// one NIC, disk.EnableUUID, the ownership marker and the instance UUID = owner UID. It returns the disk
// so placement can pin it to a datastore.
func configSpec(spec VMSpec, nicBacking types.BaseVirtualDeviceBackingInfo) (types.VirtualMachineConfigSpec, *types.VirtualDisk, error) {
	var devices object.VirtualDeviceList

	scsi, err := devices.CreateSCSIController(orDefault(spec.SCSIType, DefaultSCSIType))
	if err != nil {
		return types.VirtualMachineConfigSpec{}, nil, NewError(ClassInvalid, "CreateVM", "scsiType: %v", err)
	}
	devices = append(devices, scsi)

	disk := &types.VirtualDisk{
		VirtualDevice: types.VirtualDevice{
			Key: devices.NewKey(),
			Backing: &types.VirtualDiskFlatVer2BackingInfo{
				DiskMode:        string(types.VirtualDiskModePersistent),
				ThinProvisioned: types.NewBool(!spec.EagerlyScrub),
				EagerlyScrub:    types.NewBool(spec.EagerlyScrub),
			},
		},
		CapacityInKB: int64(spec.DiskGiB) * 1024 * 1024,
	}
	devices.AssignController(disk, scsi.(types.BaseVirtualController))
	devices = append(devices, disk)

	ide, _ := devices.CreateIDEController()
	devices = append(devices, ide)
	cdrom, err := devices.CreateCdrom(ide.(types.BaseVirtualController))
	if err != nil {
		return types.VirtualMachineConfigSpec{}, nil, NewError(ClassInvalid, "CreateVM", "cdrom: %v", err)
	}
	cdrom.Key = devices.NewKey()
	if spec.ISOPath != "" {
		cdrom = devices.InsertIso(cdrom, spec.ISOPath)
	}
	devices = append(devices, cdrom)

	nic, err := devices.CreateEthernetCard(orDefault(spec.NetworkAdapter, DefaultNetworkAdapter), nicBacking)
	if err != nil {
		return types.VirtualMachineConfigSpec{}, nil, NewError(ClassInvalid, "CreateVM", "networkAdapterType: %v", err)
	}
	nic.GetVirtualDevice().Key = devices.NewKey()
	devices = append(devices, nic)

	changes, err := devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd)
	if err != nil {
		return types.VirtualMachineConfigSpec{}, nil, NewError(ClassInvalid, "CreateVM", "devices: %v", err)
	}

	o := spec.Ownership
	cfg := types.VirtualMachineConfigSpec{
		Name:         spec.Name,
		GuestId:      orDefault(spec.GuestID, DefaultGuestID),
		Firmware:     orDefault(spec.Firmware, DefaultFirmware),
		NumCPUs:      spec.NumCPUs,
		MemoryMB:     spec.MemoryMiB,
		InstanceUuid: o.OwnerUID,
		Annotation:   "Managed by agent-forge-operator for " + o.OwnerName + " (pool " + o.PoolName + ")",
		DeviceChange: changes,
		ExtraConfig: []types.BaseOptionValue{
			&types.OptionValue{Key: ExtraConfigDiskUUID, Value: "TRUE"},
			&types.OptionValue{Key: ExtraConfigOwnerUID, Value: o.OwnerUID},
			&types.OptionValue{Key: ExtraConfigOwner, Value: o.OwnerName},
			&types.OptionValue{Key: ExtraConfigPoolUID, Value: o.PoolUID},
			&types.OptionValue{Key: ExtraConfigPool, Value: o.PoolName},
		},
	}
	return cfg, disk, nil
}

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

// configSpec builds the CreateVM config: SCSI controller + boot disk (+ the profile's data disks), IDE
// controller + CD-ROM with the ISO, the NICs in order (nicBackings: one per NIC, the first NIC's
// first), the profile's PCI passthrough and vGPU devices, disk.EnableUUID, the ownership marker, the instance UUID =
// owner UID and the hardware profile (policyID: its storage policy, resolved). It returns the disks,
// boot disk first, so placement can pin them to datastores.
func configSpec(spec VMSpec, nicBackings []types.BaseVirtualDeviceBackingInfo, policyID string) (types.VirtualMachineConfigSpec, []*types.VirtualDisk, error) {
	var devices object.VirtualDeviceList

	scsi, err := devices.CreateSCSIController(orDefault(spec.SCSIType, DefaultSCSIType))
	if err != nil {
		return types.VirtualMachineConfigSpec{}, nil, NewError(ClassInvalid, "CreateVM", "scsiType: %v", err)
	}
	devices = append(devices, scsi)

	disks := make([]*types.VirtualDisk, 0, 1+len(spec.Hardware.DataDisks))
	addDisk := func(sizeGiB int32, mode string) {
		disk := newDisk(sizeGiB, mode)
		disk.Key = devices.NewKey()
		devices.AssignController(disk, scsi.(types.BaseVirtualController))
		devices = append(devices, disk)
		disks = append(disks, disk)
	}
	addDisk(spec.DiskGiB, bootProvisioning(spec.EagerlyScrub))
	for _, d := range spec.Hardware.DataDisks {
		addDisk(d.SizeGiB, d.Provisioning)
	}

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

	nics := append([]NIC{{Network: spec.Network, Adapter: spec.NetworkAdapter, MACAddress: spec.MACAddress}}, spec.AdditionalNICs...)
	if len(nicBackings) != len(nics) {
		return types.VirtualMachineConfigSpec{}, nil, NewError(ClassInvalid, "CreateVM", "%d network backings for %d NICs", len(nicBackings), len(nics))
	}
	for i, n := range nics {
		nic, err := devices.CreateEthernetCard(orDefault(n.Adapter, DefaultNetworkAdapter), nicBackings[i])
		if err != nil {
			return types.VirtualMachineConfigSpec{}, nil, NewError(ClassInvalid, "CreateVM", "NIC %d (%s) adapter type: %v", i, n.Network, err)
		}
		nic.GetVirtualDevice().Key = devices.NewKey()
		manualMAC(nic, n.MACAddress)
		devices = append(devices, nic)
	}

	for _, d := range spec.Hardware.PCIDevices {
		devices = append(devices, pciPassthroughDevice(d, devices.NewKey()))
	}

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
	applyHardware(&cfg, spec.Hardware, policyID)
	return cfg, disks, nil
}

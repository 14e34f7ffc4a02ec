package world

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// inventory is the host inventory the discovery agent reports for vm (the Agent's status.inventory):
// the hardware the simulator holds for the VM, as a RHCOS live system on VMware sees it.
func (d *Driver) inventory(vm VM) map[string]any {
	mac := strings.ToLower(vm.MAC)
	hostname := d.opts.ReportedHostname
	if hostname == "" {
		// The agent replaces a forbidden name (no name from DHCP: localhost) by its NIC's MAC with dashes
		// (assisted-installer-agent src/inventory: calculateHostname).
		hostname = strings.ReplaceAll(mac, ":", "-")
	}
	memory := int64(vm.MemoryMB) << 20
	return map[string]any{
		"hostname": hostname,
		"cpu": map[string]any{
			"count": int64(vm.NumCPU), "architecture": "x86_64", "clockMegahertz": int64(2294),
			"modelName": "Intel(R) Xeon(R) Gold 6140 CPU @ 2.30GHz", "flags": []any{"fpu", "vme", "sse4_2", "avx2", "hypervisor"},
		},
		// usableBytes is what the kernel leaves; the validations read physicalBytes.
		"memory": map[string]any{"physicalBytes": memory, "usableBytes": memory - memory/32},
		"disks":  d.inventoryDisks(vm),
		// HostInterface: flags, ipV4Addresses and ipV6Addresses are required by the Agent CRD
		// (no omitempty in agent_types.go).
		"interfaces": d.inventoryInterfaces(vm),
		"systemVendor": map[string]any{
			"serialNumber": SerialFromBIOSUUID(vm.BIOSUUID), "productName": "VMware7,1",
			"manufacturer": "VMware, Inc.", "virtual": true,
		},
		"boot": map[string]any{"currentBootMode": "uefi"},
	}
}

// inventoryInterfaces lists every NIC of the VM (RHCOS names them by vSphere's PCI slots: ens192,
// ens224, ...), each with the addresses its network configuration gave it.
func (d *Driver) inventoryInterfaces(vm VM) []any {
	macs := vm.MACs
	if len(macs) == 0 {
		macs = []string{strings.ToLower(vm.MAC)}
	}
	out := make([]any, 0, len(macs))
	for i, mac := range macs {
		v4, v6 := d.reportedNIC(vm, mac)
		out = append(out, map[string]any{
			"name": fmt.Sprintf("ens%d", 192+32*i), "macAddress": mac, "speedMbps": int64(10000), "mtu": int64(1500),
			"hasCarrier": true, "vendor": "0x15ad", "product": "0x07b0",
			"flags":         []any{"up", "broadcast", "running", "multicast"},
			"ipV4Addresses": v4, "ipV6Addresses": v6,
		})
	}
	return out
}

// inventoryDisks lists the VM's disks (sda, sdb, ... on the SCSI controller) and its CD-ROM (sr0).
// With disk.EnableUUID the guest sees each disk's UUID as its serial and WWN, and udev names it
// /dev/disk/by-id/wwn-0x<uuid>; without it a disk has neither. A disk is eligible for installation when
// it holds the role's minimum (decimal GB, as the service's DiskIsEligible); the CD-ROM never is.
func (d *Driver) inventoryDisks(vm VM) []any {
	minBytes := d.roleRequirements("auto-assign").DiskSizeGB * 1_000_000_000
	var out []any
	for i, disk := range vm.Disks {
		name := "sd" + string(rune('a'+i))
		m := map[string]any{
			"id": "/dev/" + name, "name": name, "path": "/dev/" + name, "driveType": "HDD",
			"sizeBytes": disk.CapacityBytes, "model": "Virtual disk", "vendor": "VMware",
			"hctl": fmt.Sprintf("0:0:%d:0", i), "bootable": false, "smart": `{"json_format_version":[1,0]}`,
			"byPath": fmt.Sprintf("/dev/disk/by-path/pci-0000:03:00.0-scsi-0:0:%d:0", i),
		}
		if id := strings.ToLower(strings.ReplaceAll(disk.UUID, "-", "")); vm.DiskUUIDEnabled && id != "" {
			m["serial"], m["wwn"] = id, "0x"+id
			m["byID"] = "/dev/disk/by-id/wwn-0x" + id
			m["id"] = m["byID"]
		}
		reasons := []any{}
		if disk.CapacityBytes < minBytes {
			reasons = append(reasons, fmt.Sprintf("Disk is too small (disk only has %s, but %s are required)",
				humanizeBytes(disk.CapacityBytes), humanizeBytes(minBytes)))
		}
		m["installationEligibility"] = map[string]any{"eligible": len(reasons) == 0, "notEligibleReasons": reasons}
		out = append(out, m)
	}
	if vm.ISOPath != "" {
		out = append(out, map[string]any{
			"id": "/dev/sr0", "name": "sr0", "path": "/dev/sr0", "driveType": "ODD", "sizeBytes": int64(0),
			"model": "VMware SATA CD00", "vendor": "NECVMWar", "bootable": true, "hctl": "1:0:0:0",
			"installationEligibility": map[string]any{"eligible": false,
				"notEligibleReasons": []any{"Drive type is ODD, it must be one of HDD, SSD."}},
		})
	}
	return out
}

// installationDisk names the disk an installed host booted from, as the wrong-boot-order status info
// names it: "<serial> (<name>, <by-id>)" (PostRegisterDuringReboot).
func installationDisk(agent map[string]any) string {
	disks, _, _ := unstructured.NestedSlice(agent, "status", "inventory", "disks")
	for _, d := range disks {
		m, _ := d.(map[string]any)
		if e, _ := m["installationEligibility"].(map[string]any); e != nil && e["eligible"] == true {
			name, _ := m["name"].(string)
			if serial, _ := m["serial"].(string); serial != "" {
				return fmt.Sprintf("%s (%s, %v)", serial, name, m["byID"])
			}
			return "/dev/" + name
		}
	}
	return ""
}

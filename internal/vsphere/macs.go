package vsphere

import (
	"context"
	"sort"
	"strings"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// NICMACs lists the MAC of every NIC of every VM in the datacenter (any owner, any power state), lower
// case: a MAC the operator assigns by hand must not already be on the network.
func (c *client) NICMACs(ctx context.Context, datacenter string) ([]string, error) {
	var macs []string
	err := c.eachVM(ctx, datacenter, []string{"config.hardware.device"}, func(vm *mo.VirtualMachine) {
		if vm.Config == nil {
			return
		}
		for _, dev := range vm.Config.Hardware.Device {
			if nic, ok := dev.(types.BaseVirtualEthernetCard); ok && nic.GetVirtualEthernetCard().MacAddress != "" {
				macs = append(macs, strings.ToLower(nic.GetVirtualEthernetCard().MacAddress))
			}
		}
	})
	sort.Strings(macs)
	return macs, observe("nic-macs", err)
}

// manualMAC sets a NIC's MAC by hand (VMware's static range; vCenter refuses others).
func manualMAC(nic types.BaseVirtualDevice, mac string) {
	card, ok := nic.(types.BaseVirtualEthernetCard)
	if !ok || mac == "" {
		return
	}
	c := card.GetVirtualEthernetCard()
	c.AddressType = string(types.VirtualEthernetCardMacTypeManual)
	c.MacAddress = strings.ToLower(mac)
}

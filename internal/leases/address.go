package leases

import (
	"fmt"
	"net/netip"
)

// ValidateAddress checks an IPAddress's spec before it is written into an NMStateConfig: a host with
// a prefix or gateway that cannot work boots without a usable network and never registers, so such an
// address is refused instead. Rules: the address and gateway parse and are of one family; the prefix
// is in range for the family (IPv4 0..32, IPv6 0..128); a gateway is not the address itself and lies
// inside address/prefix (so a /32 or /128 leaves no room for one); on IPv4 prefixes up to /30 neither
// the address nor the gateway is the network or broadcast address (a /31 is point-to-point, RFC 3021:
// both addresses are hosts); on IPv6 prefixes up to /126 the address is not the subnet-router anycast
// address (all host bits zero). An IPv6 gateway may also be link-local (fe80::/10: routers advertise
// themselves so), reached through the NIC whatever its prefix.
func ValidateAddress(a Address) error {
	addr, err := netip.ParseAddr(a.Address)
	if err != nil || addr.Zone() != "" {
		return fmt.Errorf("address %q is not an IP address", a.Address)
	}
	bits := addr.BitLen()
	if a.Prefix < 0 || int(a.Prefix) > bits {
		return fmt.Errorf("prefix /%d is out of range for %s (0..%d)", a.Prefix, a.Address, bits)
	}
	subnet := netip.PrefixFrom(addr, int(a.Prefix)).Masked()
	if err := hostAddress(addr, subnet, "address"); err != nil {
		return err
	}
	if addr.Is6() && addr.IsLinkLocalUnicast() {
		return fmt.Errorf("address %s is link-local: the host makes its own, a lease needs a routable one", addr)
	}
	if a.Gateway != "" {
		gw, err := netip.ParseAddr(a.Gateway)
		if err != nil || gw.Zone() != "" {
			return fmt.Errorf("gateway %q is not an IP address", a.Gateway)
		}
		switch {
		case gw.Is4() != addr.Is4():
			return fmt.Errorf("gateway %s and address %s are of different IP families", gw, addr)
		case gw == addr:
			return fmt.Errorf("gateway %s is the address itself", gw)
		case gw.Is6() && gw.IsLinkLocalUnicast():
			return nil // on-link by definition
		case int(a.Prefix) == bits:
			return fmt.Errorf("address %s/%d leaves no room for gateway %s", addr, a.Prefix, gw)
		case !subnet.Contains(gw):
			return fmt.Errorf("gateway %s is not inside %s/%d", gw, addr, a.Prefix)
		}
		if err := hostAddress(gw, subnet, "gateway"); err != nil {
			return err
		}
	}
	return nil
}

// Family is an address's IP family, "IPv4" or "IPv6" ("" when it does not parse).
func (a Address) Family() string {
	addr, err := netip.ParseAddr(a.Address)
	switch {
	case err != nil:
		return ""
	case addr.Is4():
		return "IPv4"
	}
	return "IPv6"
}

// ValidateNIC checks the addresses one NIC gets (one per IPAM pool of the NIC, each valid on its own):
// at most one per IP family, since a second pool of a family would be a second address where the
// operator promises dual-stack. nic names the NIC in the error.
func ValidateNIC(nic string, addrs []Address) error {
	seen := map[string]string{}
	for _, a := range addrs {
		f := a.Family()
		if prev, ok := seen[f]; ok && f != "" {
			return fmt.Errorf("%s gets two %s addresses (%s and %s): its addressesFromPools must name one IPv4 and one IPv6 pool", nic, f, prev, a.CIDR())
		}
		seen[f] = a.CIDR()
	}
	return nil
}

// hostAddress refuses the network and broadcast address of an IPv4 subnet of /30 or wider, and the
// subnet-router anycast address of an IPv6 subnet of /126 or wider (the address only; a router may
// answer it, so a gateway may be it).
func hostAddress(ip netip.Addr, subnet netip.Prefix, what string) error {
	if ip.Is6() {
		if what == "address" && subnet.Bits() <= 126 && ip == subnet.Addr() {
			return fmt.Errorf("%s %s is the subnet-router anycast address of %s", what, ip, subnet)
		}
		return nil
	}
	if subnet.Bits() > 30 {
		return nil
	}
	if ip == subnet.Addr() {
		return fmt.Errorf("%s %s is the network address of %s", what, ip, subnet)
	}
	b := subnet.Addr().As4()
	host := uint32(1)<<(32-subnet.Bits()) - 1
	n := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) | host
	if ip == netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}) {
		return fmt.Errorf("%s %s is the broadcast address of %s", what, ip, subnet)
	}
	return nil
}

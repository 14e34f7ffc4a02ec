package leases

import (
	"fmt"
	"net/netip"
	"strings"
)

// Route is one extra static route.
type Route struct {
	To, Via string
	Metric  *int32
}

// Interface is one NIC of a lease's NMStateConfig: the name spec.config uses for it, the MAC
// assisted-service maps that name to (spec.interfaces), and its static addresses (at most one per family).
type Interface struct {
	Name      string
	MAC       string
	Addresses []Address
}

// Config is what one lease's NMStateConfig says about the VM's NICs: the ones with static addresses, the
// first NIC (the machine network) first; its gateways are the default routes.
type Config struct {
	Interfaces  []Interface
	Nameservers []string
	Routes      []Route
}

// NMState renders the nmstate document of spec.config (the YAML assisted-service hands to nmstate on the
// host; each interface is matched by its MAC): per NIC its static addresses, IPv4 and IPv6 each enabled
// only when the NIC has an address of that family (no DHCP, no autoconf); the default routes (0.0.0.0/0,
// ::/0) through the first NIC's gateways; extra routes, each out of the NIC whose subnet holds its next
// hop (else the first NIC); and the DNS servers.
func NMState(c Config) (map[string]any, error) {
	if len(c.Interfaces) == 0 {
		return nil, fmt.Errorf("no interface with static addresses")
	}
	var ifaces, routes []any
	type subnet struct {
		prefix netip.Prefix
		iface  string
	}
	var subnets []subnet
	for i, nic := range c.Interfaces {
		if nic.Name == "" || nic.MAC == "" || len(nic.Addresses) == 0 {
			return nil, fmt.Errorf("interface %d (%q): a name, a MAC and an address are needed", i, nic.Name)
		}
		if err := ValidateNIC(nic.Name, nic.Addresses); err != nil {
			return nil, err
		}
		v4 := map[string]any{"enabled": false}
		v6 := map[string]any{"enabled": false}
		for _, a := range nic.Addresses {
			addr, err := netip.ParseAddr(a.Address)
			if err != nil {
				return nil, fmt.Errorf("address %q: %w", a.Address, err)
			}
			entry := []any{map[string]any{"ip": addr.String(), "prefix-length": int64(a.Prefix)}}
			dest := "0.0.0.0/0"
			if addr.Is4() {
				v4 = map[string]any{"enabled": true, "dhcp": false, "address": entry}
			} else {
				v6 = map[string]any{"enabled": true, "dhcp": false, "autoconf": false, "address": entry}
				dest = "::/0"
			}
			subnets = append(subnets, subnet{netip.PrefixFrom(addr, int(a.Prefix)).Masked(), nic.Name})
			if i == 0 && a.Gateway != "" {
				routes = append(routes, map[string]any{"destination": dest, "next-hop-address": a.Gateway, "next-hop-interface": nic.Name, "table-id": int64(254)})
			}
		}
		ifaces = append(ifaces, map[string]any{
			"name": nic.Name, "type": "ethernet", "state": "up", "mac-address": strings.ToUpper(nic.MAC), "ipv4": v4, "ipv6": v6,
		})
	}
	for _, r := range c.Routes {
		out := c.Interfaces[0].Name
		if via, err := netip.ParseAddr(r.Via); err == nil {
			for _, s := range subnets {
				if s.prefix.Contains(via) {
					out = s.iface
					break
				}
			}
		}
		route := map[string]any{"destination": r.To, "next-hop-address": r.Via, "next-hop-interface": out, "table-id": int64(254)}
		if r.Metric != nil {
			route["metric"] = int64(*r.Metric)
		}
		routes = append(routes, route)
	}
	doc := map[string]any{"interfaces": ifaces}
	if len(routes) > 0 {
		doc["routes"] = map[string]any{"config": routes}
	}
	if len(c.Nameservers) > 0 {
		servers := make([]any, 0, len(c.Nameservers))
		for _, s := range c.Nameservers {
			servers = append(servers, s)
		}
		doc["dns-resolver"] = map[string]any{"config": map[string]any{"server": servers}}
	}
	return doc, nil
}

// NMStateInterfaces is spec.interfaces of the NMStateConfig: each name spec.config uses with its MAC.
func NMStateInterfaces(c Config) []any {
	out := make([]any, 0, len(c.Interfaces))
	for _, nic := range c.Interfaces {
		out = append(out, map[string]any{"name": nic.Name, "macAddress": nic.MAC})
	}
	return out
}

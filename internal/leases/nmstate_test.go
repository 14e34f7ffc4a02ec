package leases

import (
	"reflect"
	"strings"
	"testing"
)

func TestNMState(t *testing.T) {
	mac0, mac1 := "00:50:56:01:02:03", "00:50:56:0a:0b:0c"
	v4 := Address{Address: "10.0.0.21", Prefix: 24, Gateway: "10.0.0.1"}
	v6 := Address{Address: "fd00::21", Prefix: 64, Gateway: "fd00::1"}
	storage := Address{Address: "192.168.5.7", Prefix: 24, Gateway: "192.168.5.1"}
	storage6 := Address{Address: "fd05::7", Prefix: 64}
	metric := int32(50)
	route := func(dest, via, iface string) map[string]any {
		return map[string]any{"destination": dest, "next-hop-address": via, "next-hop-interface": iface, "table-id": int64(254)}
	}
	addr := func(ip string, prefix int64) []any { return []any{map[string]any{"ip": ip, "prefix-length": prefix}} }
	off := map[string]any{"enabled": false}
	for _, tc := range []struct {
		name   string
		c      Config
		ifaces []any
		routes []any
		dns    []any
		err    string
	}{
		{
			name: "IPv4 on one NIC, as before: IPv6 disabled",
			c: Config{Interfaces: []Interface{{Name: "ens192", MAC: mac0, Addresses: []Address{v4}}},
				Nameservers: []string{"10.0.0.53"}, Routes: []Route{{To: "192.168.0.0/16", Via: "10.0.0.254", Metric: &metric}}},
			ifaces: []any{map[string]any{"name": "ens192", "type": "ethernet", "state": "up", "mac-address": "00:50:56:01:02:03",
				"ipv4": map[string]any{"enabled": true, "dhcp": false, "address": addr("10.0.0.21", 24)}, "ipv6": off}},
			routes: []any{route("0.0.0.0/0", "10.0.0.1", "ens192"),
				map[string]any{"destination": "192.168.0.0/16", "next-hop-address": "10.0.0.254", "next-hop-interface": "ens192", "table-id": int64(254), "metric": int64(50)}},
			dns: []any{"10.0.0.53"},
		},
		{
			name: "IPv6 only: IPv4 disabled, no DHCP nor autoconf, ::/0 through the gateway",
			c:    Config{Interfaces: []Interface{{Name: "ens192", MAC: mac0, Addresses: []Address{v6}}}, Nameservers: []string{"fd00::53"}},
			ifaces: []any{map[string]any{"name": "ens192", "type": "ethernet", "state": "up", "mac-address": "00:50:56:01:02:03",
				"ipv4": off, "ipv6": map[string]any{"enabled": true, "dhcp": false, "autoconf": false, "address": addr("fd00::21", 64)}}},
			routes: []any{route("::/0", "fd00::1", "ens192")},
			dns:    []any{"fd00::53"},
		},
		{
			name: "dual-stack first NIC and a dual-stack second NIC: default routes only through the first",
			c: Config{Interfaces: []Interface{
				{Name: "ens192", MAC: mac0, Addresses: []Address{v4, v6}},
				{Name: "ens224", MAC: mac1, Addresses: []Address{storage6, storage}},
			}, Routes: []Route{{To: "172.16.0.0/12", Via: "192.168.5.254"}, {To: "fd10::/48", Via: "fd05::1"}, {To: "10.8.0.0/16", Via: "10.9.9.9"}}},
			ifaces: []any{
				map[string]any{"name": "ens192", "type": "ethernet", "state": "up", "mac-address": "00:50:56:01:02:03",
					"ipv4": map[string]any{"enabled": true, "dhcp": false, "address": addr("10.0.0.21", 24)},
					"ipv6": map[string]any{"enabled": true, "dhcp": false, "autoconf": false, "address": addr("fd00::21", 64)}},
				map[string]any{"name": "ens224", "type": "ethernet", "state": "up", "mac-address": "00:50:56:0A:0B:0C",
					"ipv4": map[string]any{"enabled": true, "dhcp": false, "address": addr("192.168.5.7", 24)},
					"ipv6": map[string]any{"enabled": true, "dhcp": false, "autoconf": false, "address": addr("fd05::7", 64)}},
			},
			routes: []any{route("0.0.0.0/0", "10.0.0.1", "ens192"), route("::/0", "fd00::1", "ens192"),
				route("172.16.0.0/12", "192.168.5.254", "ens224"), route("fd10::/48", "fd05::1", "ens224"), route("10.8.0.0/16", "10.9.9.9", "ens192")},
		},
		{name: "two IPv4 addresses on one NIC", c: Config{Interfaces: []Interface{{Name: "ens192", MAC: mac0, Addresses: []Address{v4, storage}}}}, err: "two IPv4 addresses"},
		{name: "no interface", c: Config{}, err: "no interface"},
		{name: "a NIC without MAC", c: Config{Interfaces: []Interface{{Name: "ens192", Addresses: []Address{v4}}}}, err: "a name, a MAC and an address"},
		{name: "not an address", c: Config{Interfaces: []Interface{{Name: "ens192", MAC: mac0, Addresses: []Address{{Address: "10.0.0"}}}}}, err: "10.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := NMState(tc.c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(doc["interfaces"], tc.ifaces) {
				t.Errorf("interfaces\n got %v\nwant %v", doc["interfaces"], tc.ifaces)
			}
			var routes []any
			if r, ok := doc["routes"].(map[string]any); ok {
				routes = r["config"].([]any)
			}
			if !reflect.DeepEqual(routes, tc.routes) {
				t.Errorf("routes\n got %v\nwant %v", routes, tc.routes)
			}
			var dns []any
			if d, ok := doc["dns-resolver"].(map[string]any); ok {
				dns = d["config"].(map[string]any)["server"].([]any)
			}
			if !reflect.DeepEqual(dns, tc.dns) {
				t.Errorf("dns %v, want %v", dns, tc.dns)
			}
			want := make([]any, 0, len(tc.c.Interfaces))
			for _, nic := range tc.c.Interfaces {
				want = append(want, map[string]any{"name": nic.Name, "macAddress": nic.MAC})
			}
			if got := NMStateInterfaces(tc.c); !reflect.DeepEqual(got, want) {
				t.Errorf("spec.interfaces %v, want %v", got, want)
			}
		})
	}
}

package leases

import (
	"strings"
	"testing"
)

func TestValidateAddress(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Address
		want string // "" valid, else a part of the error
	}{
		{"a host with its gateway in the subnet", Address{"10.0.0.21", 24, "10.0.0.1"}, ""},
		{"no gateway", Address{"10.0.0.21", 24, ""}, ""},
		{"a /32 without a gateway", Address{"10.0.0.21", 32, ""}, ""},
		{"a /31 point-to-point with its peer as gateway", Address{"10.0.0.0", 31, "10.0.0.1"}, ""},
		{"a /16 gateway in another octet", Address{"10.0.3.21", 16, "10.0.0.1"}, ""},
		{"gateway outside the subnet", Address{"10.0.0.21", 24, "10.0.1.1"}, "not inside 10.0.0.21/24"},
		{"gateway outside a /30", Address{"10.0.0.5", 30, "10.0.0.9"}, "not inside"},
		{"gateway equal to the address", Address{"10.0.0.21", 24, "10.0.0.21"}, "the address itself"},
		{"a /32 with a gateway", Address{"10.0.0.21", 32, "10.0.0.1"}, "no room for gateway"},
		{"IPv4 prefix above 32", Address{"10.0.0.21", 33, "10.0.0.1"}, "out of range"},
		{"negative prefix", Address{"10.0.0.21", -1, ""}, "out of range"},
		{"IPv6 prefix above 128", Address{"fd00::5", 129, ""}, "out of range"},
		{"IPv4 address, IPv6 gateway", Address{"10.0.0.21", 24, "fd00::1"}, "different IP families"},
		{"IPv6 address, IPv4 gateway", Address{"fd00::5", 64, "10.0.0.1"}, "different IP families"},
		{"the network address", Address{"10.0.0.0", 24, "10.0.0.1"}, "network address"},
		{"the broadcast address", Address{"10.0.0.255", 24, "10.0.0.1"}, "broadcast address"},
		{"the gateway is the broadcast address", Address{"10.0.0.21", 24, "10.0.0.255"}, "broadcast address"},
		{"not an address", Address{"10.0.0", 24, ""}, "not an IP address"},
		{"gateway not an address", Address{"10.0.0.21", 24, "gw"}, "not an IP address"},
		{"an IPv6 host with its gateway in the prefix", Address{"fd00::5", 64, "fd00::1"}, ""},
		{"an IPv6 host without a gateway", Address{"2001:db8:0:1::21", 64, ""}, ""},
		{"an IPv6 /128 without a gateway", Address{"fd00::5", 128, ""}, ""},
		{"an IPv6 gateway that is link-local", Address{"fd00::5", 64, "fe80::1"}, ""},
		{"an IPv6 /127 point-to-point", Address{"fd00::", 127, "fd00::1"}, ""},
		{"IPv6 negative prefix", Address{"fd00::5", -1, ""}, "out of range"},
		{"IPv6 gateway outside the prefix", Address{"fd00::5", 64, "fd00:0:0:1::1"}, "not inside fd00::5/64"},
		{"IPv6 gateway equal to the address", Address{"fd00::5", 64, "fd00::5"}, "the address itself"},
		{"an IPv6 /128 with a gateway", Address{"fd00::5", 128, "fd00::1"}, "no room for gateway"},
		{"the IPv6 subnet-router anycast address", Address{"fd00::", 64, "fd00::1"}, "subnet-router anycast"},
		{"a link-local IPv6 address", Address{"fe80::5", 64, ""}, "link-local"},
		{"an IPv6 address with a zone", Address{"fd00::5%eth0", 64, ""}, "not an IP address"},
		{"an IPv6 gateway with a zone", Address{"fd00::5", 64, "fe80::1%eth0"}, "not an IP address"},
	} {
		err := ValidateAddress(tc.a)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: accepted, want an error containing %q", tc.name, tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: error %q, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestValidateNIC(t *testing.T) {
	v4, v4b := Address{"10.0.0.21", 24, "10.0.0.1"}, Address{"10.0.1.21", 24, ""}
	v6, v6b := Address{"fd00::21", 64, "fd00::1"}, Address{"fd01::21", 64, ""}
	for _, tc := range []struct {
		name  string
		addrs []Address
		want  string
	}{
		{"IPv4 only", []Address{v4}, ""},
		{"IPv6 only", []Address{v6}, ""},
		{"dual-stack", []Address{v4, v6}, ""},
		{"dual-stack, IPv6 pool first", []Address{v6, v4}, ""},
		{"two IPv4 pools", []Address{v4, v4b}, "two IPv4 addresses (10.0.0.21/24 and 10.0.1.21/24)"},
		{"two IPv6 pools", []Address{v6, v6b}, "two IPv6 addresses"},
	} {
		err := ValidateNIC("ens192", tc.addrs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

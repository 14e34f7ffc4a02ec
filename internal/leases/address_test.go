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
		{"a valid IPv6 address is still refused (IPv4 only)", Address{"fd00::5", 64, "fd00::1"}, "only IPv4"},
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

package harness

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// TrackStaticIPs makes the Tracker count leased addresses and report them in Summary.
func (t *Tracker) TrackStaticIPs() {
	if t.staticIPs == nil {
		t.staticIPs = map[string]bool{}
	}
}

// StaticIPsLeased counts the addresses ever leased to a created VM.
func (t *Tracker) StaticIPsLeased() int { return len(t.staticIPs) }

func (t *Tracker) observeStaticIPs(s *Snapshot) {
	if t.staticIPs == nil {
		return
	}
	for i := range s.VAs {
		if ip := s.VAs[i].Status.StaticIP; ip != nil && ip.Address != "" && s.VAs[i].Status.VM.InstanceUUID != "" {
			t.staticIPs[ip.Address] = true
		}
	}
}

func (t *Tracker) staticIPSummary() string {
	if t.staticIPs == nil {
		return ""
	}
	return fmt.Sprintf("%d static IPs leased, ", len(t.staticIPs))
}

func inventoryIPv4(a *unstructured.Unstructured) []string {
	ifaces, _, _ := unstructured.NestedSlice(a.Object, "status", "inventory", "interfaces")
	var out []string
	for _, i := range ifaces {
		m, _ := i.(map[string]any)
		addrs, _ := m["ipV4Addresses"].([]any)
		for _, ad := range addrs {
			out = append(out, fmt.Sprint(ad))
		}
	}
	return out
}

// StaticIPViolations checks a static-IP snapshot: every bound Agent reports its VM's leased address, no
// address is on two live VMs, and no VM booted an image without its network configuration (d may be nil).
func (s *Snapshot) StaticIPViolations(d *world.Driver) []string {
	var out []string
	vaAddr := map[string]string{}
	owner := map[string]string{}
	for i := range s.VAs {
		va := &s.VAs[i]
		ip := va.Status.StaticIP
		if ip == nil || ip.Address == "" || s.VMByInstanceUUID(string(va.UID)) == nil {
			continue
		}
		vaAddr[va.Name] = ip.Address
		if other, dup := owner[ip.Address]; dup {
			out = append(out, fmt.Sprintf("address %s is on two live VMs: %s and %s", ip.Address, other, va.Name))
		}
		owner[ip.Address] = va.Name
		if ip.ImageCreatedAt == nil || ip.ConfigCreatedAt == nil || !ip.ImageCreatedAt.After(ip.ConfigCreatedAt.Time) {
			out = append(out, fmt.Sprintf("VM %s was created with image %v, not after its NMStateConfig (%v)", va.Name, ip.ImageCreatedAt, ip.ConfigCreatedAt))
		}
	}
	for _, a := range s.Agents {
		want, ok := vaAddr[a.VsphereAgent]
		if a.AgentMachine == "" || !ok {
			continue
		}
		if len(a.IPv4) != 1 || a.IPv4[0] != want {
			out = append(out, fmt.Sprintf("bound Agent %s (VM %s) reports addresses %v, not its lease's %s", a.Name, a.VsphereAgent, a.IPv4, want))
		}
	}
	if d != nil {
		booted := d.BootedWithoutConfig()
		names := make([]string, 0, len(booted))
		for n := range booted {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, fmt.Sprintf("VM %s %s", n, booted[n]))
		}
	}
	return out
}

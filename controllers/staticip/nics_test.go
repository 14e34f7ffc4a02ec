package staticip

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/leases"
)

func nicsPool() *afv1.VsphereAgentPool {
	ref := func(n string) afv1.IPPoolReference {
		return afv1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: n}
	}
	p := &afv1.VsphereAgentPool{}
	p.Spec.Network = &afv1.NetworkSpec{AddressesFromPools: []afv1.IPPoolReference{ref("v4"), ref("v6")}, Nameservers: []string{"fd00::53"},
		Routes: []afv1.NetworkRoute{{To: "172.16.0.0/12", Via: "192.168.5.254"}}}
	p.Spec.VSphere.AdditionalNetworks = []afv1.AdditionalNetwork{
		{Network: "backup"}, // DHCP
		{Network: "storage", AddressesFromPools: []afv1.IPPoolReference{ref("s4")}, InterfaceName: "stor0"},
		{Network: "other", AddressesFromPools: []afv1.IPPoolReference{ref("o6")}},
	}
	return p
}

func TestShapeAndInterfaceNames(t *testing.T) {
	p := nicsPool()
	if got := Shape(p); got != "0:2,2:1,3:1" {
		t.Errorf("shape %q", got)
	}
	for i, want := range []string{"ens192", "ens224", "stor0", "ens288"} {
		if got := InterfaceName(p, i); got != want {
			t.Errorf("NIC %d: %q, want %q", i, got, want)
		}
	}
	single := &afv1.VsphereAgentPool{}
	single.Spec.Network = &afv1.NetworkSpec{AddressesFromPools: p.Spec.Network.AddressesFromPools[:1], InterfaceName: "eth0"}
	if got := Shape(single); got != "" {
		t.Errorf("a single address on one NIC has shape %q, want the legacy \"\"", got)
	}
	single.Spec.VSphere.AdditionalNetworks = []afv1.AdditionalNetwork{{Network: "backup"}}
	if got := Shape(single); got != "" || InterfaceName(single, 0) != "eth0" {
		t.Errorf("a DHCP NIC changed the shape to %q", got)
	}
}

// A lease is complete only with every secondary claim's address; an exhausted secondary pool names itself.
func TestWithSecondaries(t *testing.T) {
	p := nicsPool()
	claim := func(name string, labels, ann map[string]string, address string, exhausted bool) *unstructured.Unstructured {
		c := &unstructured.Unstructured{Object: map[string]any{}}
		c.SetName(name)
		c.SetLabels(labels)
		c.SetAnnotations(ann)
		if address != "" {
			_ = unstructured.SetNestedField(c.Object, address, "status", "addressRef", "name")
		}
		if exhausted {
			_ = unstructured.SetNestedSlice(c.Object, []any{map[string]any{"type": "Ready", "status": "False", "reason": "PoolExhausted", "message": "no free address"}}, "status", "conditions")
		}
		return c
	}
	own := claim("w-ip-0", nil, map[string]string{annotationMAC: "00:50:56:00:00:01", annotationNICMACs: "2=00:50:56:00:00:02,3=00:50:56:00:00:03", annotationShape: "0:2,2:1,3:1"}, "w-ip-0", false)
	second := map[string]*unstructured.Unstructured{
		"w-ip-0-0-1": claim("w-ip-0-0-1", map[string]string{labelLease: "w-ip-0"}, nil, "w-ip-0-0-1", false),
		"w-ip-0-2-0": claim("w-ip-0-2-0", map[string]string{labelLease: "w-ip-0"}, nil, "", false),
	}
	l := withSecondaries(leaseOf(own, nil, nil), own, second, p)
	if l.Missing != 1 || len(l.Secondaries) != 2 || l.Complete() || l.StateOf() != leases.StatePending {
		t.Fatalf("lease %+v: want one claim missing, one without its address, pending", l)
	}
	if !reflect.DeepEqual(l.NICMACs, map[int]string{2: "00:50:56:00:00:02", 3: "00:50:56:00:00:03"}) || l.Shape != Shape(p) {
		t.Errorf("MACs %v shape %q", l.NICMACs, l.Shape)
	}
	second["w-ip-0-3-0"] = claim("w-ip-0-3-0", map[string]string{labelLease: "w-ip-0"}, nil, "", true)
	l = withSecondaries(leaseOf(own, nil, nil), own, second, p)
	if l.StateOf() != leases.StateExhausted || l.ExhaustedPool != "InClusterIPPool o6" || l.Exhausted != "no free address" {
		t.Errorf("an exhausted secondary pool: state %s, pool %q, message %q", l.StateOf(), l.ExhaustedPool, l.Exhausted)
	}
	second["w-ip-0-2-0"] = claim("w-ip-0-2-0", map[string]string{labelLease: "w-ip-0"}, nil, "w-ip-0-2-0", false)
	second["w-ip-0-3-0"] = claim("w-ip-0-3-0", map[string]string{labelLease: "w-ip-0"}, nil, "w-ip-0-3-0", false)
	l = withSecondaries(leaseOf(own, nil, nil), own, second, p)
	if !l.Complete() || l.Missing != 0 {
		t.Fatalf("lease %+v: want complete", l)
	}

	cfg := nmStateConfig(p, l, map[int][]leases.Address{
		0: {{Address: "10.0.0.21", Prefix: 24, Gateway: "10.0.0.1"}, {Address: "fd00::21", Prefix: 64, Gateway: "fd00::1"}},
		2: {{Address: "192.168.5.7", Prefix: 24}},
		3: {{Address: "fd06::7", Prefix: 64}},
	})
	var names, macs []string
	for _, n := range cfg.Interfaces {
		names, macs = append(names, n.Name), append(macs, n.MAC)
	}
	if !reflect.DeepEqual(names, []string{"ens192", "stor0", "ens288"}) || !reflect.DeepEqual(macs, []string{"00:50:56:00:00:01", "00:50:56:00:00:02", "00:50:56:00:00:03"}) {
		t.Errorf("interfaces %v %v: the DHCP NIC is left out, the others by MAC", names, macs)
	}
	if _, err := leases.NMState(cfg); err != nil {
		t.Fatal(err)
	}
	if got := CIDRs(p, map[int][]leases.Address{0: {{Address: "10.0.0.21", Prefix: 24}, {Address: "fd00::21", Prefix: 64}}, 2: {{Address: "192.168.5.7", Prefix: 24}}}); !reflect.DeepEqual(got, []string{"10.0.0.21/24", "fd00::21/64", "192.168.5.7/24"}) {
		t.Errorf("CIDRs %v", got)
	}
}

func TestNICMACsAnnotationRoundTrip(t *testing.T) {
	m := map[int]string{3: "00:50:56:00:00:03", 1: "00:50:56:00:00:01"}
	s := formatNICMACs(m)
	if s != "1=00:50:56:00:00:01,3=00:50:56:00:00:03" {
		t.Errorf("formatted %q", s)
	}
	if got := parseNICMACs(s); !reflect.DeepEqual(got, m) {
		t.Errorf("parsed %v", got)
	}
	if got := parseNICMACs(""); len(got) != 0 {
		t.Errorf("parsed empty %v", got)
	}
}

package controllers_test

import (
	"context"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/olm/olmcheck"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// poolRef names one of the world's InClusterIPPools.
func poolRef(name string) afv1.IPPoolReference {
	return afv1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: name}
}

// dualStackNICs gives the pool a dual-stack first NIC (vm-net, vm-net6) and a second NIC on "VM Network"
// with a static IPv4 address (storage).
func dualStackNICs(p *afv1.VsphereAgentPool) {
	p.Spec.Network = &afv1.NetworkSpec{
		AddressesFromPools: []afv1.IPPoolReference{poolRef("vm-net"), poolRef("vm-net6")},
		Nameservers:        []string{"10.0.0.53", "fd00::53"}, SpareLeases: 1,
		Routes: []afv1.NetworkRoute{{To: "172.16.0.0/12", Via: "192.168.5.254"}},
	}
	p.Spec.VSphere.AdditionalNetworks = []afv1.AdditionalNetwork{{Network: "VM Network", AdapterType: "e1000e", AddressesFromPools: []afv1.IPPoolReference{poolRef("storage")}}}
}

// vmNICs lists the VM's NICs in vCenter, in device order: "<network> <mac>".
func vmNICs(ctx context.Context, instanceUUID string) []string {
	GinkgoHelper()
	vm := adminVM(ctx, instanceUUID)
	var m mo.VirtualMachine
	Expect(vm.Properties(ctx, vm.Reference(), []string{"config.hardware.device"}, &m)).To(Succeed())
	devices := object.VirtualDeviceList(m.Config.Hardware.Device)
	var out []string
	for _, d := range devices.SelectByType((*types.VirtualEthernetCard)(nil)) {
		card := d.(types.BaseVirtualEthernetCard).GetVirtualEthernetCard()
		network := "?"
		switch b := card.Backing.(type) {
		case *types.VirtualEthernetCardNetworkBackingInfo:
			network = b.DeviceName
		case *types.VirtualEthernetCardDistributedVirtualPortBackingInfo:
			var pg mo.DistributedVirtualPortgroup
			ref := types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: b.Port.PortgroupKey}
			Expect(object.NewCommon(vm.Client(), ref).Properties(ctx, ref, []string{"name"}, &pg)).To(Succeed())
			network = pg.Name
		}
		out = append(out, network+" "+strings.ToLower(card.MacAddress))
	}
	return out
}

var _ = Describe("Static IPs on several NICs, IPv6 and dual-stack", func() {
	It("creates VMs with every NIC and an NMStateConfig giving each NIC its addresses of both families, matched by MAC", func(ctx context.Context) {
		sc := startStaticScenarioPools(operatorOptions{}, []world.IPPool{
			{Name: "vm-net", Addresses: []string{"10.0.0.10-10.0.0.30"}, Prefix: 24, Gateway: "10.0.0.1"},
			{Name: "vm-net6", Addresses: []string{"fd00::10-fd00::30"}, Prefix: 64, Gateway: "fd00::1"},
			{Name: "storage", Addresses: []string{"192.168.5.10-192.168.5.30"}, Prefix: 24, Gateway: "192.168.5.1"},
		}, dualStackNICs)
		Expect(sc.d.SetReplicas(ctx, sc.s.NodePool, 2)).To(Succeed())
		// Bound: each host registered with both NICs in its inventory and proved to be its VM.
		Eventually(func(g Gomega) {
			sc.checkInvariants()
			g.Expect(boundAgentsOf(sc.pool)).To(Equal(2))
		}, 180*time.Second, 500*time.Millisecond).Should(Succeed())

		configs := map[string]unstructured.Unstructured{}
		for _, c := range sc.list(world.NMStateConfigGVK) {
			configs[c.GetName()] = c
		}
		for _, va := range vsphereAgents(sc.pool) {
			ip := va.Status.StaticIP
			Expect(ip).NotTo(BeNil())
			Expect(ip.Addresses).To(HaveLen(3), "%s: both families on the first NIC, IPv4 on the second", va.Name)
			Expect(ip.Addresses[0]).To(And(HavePrefix("10.0.0."), HaveSuffix("/24")))
			Expect(ip.Addresses[1]).To(And(HavePrefix("fd00::"), HaveSuffix("/64")))
			Expect(ip.Addresses[2]).To(And(HavePrefix("192.168.5."), HaveSuffix("/24")))
			Expect(ip.Address).To(Equal(ip.Addresses[0]))
			macs := va.Status.VM.MACAddresses
			Expect(macs).To(HaveLen(2))
			Expect(macs[0]).To(Equal(va.Status.VM.MACAddress))
			for _, m := range macs {
				Expect(m).To(HavePrefix("00:50:56:"), "each NIC with static addresses has a MAC of VMware's static range")
			}

			By("vCenter holds both NICs, in order, on their networks, with the lease's MACs")
			Expect(vmNICs(ctx, va.Status.VM.InstanceUUID)).To(Equal([]string{vcsim.Network + " " + macs[0], "VM Network " + macs[1]}))

			By("the NMStateConfig maps each NIC by its MAC and gives it its addresses")
			cfg, ok := configs[ip.Lease]
			Expect(ok).To(BeTrue(), "NMStateConfig %s", ip.Lease)
			ifaces, _, _ := unstructured.NestedSlice(cfg.Object, "spec", "interfaces")
			Expect(ifaces).To(Equal([]any{
				map[string]any{"name": "ens192", "macAddress": macs[0]},
				map[string]any{"name": "ens224", "macAddress": macs[1]},
			}))
			doc, _, _ := unstructured.NestedSlice(cfg.Object, "spec", "config", "interfaces")
			Expect(doc).To(HaveLen(2))
			first, second := doc[0].(map[string]any), doc[1].(map[string]any)
			Expect(first["name"]).To(Equal("ens192"))
			Expect(first["mac-address"]).To(Equal(strings.ToUpper(macs[0])))
			Expect(first["ipv4"]).To(Equal(map[string]any{"enabled": true, "dhcp": false,
				"address": []any{map[string]any{"ip": strings.TrimSuffix(ip.Addresses[0], "/24"), "prefix-length": int64(24)}}}))
			Expect(first["ipv6"]).To(Equal(map[string]any{"enabled": true, "dhcp": false, "autoconf": false,
				"address": []any{map[string]any{"ip": strings.TrimSuffix(ip.Addresses[1], "/64"), "prefix-length": int64(64)}}}))
			Expect(second["name"]).To(Equal("ens224"))
			Expect(second["mac-address"]).To(Equal(strings.ToUpper(macs[1])))
			Expect(second["ipv4"]).To(Equal(map[string]any{"enabled": true, "dhcp": false,
				"address": []any{map[string]any{"ip": strings.TrimSuffix(ip.Addresses[2], "/24"), "prefix-length": int64(24)}}}))
			Expect(second["ipv6"]).To(Equal(map[string]any{"enabled": false}))
			routes, _, _ := unstructured.NestedSlice(cfg.Object, "spec", "config", "routes", "config")
			Expect(routes).To(ContainElements(
				map[string]any{"destination": "0.0.0.0/0", "next-hop-address": "10.0.0.1", "next-hop-interface": "ens192", "table-id": int64(254)},
				map[string]any{"destination": "::/0", "next-hop-address": "fd00::1", "next-hop-interface": "ens192", "table-id": int64(254)},
				map[string]any{"destination": "172.16.0.0/12", "next-hop-address": "192.168.5.254", "next-hop-interface": "ens224", "table-id": int64(254)},
			))
			Expect(routes).To(HaveLen(3), "no default route through the second NIC's gateway")
		}
		// Every lease is its claim plus one per other pool: 2 held + 1 spare, 3 claims each.
		Eventually(func() int { c, _, _ := sc.leases(); return c }, 60*time.Second, 250*time.Millisecond).Should(Equal(9))
	})

	DescribeTable("refuses an address that cannot work, IPv6 as IPv4: condition and Warning Event, no NMStateConfig, no VM",
		func(ctx context.Context, pools []world.IPPool, refs []afv1.IPPoolReference, want string) {
			sc := startStaticScenarioPools(operatorOptions{}, pools, func(p *afv1.VsphereAgentPool) {
				p.Spec.Network = &afv1.NetworkSpec{AddressesFromPools: refs, SpareLeases: 1}
			})
			sc.expectAddressRefused(ctx, want, want)
		},
		Entry("an IPv4 gateway outside the subnet", []world.IPPool{{Name: "vm-net", Addresses: []string{"10.0.0.10-10.0.0.20"}, Prefix: 24, Gateway: "10.0.1.1"}},
			[]afv1.IPPoolReference{poolRef("vm-net")}, "gateway 10.0.1.1 is not inside 10.0.0."),
		Entry("an IPv6 gateway outside the prefix", []world.IPPool{{Name: "vm-net6", Addresses: []string{"fd00::10-fd00::20"}, Prefix: 64, Gateway: "fd01::1"}},
			[]afv1.IPPoolReference{poolRef("vm-net6")}, "gateway fd01::1 is not inside fd00::"),
		Entry("an IPv6 gateway of the other family on a dual-stack NIC", []world.IPPool{
			{Name: "vm-net", Addresses: []string{"10.0.0.10-10.0.0.20"}, Prefix: 24, Gateway: "10.0.0.1"},
			{Name: "vm-net6", Addresses: []string{"fd00::10-fd00::20"}, Prefix: 64, Gateway: "10.0.0.1"}},
			[]afv1.IPPoolReference{poolRef("vm-net"), poolRef("vm-net6")}, "are of different IP families"),
		Entry("two IPv6 pools on one NIC", []world.IPPool{
			{Name: "vm-net6", Addresses: []string{"fd00::10-fd00::20"}, Prefix: 64, Gateway: "fd00::1"},
			{Name: "other6", Addresses: []string{"fd01::10-fd01::20"}, Prefix: 64}},
			[]afv1.IPPoolReference{poolRef("vm-net6"), poolRef("other6")}, "two IPv6 addresses"),
	)
})

var _ = Describe("A DHCP pool with a second NIC", func() {
	It("creates VMs with both NICs and never approves an Agent that reports a NIC the VM does not have", func(ctx context.Context) {
		// The VM's own host never boots here: the forged host below takes its place (binding with two
		// NICs is the static-IP spec's).
		_, s, d, pool := startPoolScenarioWith(operatorOptions{},
			world.Options{Register: func(world.VM) bool { return false }}, func(p *afv1.VsphereAgentPool) {
				p.Spec.VSphere.AdditionalNetworks = []afv1.AdditionalNetwork{{Network: "VM Network"}}
			})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		var va afv1.VsphereAgent
		Eventually(func(g Gomega) {
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(1))
			g.Expect(vas[0].Status.VM.MACAddresses).To(HaveLen(2))
			va = vas[0]
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		macs := va.Status.VM.MACAddresses
		Expect(macs[0]).To(Equal(va.Status.VM.MACAddress))
		Expect(vmNICs(ctx, va.Status.VM.InstanceUUID)).To(Equal([]string{vcsim.Network + " " + macs[0], "VM Network " + macs[1]}))

		By("a host with the VM's MAC and serial but a third NIC registers first")
		forged, err := d.RegisterHost(ctx, world.VM{Name: "stranger", BIOSUUID: va.Status.VM.BIOSUUID, MAC: macs[0],
			MACs: []string{macs[0], "00:50:56:3f:00:99"}}, s.InfraEnv)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(freshVA(ctx, &va).Status.Conditions, afv1.ConditionAgentRegistered)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(afv1.ReasonHostIdentityUnproven))
			g.Expect(c.Message).To(ContainSubstring("Agent " + forged.GetName() + " reports the VM's MAC and serial number but also interface(s) 00:50:56:3f:00:99, none of the VM's NICs"))
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			a := getAgent(ctx, forged.GetNamespace(), forged.GetName())
			approved, _, _ := unstructured.NestedBool(a.Object, "spec", "approved")
			g.Expect(approved).To(BeFalse(), "approved with a NIC the VM does not have")
			g.Expect(a.GetLabels()).NotTo(HaveKey(afv1.LabelVsphereAgent))
		}, 2*time.Second, 250*time.Millisecond).Should(Succeed())

	})
})

// upstreamPoolManifest is the VsphereAgentPool of upstream v1.1.0's objects (one network, no
// spec.network), placed in namespace.
func upstreamPoolManifest(namespace string) *unstructured.Unstructured {
	GinkgoHelper()
	raw, err := os.ReadFile(olmcheck.Testdata(GinkgoT(), "upstream", "objects-v1.1.0.yaml"))
	Expect(err).NotTo(HaveOccurred())
	for _, doc := range strings.Split(string(raw), "\n---") {
		u := &unstructured.Unstructured{}
		if yaml.Unmarshal([]byte(doc), &u.Object) != nil || u.GetKind() != "VsphereAgentPool" {
			continue
		}
		u.SetNamespace(namespace)
		u.SetFinalizers(nil)
		delete(u.Object, "status")
		return u
	}
	Fail("no VsphereAgentPool in upstream's v1.1.0 objects")
	return nil
}

var _ = Describe("The NIC options' validation", func() {
	It("admits upstream's single-network manifest and today's single-NIC static-IP manifest unchanged, and refuses NIC lists that cannot work", func(ctx context.Context) {
		s := newScenario()
		create := func(u *unstructured.Unstructured) error {
			return k8s.Create(ctx, u.DeepCopy(), client.DryRunAll)
		}
		upstream := upstreamPoolManifest(s.Namespace)
		Expect(create(upstream)).To(Succeed(), "upstream v1.1.0's pool")
		stored := upstream.DeepCopy()
		Expect(k8s.Create(ctx, stored, client.DryRunAll)).To(Succeed())
		Expect(stored.Object["spec"].(map[string]any)["vsphere"].(map[string]any)).NotTo(HaveKey("additionalNetworks"))
		network, _, _ := unstructured.NestedString(stored.Object, "spec", "vsphere", "network")
		Expect(network).To(Equal("VM Network"))

		single := upstream.DeepCopy()
		Expect(unstructured.SetNestedField(single.Object, map[string]any{
			"addressesFromPools": []any{map[string]any{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "vm-net"}},
			"nameservers":        []any{"10.0.0.53"},
		}, "spec", "network")).To(Succeed())
		Expect(create(single)).To(Succeed(), "a single-NIC static-IP pool as before")

		pool := func(name string) map[string]any {
			return map[string]any{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": name}
		}
		with := func(network map[string]any, nics ...map[string]any) *unstructured.Unstructured {
			u := upstream.DeepCopy()
			if network != nil {
				Expect(unstructured.SetNestedField(u.Object, network, "spec", "network")).To(Succeed())
			}
			list := make([]any, 0, len(nics))
			for _, n := range nics {
				list = append(list, n)
			}
			if len(list) > 0 {
				Expect(unstructured.SetNestedSlice(u.Object, list, "spec", "vsphere", "additionalNetworks")).To(Succeed())
			}
			return u
		}
		dual := map[string]any{"addressesFromPools": []any{pool("v4"), pool("v6")}, "nameservers": []any{"fd00::53", "10.0.0.53"},
			"routes": []any{map[string]any{"to": "fd10::/48", "via": "fd00::fe"}}}
		Expect(create(with(dual, map[string]any{"network": "storage", "adapterType": "vmxnet3", "addressesFromPools": []any{pool("s4"), pool("s6")}, "interfaceName": "ens224"},
			map[string]any{"network": "backup"}))).To(Succeed(), "dual-stack, two more NICs")

		for _, bad := range []struct {
			u    *unstructured.Unstructured
			want string
		}{
			{with(nil, map[string]any{"network": "storage", "addressesFromPools": []any{pool("s4")}}), "need spec.network"},
			{with(map[string]any{"addressesFromPools": []any{pool("a"), pool("b"), pool("c")}}), "must have at most 2 items"},
			{with(map[string]any{"addressesFromPools": []any{pool("a"), pool("a")}}), "two different pools"},
			{with(dual, map[string]any{"network": "storage", "interfaceName": "ens192"}), "must differ from spec.network.interfaceName"},
			{with(dual, map[string]any{"network": "a", "interfaceName": "ens224"}, map[string]any{"network": "b", "interfaceName": "ens224"}), "must be unique"},
			{with(dual, map[string]any{"network": "storage", "adapterType": "virtio"}), "Unsupported value"},
			{with(dual, map[string]any{"network": ""}), "spec.vsphere.additionalNetworks[0].network"},
			{with(map[string]any{"addressesFromPools": []any{pool("a")}, "nameservers": []any{"fd00::zz"}}), "must be IP addresses"},
		} {
			err := create(bad.u)
			Expect(err).To(HaveOccurred(), "refused: %s", bad.want)
			Expect(err.Error()).To(ContainSubstring(bad.want))
		}
	})
})

package harness

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// StaticIPPool is the IPAM pool EnableStaticIPs serves: an InClusterIPPool named vm-net in the scenario's
// namespace, 10.0.0.10-10.0.0.250/24 behind gateway 10.0.0.1.
const StaticIPPool = "vm-net"

// EnableStaticIPs turns a scenario into a network without DHCP: the InfraEnv selects the NMStateConfigs
// labelled agent-forge.containeroo.ch/static-ip=<namespace>, the pool gets spec.network (addresses from
// StaticIPPool, spare leases), and the returned options make the world regenerate this harness's discovery
// image on NMStateConfig changes and serve the IPAM pool. Pass them as world.Options.StaticIP.
func (h *Harness) EnableStaticIPs(ctx context.Context, s *world.Scenario, pool *afv1.VsphereAgentPool, spare int32) (*world.StaticIPOptions, error) {
	ie := &unstructured.Unstructured{}
	ie.SetGroupVersionKind(world.InfraEnvGVK)
	if err := h.Client.Get(ctx, s.InfraEnv, ie); err != nil {
		return nil, fmt.Errorf("reading InfraEnv %s: %w", s.InfraEnv, err)
	}
	sel := map[string]string{"agent-forge.containeroo.ch/static-ip": s.Namespace}
	if err := unstructured.SetNestedStringMap(ie.Object, sel, "spec", "nmStateConfigLabelSelector", "matchLabels"); err != nil {
		return nil, err
	}
	if err := h.Client.Update(ctx, ie); err != nil {
		return nil, fmt.Errorf("selecting NMStateConfigs on InfraEnv %s: %w", s.InfraEnv, err)
	}
	pool.Spec.Network = &afv1.NetworkSpec{
		AddressesFromPools: []afv1.IPPoolReference{{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: StaticIPPool}},
		Nameservers:        []string{"10.0.0.53"},
		SpareLeases:        spare,
	}
	return &world.StaticIPOptions{
		InfraEnv: s.InfraEnv, Images: h.ISO,
		Pools: []world.IPPool{{Namespace: s.Namespace, Name: StaticIPPool, Addresses: []string{"10.0.0.10-10.0.0.250"}, Prefix: 24, Gateway: "10.0.0.1"}},
	}, nil
}

package agents

import (
	"errors"
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NMStateConfigGVK is assisted-service's static network configuration of a host (by MAC), embedded into
// the discovery image of every InfraEnv whose spec.nmStateConfigLabelSelector selects it.
var NMStateConfigGVK = schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "NMStateConfig"}

// IPAMVersions are the ipam.cluster.x-k8s.io versions of IPAddressClaim and IPAddress the operator reads and
// writes, preferred first: CAPI v1.11+ stores v1beta2; older hubs serve v1beta1 (same fields for what we
// use: spec.poolRef{apiGroup,kind,name}, status.addressRef.name, spec.address/prefix/gateway).
var IPAMVersions = []string{"v1beta2", "v1beta1"}

var ipamVersion atomic.Pointer[string]

// IPAddressClaimGVK is the IPAddressClaim version to use: the one the hub serves, or the preferred one.
func IPAddressClaimGVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: ipamVersionOrDefault(), Kind: "IPAddressClaim"}
}

// IPAddressGVK is the IPAddress version to use (the claim's).
func IPAddressGVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: ipamVersionOrDefault(), Kind: "IPAddress"}
}

func ipamVersionOrDefault() string {
	if v := ipamVersion.Load(); v != nil {
		return *v
	}
	return IPAMVersions[0]
}

// UseServedIPAMVersion picks the first of IPAMVersions the hub serves for IPAddressClaim. An error means
// the hub has no CAPI IPAM: static-IP pools then report IPAMUnavailable.
func UseServedIPAMVersion(mapper meta.RESTMapper) (string, error) {
	gk := schema.GroupKind{Group: "ipam.cluster.x-k8s.io", Kind: "IPAddressClaim"}
	var errs []error
	for _, v := range IPAMVersions {
		if _, err := mapper.RESTMapping(gk, v); err != nil {
			errs = append(errs, err)
			continue
		}
		ipamVersion.Store(&v)
		return v, nil
	}
	return "", fmt.Errorf("no served version of %s among %v: %w", gk, IPAMVersions, errors.Join(errs...))
}

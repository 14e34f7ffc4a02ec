package world

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// The world plays a Cluster API IPAM provider shaped like kubernetes-sigs/cluster-api-ipam-provider-in-cluster
// rather than running that provider's reconciler: its module pins its own cluster-api and controller-runtime,
// which do not build with the project's pinned modules. What it copies from the contract (cluster-api
// api/ipam/v1beta2 and the in-cluster provider): a claim whose spec.poolRef names a pool it serves gets the
// finalizer ipam.cluster.x-k8s.io/ReleaseAddress, an IPAddress named after the claim (owned by it, with
// claimRef, poolRef, address, prefix, gateway) and status.addressRef plus Ready=True; a full pool gets
// Ready=False reason PoolExhausted and no address; a deleted claim's IPAddress is deleted, then the
// finalizer removed (the address is free again).

// IPAM kinds at the version CAPI v1.11+ stores (the fixtures in test/crds serve it).
var (
	IPAddressClaimGVK = schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1beta2", Kind: "IPAddressClaim"}
	IPAddressGVK      = schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1beta2", Kind: "IPAddress"}
)

// FinalizerReleaseAddress is the in-cluster provider's finalizer on the claims it serves.
const FinalizerReleaseAddress = "ipam.cluster.x-k8s.io/ReleaseAddress"

// IPPool is an IPAM pool the world serves, like an InClusterIPPool: addresses as single IPs or
// "first-last" ranges, one prefix and gateway.
type IPPool struct {
	Namespace, Name string
	// APIGroup and Kind default to ipam.cluster.x-k8s.io / InClusterIPPool.
	APIGroup, Kind string
	Addresses      []string
	Prefix         int32
	Gateway        string
}

func (p IPPool) matches(namespace string, ref map[string]any) bool {
	group, kind := p.APIGroup, p.Kind
	if group == "" {
		group = "ipam.cluster.x-k8s.io"
	}
	if kind == "" {
		kind = "InClusterIPPool"
	}
	return namespace == p.Namespace && ref["name"] == p.Name && ref["kind"] == kind && ref["apiGroup"] == group
}

// expand lists the pool's addresses in order.
func (p IPPool) expand() []string {
	var out []string
	for _, a := range p.Addresses {
		first, last, isRange := strings.Cut(a, "-")
		from, err := netip.ParseAddr(strings.TrimSpace(first))
		if err != nil {
			continue
		}
		if !isRange {
			out = append(out, from.String())
			continue
		}
		to, err := netip.ParseAddr(strings.TrimSpace(last))
		if err != nil {
			continue
		}
		for ip := from; ip.Compare(to) <= 0 && len(out) < 65536; ip = ip.Next() {
			out = append(out, ip.String())
		}
	}
	return out
}

// allocateAddresses serves the claims of the configured pools.
func (d *Driver) allocateAddresses(ctx context.Context) error {
	if d.opts.StaticIP == nil || len(d.opts.StaticIP.Pools) == 0 {
		return nil
	}
	claims, err := d.list(ctx, IPAddressClaimGVK)
	if err != nil {
		return err
	}
	addrs, err := d.list(ctx, IPAddressGVK)
	if err != nil {
		return err
	}
	used := map[string]bool{} // namespace/pool/address
	for _, a := range addrs {
		ref, _, _ := unstructured.NestedMap(a.Object, "spec", "poolRef")
		ip, _, _ := unstructured.NestedString(a.Object, "spec", "address")
		used[fmt.Sprintf("%s/%v/%s", a.GetNamespace(), ref["name"], ip)] = true
	}
	for _, c := range claims {
		ref, _, _ := unstructured.NestedMap(c.Object, "spec", "poolRef")
		var pool *IPPool
		for i := range d.opts.StaticIP.Pools {
			if d.opts.StaticIP.Pools[i].matches(c.GetNamespace(), ref) {
				pool = &d.opts.StaticIP.Pools[i]
			}
		}
		if pool == nil {
			continue
		}
		if c.GetDeletionTimestamp() != nil {
			if err := d.releaseAddress(ctx, c.DeepCopy()); err != nil {
				return err
			}
			continue
		}
		if name, _, _ := unstructured.NestedString(c.Object, "status", "addressRef", "name"); name != "" {
			continue
		}
		if err := d.allocate(ctx, c.DeepCopy(), pool, used); err != nil {
			return err
		}
	}
	return nil
}

func (d *Driver) allocate(ctx context.Context, c *unstructured.Unstructured, pool *IPPool, used map[string]bool) error {
	if !hasFinalizer(c, FinalizerReleaseAddress) {
		c.SetFinalizers(append(c.GetFinalizers(), FinalizerReleaseAddress))
		if err := d.c.Update(ctx, c); err != nil {
			return client.IgnoreNotFound(err)
		}
		d.wrote()
	}
	free := ""
	for _, ip := range pool.expand() {
		if !used[fmt.Sprintf("%s/%s/%s", pool.Namespace, pool.Name, ip)] {
			free = ip
			break
		}
	}
	now := d.now()
	if free == "" {
		if unstructuredcond.Set(c, now, cond{Type: "Ready", Status: "False", Reason: "PoolExhausted",
			Message: fmt.Sprintf("pool %s has no free addresses", pool.Name)}) {
			if err := d.c.Status().Update(ctx, c); err != nil {
				return client.IgnoreNotFound(err)
			}
			d.wrote()
		}
		return nil
	}
	kind, group := pool.Kind, pool.APIGroup
	if kind == "" {
		kind = "InClusterIPPool"
	}
	if group == "" {
		group = "ipam.cluster.x-k8s.io"
	}
	a := newObject(IPAddressGVK)
	a.SetNamespace(c.GetNamespace())
	a.SetName(c.GetName())
	a.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: IPAddressClaimGVK.GroupVersion().String(), Kind: "IPAddressClaim",
		Name: c.GetName(), UID: c.GetUID(), Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}})
	spec := map[string]any{
		"claimRef": map[string]any{"name": c.GetName()},
		"poolRef":  map[string]any{"apiGroup": group, "kind": kind, "name": pool.Name},
		"address":  free, "prefix": int64(pool.Prefix),
	}
	if pool.Gateway != "" {
		spec["gateway"] = pool.Gateway
	}
	a.Object["spec"] = spec
	if err := d.c.Create(ctx, a); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating IPAddress: %w", err)
	}
	d.wrote()
	used[fmt.Sprintf("%s/%s/%s", pool.Namespace, pool.Name, free)] = true
	_ = unstructured.SetNestedField(c.Object, c.GetName(), "status", "addressRef", "name")
	unstructuredcond.Set(c, now, cond{Type: "Ready", Status: "True", Reason: "Ready", Message: "allocated " + free})
	if err := d.c.Status().Update(ctx, c); err != nil {
		return client.IgnoreNotFound(err)
	}
	d.wrote()
	d.log.Info("address allocated", "claim", client.ObjectKeyFromObject(c), "address", free)
	return nil
}

// releaseAddress deletes a deleted claim's IPAddress, then lets the claim go.
func (d *Driver) releaseAddress(ctx context.Context, c *unstructured.Unstructured) error {
	if !hasFinalizer(c, FinalizerReleaseAddress) {
		return nil
	}
	a := newObject(IPAddressGVK)
	a.SetNamespace(c.GetNamespace())
	a.SetName(c.GetName())
	if err := d.c.Delete(ctx, a); client.IgnoreNotFound(err) != nil {
		return err
	}
	var keep []string
	for _, f := range c.GetFinalizers() {
		if f != FinalizerReleaseAddress {
			keep = append(keep, f)
		}
	}
	c.SetFinalizers(keep)
	if err := d.c.Update(ctx, c); client.IgnoreNotFound(err) != nil {
		return err
	}
	d.wrote()
	d.log.Info("address released", "claim", client.ObjectKeyFromObject(c))
	return nil
}

func hasFinalizer(o metav1.Object, f string) bool {
	for _, x := range o.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }

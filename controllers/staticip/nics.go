package staticip

// Several NICs and dual-stack: a lease is its own claim (the first NIC's first IPAM pool, named
// <pool>-ip-<i>, carrying the MACs and the holder) plus one secondary claim per other pool of the pool's
// NICs (<lease>-<nic>-<pool>, labelled with the lease and owned by its claim), all written into one
// NMStateConfig that maps each NIC with static addresses by its MAC.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/leases"
)

const (
	// annotationNICMACs lists, on a lease's claim, the MACs of its other NICs with static addresses
	// ("1=00:50:56:..,2=..." by NIC index); the first NIC's is annotationMAC.
	annotationNICMACs = "agent-forge.containeroo.ch/nic-macs"
	// annotationShape is the lease's shape (Shape) when it is not a single address on a single NIC.
	annotationShape = "agent-forge.containeroo.ch/lease-shape"
)

// nic is one NIC of the pool's VMs with static addresses: its index, the name its NMStateConfig gives
// it, and its IPAM pools.
type nic struct {
	index int
	name  string
	pools []afv1.IPPoolReference
}

// staticNICs are the pool's NICs with static addresses, the first NIC first (nil for DHCP pools).
func staticNICs(pool *afv1.VsphereAgentPool) []nic {
	n := pool.Spec.Network
	if n == nil {
		return nil
	}
	name := n.InterfaceName
	if name == "" {
		name = "ens192"
	}
	out := []nic{{index: 0, name: name, pools: n.AddressesFromPools}}
	for i, a := range pool.Spec.VSphere.AdditionalNetworks {
		if len(a.AddressesFromPools) == 0 {
			continue
		}
		out = append(out, nic{index: i + 1, name: InterfaceName(pool, i+1), pools: a.AddressesFromPools})
	}
	return out
}

// InterfaceName is the name the NMStateConfig gives NIC index of the pool's VMs: the one set, else
// ens192 for the first and ens224, ens256, ... (RHCOS's names on vSphere's PCI slots) for the others.
func InterfaceName(pool *afv1.VsphereAgentPool, index int) string {
	if index == 0 {
		if pool.Spec.Network != nil && pool.Spec.Network.InterfaceName != "" {
			return pool.Spec.Network.InterfaceName
		}
		return "ens192"
	}
	if index-1 < len(pool.Spec.VSphere.AdditionalNetworks) {
		if n := pool.Spec.VSphere.AdditionalNetworks[index-1].InterfaceName; n != "" {
			return n
		}
	}
	return "ens" + strconv.Itoa(192+32*index)
}

// Shape names what a lease of the pool is made of: the pool count of each NIC with static addresses
// ("0:2,1:1"); "" for one address on the first NIC, which leases made before several NICs were possible
// are (they carry no shape annotation).
func Shape(pool *afv1.VsphereAgentPool) string {
	nics := staticNICs(pool)
	if len(nics) == 1 && len(nics[0].pools) == 1 {
		return ""
	}
	parts := make([]string, 0, len(nics))
	for _, n := range nics {
		parts = append(parts, fmt.Sprintf("%d:%d", n.index, len(n.pools)))
	}
	return strings.Join(parts, ",")
}

// secondaryName names the claim of NIC nicIndex's pool poolIndex of the lease.
func secondaryName(lease string, nicIndex, poolIndex int) string {
	return fmt.Sprintf("%s-%d-%d", lease, nicIndex, poolIndex)
}

// parseNICMACs reads annotationNICMACs.
func parseNICMACs(s string) map[int]string {
	out := map[int]string{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		if i, err := strconv.Atoi(k); ok && err == nil && v != "" {
			out[i] = strings.ToLower(v)
		}
	}
	return out
}

func formatNICMACs(m map[int]string) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d=%s", k, m[k]))
	}
	return strings.Join(parts, ",")
}

// withSecondaries completes the lease view with its secondary claims (by name) as the pool's spec
// wants them, and the lease's other NICs' MACs.
func withSecondaries(l leases.Lease, claim *unstructured.Unstructured, secondaries map[string]*unstructured.Unstructured, pool *afv1.VsphereAgentPool) leases.Lease {
	l.NICMACs = parseNICMACs(claim.GetAnnotations()[annotationNICMACs])
	l.Shape = claim.GetAnnotations()[annotationShape]
	for _, n := range staticNICs(pool) {
		for k := range n.pools {
			if n.index == 0 && k == 0 {
				continue
			}
			c := secondaries[secondaryName(l.Name, n.index, k)]
			if c == nil || c.GetDeletionTimestamp() != nil {
				l.Missing++
				continue
			}
			s := leases.Secondary{NIC: n.index, Pool: k, Claim: c.GetName()}
			s.AddressName, _, _ = unstructured.NestedString(c.Object, "status", "addressRef", "name")
			if s.AddressName == "" {
				if msg := exhaustedOf(c); msg != "" && l.Exhausted == "" {
					ref := n.pools[k]
					l.Exhausted, l.ExhaustedPool = msg, ref.Kind+" "+ref.Name
				}
			}
			l.Secondaries = append(l.Secondaries, s)
		}
	}
	return l
}

// exhaustedOf is the provider's message when the claim's Ready condition says PoolExhausted.
func exhaustedOf(claim *unstructured.Unstructured) string {
	for _, c := range agents.Conditions(claim) {
		if c.Type == "Ready" && c.Status == "False" && c.Reason == "PoolExhausted" {
			if c.Message == "" {
				return "PoolExhausted"
			}
			return c.Message
		}
	}
	return ""
}

// refusal is an address (or a NIC's set of addresses) that cannot work.
type refusal struct {
	name, claim string // the IPAddress and its claim (for a NIC's families: the lease's own)
	err         error
}

// leaseAddresses reads every address of a complete lease, by NIC index, each NIC's in the order of its
// pools, and validates them: each address (leases.ValidateAddress) and each NIC's families
// (leases.ValidateNIC). refused says why they cannot be used; err is for reads that failed.
func leaseAddresses(ctx context.Context, reader client.Reader, pool *afv1.VsphereAgentPool, l leases.Lease) (map[int][]leases.Address, *refusal, error) {
	names := map[[2]int]string{{0, 0}: l.AddressName}
	claims := map[[2]int]string{{0, 0}: l.Name}
	for _, s := range l.Secondaries {
		names[[2]int{s.NIC, s.Pool}], claims[[2]int{s.NIC, s.Pool}] = s.AddressName, s.Claim
	}
	out := map[int][]leases.Address{}
	for _, n := range staticNICs(pool) {
		for k := range n.pools {
			name := names[[2]int{n.index, k}]
			if name == "" {
				return nil, nil, fmt.Errorf("lease %s has no address for NIC %d pool %d yet", l.Name, n.index, k)
			}
			a, err := readIPAddress(ctx, reader, pool.Namespace, name)
			if err != nil {
				return nil, nil, err
			}
			if err := leases.ValidateAddress(a); err != nil {
				return nil, &refusal{name: name, claim: claims[[2]int{n.index, k}], err: err}, nil
			}
			out[n.index] = append(out[n.index], a)
		}
		if err := leases.ValidateNIC("NIC "+n.name, out[n.index]); err != nil {
			return nil, &refusal{name: l.AddressName, claim: l.Name, err: err}, nil
		}
	}
	return out, nil, nil
}

// nmStateConfig is the lease's network configuration: each NIC with static addresses, by its MAC.
func nmStateConfig(pool *afv1.VsphereAgentPool, l leases.Lease, addrs map[int][]leases.Address) leases.Config {
	netSpec := pool.Spec.Network
	cfg := leases.Config{Nameservers: netSpec.Nameservers}
	for _, n := range staticNICs(pool) {
		mac := l.MAC
		if n.index > 0 {
			mac = l.NICMACs[n.index]
		}
		cfg.Interfaces = append(cfg.Interfaces, leases.Interface{Name: n.name, MAC: mac, Addresses: addrs[n.index]})
	}
	for _, rt := range netSpec.Routes {
		cfg.Routes = append(cfg.Routes, leases.Route{To: rt.To, Via: rt.Via, Metric: rt.Metric})
	}
	return cfg
}

// CIDRs lists a lease's addresses NIC by NIC.
func CIDRs(pool *afv1.VsphereAgentPool, addrs map[int][]leases.Address) []string {
	var out []string
	for _, n := range staticNICs(pool) {
		for _, a := range addrs[n.index] {
			out = append(out, a.CIDR())
		}
	}
	return out
}

// newLeaseMACs draws the MACs of a new lease: the first NIC's and those of the other NICs with static
// addresses (annotationNICMACs), each unused.
func newLeaseMACs(pool *afv1.VsphereAgentPool, rng *rand.Rand, st *State) (string, map[int]string, error) {
	first, err := leases.NewMAC(rng, st.usedMACs)
	if err != nil {
		return "", nil, err
	}
	st.usedMACs.Insert(first)
	others := map[int]string{}
	for _, n := range staticNICs(pool)[1:] {
		mac, err := leases.NewMAC(rng, st.usedMACs)
		if err != nil {
			return "", nil, err
		}
		st.usedMACs.Insert(mac)
		others[n.index] = mac
	}
	return first, others, nil
}

// createSecondaries creates the missing secondary claims of the pool's leases that are still to serve
// a VM (a crash between a lease's claims, or pools added to a NIC), or of the claims just created.
func (ls *Leases) createSecondaries(ctx context.Context, s *pass, created []*unstructured.Unstructured) error {
	st := s.staticIP
	shape := Shape(s.pool)
	if shape == "" {
		return nil
	}
	if created != nil {
		for _, c := range created {
			if err := ls.createSecondaryClaims(ctx, s.pool, c, leases.Lease{Name: c.GetName()}); err != nil {
				return err
			}
		}
		return nil
	}
	waiting := waitingHolders(s.vas)
	for _, l := range st.leases {
		if l.Missing == 0 || l.Deleting || l.Disposition != "" || l.Shape != shape || (l.Holder != "" && !waiting.Has(l.Holder)) {
			continue
		}
		if err := ls.createSecondaryClaims(ctx, s.pool, st.claims[l.Name], l); err != nil {
			return err
		}
		s.requeueAfter(leasePoll)
	}
	return nil
}

// createSecondaryClaims creates the secondary claims the lease of claim lacks.
func (ls *Leases) createSecondaryClaims(ctx context.Context, pool *afv1.VsphereAgentPool, claim *unstructured.Unstructured, l leases.Lease) error {
	for _, n := range staticNICs(pool) {
		for k, ref := range n.pools {
			if (n.index == 0 && k == 0) || hasSecondary(l, n.index, k) {
				continue
			}
			c := agents.New(agents.IPAddressClaimGVK())
			c.SetNamespace(pool.Namespace)
			c.SetName(secondaryName(l.Name, n.index, k))
			c.SetLabels(map[string]string{afv1.LabelPool: pool.Name, labelLease: l.Name})
			c.Object["spec"] = map[string]any{"poolRef": map[string]any{"apiGroup": ref.APIGroup, "kind": ref.Kind, "name": ref.Name}}
			isController := true
			c.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: claim.GetAPIVersion(), Kind: claim.GetKind(),
				Name: claim.GetName(), UID: claim.GetUID(), Controller: &isController}})
			if err := ls.Client.Create(ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating IPAddressClaim %s: %w", c.GetName(), err)
			}
		}
	}
	return nil
}

func hasSecondary(l leases.Lease, nicIndex, poolIndex int) bool {
	for _, s := range l.Secondaries {
		if s.NIC == nicIndex && s.Pool == poolIndex {
			return true
		}
	}
	return false
}

// deleteSecondaries deletes a lease's secondary claims (the IPAM provider frees their addresses).
func (ls *Leases) deleteSecondaries(ctx context.Context, st *State, lease string) error {
	for _, c := range st.secondaries[lease] {
		if err := ls.Client.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting IPAddressClaim %s: %w", c.GetName(), err)
		}
	}
	return nil
}

// removeStale gives back the free leases made for other NICs or pools than the pool's spec now names
// (a lease's shape is fixed when it is claimed): no VM may boot with them, and fresh ones replace them.
func (ls *Leases) removeStale(ctx context.Context, s *pass) error {
	st := s.staticIP
	shape := Shape(s.pool)
	var stale []string
	for _, l := range st.leases {
		if l.Shape != shape && l.Holder == "" && l.Disposition == "" && !l.Deleting {
			stale = append(stale, l.Name)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	removed, err := ls.removeLeases(ctx, s.pool, st, stale, true)
	if err != nil {
		return err
	}
	gone := sets.New(removed...)
	kept := st.leases[:0]
	for _, l := range st.leases {
		if !gone.Has(l.Name) {
			kept = append(kept, l)
		}
	}
	st.leases = kept
	if len(removed) > 0 {
		ls.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonLeasesTrimmed, events.ActionLeaseAddresses,
			"removed %d unused static address lease(s) made for other NICs or IPAM pools than the pool's spec names: %s", len(removed), strings.Join(removed, ", "))
		s.requeueAfter(leasePoll)
	}
	return nil
}

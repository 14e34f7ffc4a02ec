package staticip

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Poll is how often a pool or VM with leases in flight looks again (claims are not watched).
const Poll = leasePoll

// Leases handles the static-IP leases of pools with spec.network: the pool's side (Observe, Prepare,
// SetStatus, ReleaseAll) and one VM's side (Hold before its VM is created, Settle when its finalizer
// ends).
type Leases struct {
	// Client writes claims and NMStateConfigs and reads the InfraEnv (the manager's cached client).
	Client client.Client
	// APIReader reads claims, NMStateConfigs and IPAddresses live (they are not cached).
	APIReader client.Reader
	// Recorder records the lease Events on the pool or the VsphereAgent.
	Recorder *events.Recorder
	// Clock stamps releases and batches them (Options.Clock).
	Clock clock.PassiveClock
	// Events rate-limits the pool's refusal Events (shared with its other refusals; nil on the VM side).
	Events *events.EventLimiter

	// passed holds the pools this process has prepared leases for, by name, with the UID of the pool
	// of that name (see firstPass).
	passed sync.Map
}

// firstPass reports whether this is the pool's first lease pass in this process (then marks it done):
// a pool deleted and created again under its name has a new UID, and its first pass is one again.
func (ls *Leases) firstPass(pool types.NamespacedName, uid types.UID) bool {
	prev, seen := ls.passed.Swap(pool, uid)
	return !seen || prev.(types.UID) != uid
}

// Input is what a pool pass observed that preparing its leases needs.
type Input struct {
	Pool *afv1.VsphereAgentPool
	// VAs are the pool's VsphereAgents.
	VAs []afv1.VsphereAgent
	// VS is the pool's vSphere client (nil: not connected; no claim is created).
	VS vsphere.Client
	// PendingCreates counts VsphereAgents created but not yet in the cache.
	PendingCreates int
	// Deleting names the VsphereAgents the pool deleted that its cache may still list without their
	// deletion (a watch cut holds the cache back): they hold no VM to come and need no lease.
	Deleting sets.Set[string]
}

// Held is the outcome of Hold: the MAC the VM is created with once Ready, else why it waits.
type Held struct {
	MAC string
	// NICMACs are the MACs of the VM's other NICs with static addresses, by NIC index (1: the second).
	NICMACs         map[int]string
	Ready           bool
	Reason, Message string
}

// pass is one call's view (the pool's, or one VM's).
type pass struct {
	pool           *afv1.VsphereAgentPool
	vas            []afv1.VsphereAgent
	vs             vsphere.Client
	staticIP       *State
	pendingCreates int
	deleting       sets.Set[string]
	requeue        time.Duration
}

func (s *pass) requeueAfter(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

// Observe reads the pool's leases and decides whether creation must wait (no IPAM, no selector,
// exhausted IPAM pool); a lasting block is announced by a rate-limited Warning Event. The State is nil
// for DHCP pools, and may be partial when err is set.
func (ls *Leases) Observe(ctx context.Context, pool *afv1.VsphereAgentPool) (*State, error) {
	s := &pass{pool: pool}
	err := ls.observeLeases(ctx, s)
	return s.staticIP, err
}

// Prepare keeps the pool's spare leases ahead of its VMs and removes released ones in batches; it
// returns how soon the pool should look again (0: no need).
func (ls *Leases) Prepare(ctx context.Context, st *State, in Input) (time.Duration, error) {
	s := &pass{pool: in.Pool, vas: in.VAs, vs: in.VS, staticIP: st, pendingCreates: in.PendingCreates, deleting: in.Deleting}
	if err := ls.prepareLeases(ctx, s); err != nil {
		return 0, err
	}
	return s.requeue, nil
}

// ReleaseAll runs when the pool is deleted: leases of VMs that stay are kept (no longer owned by the
// pool); every other lease is removed.
func (ls *Leases) ReleaseAll(ctx context.Context, pool *afv1.VsphereAgentPool) error {
	return ls.releaseAllLeases(ctx, &pass{pool: pool})
}

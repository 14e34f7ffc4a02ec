package staticip

// Removing leases: the released ones of destroyed VMs (in batches), spares beyond the target, and
// every lease of a deleted pool.

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/leases"
)

// removeLeases deletes each lease's NMStateConfig, then its claim (the IPAM provider frees the address);
// a crash in between leaves a released claim, removed on the next pass.
func (ls *Leases) removeLeases(ctx context.Context, pool *afv1.VsphereAgentPool, st *State, names []string, unchangedOnly bool) ([]string, error) {
	var removed []string
	for _, name := range names {
		cfg := agents.New(agents.NMStateConfigGVK)
		cfg.SetNamespace(pool.Namespace)
		cfg.SetName(name)
		if err := ls.Client.Delete(ctx, cfg); client.IgnoreNotFound(err) != nil {
			return removed, fmt.Errorf("deleting NMStateConfig %s: %w", name, err)
		}
		claim := st.claims[name]
		if claim == nil {
			continue
		}
		if err := crashpoint.Hit(ctx, crashpoint.LeaseConfigRemoved); err != nil {
			return removed, err
		}
		if !unchangedOnly {
			// Its secondary claims first (owned by the claim, so garbage collection would follow).
			if err := ls.deleteSecondaries(ctx, st, name); err != nil {
				return removed, err
			}
		}
		pre := client.Preconditions{UID: ptr.To(claim.GetUID())}
		if unchangedOnly {
			// A spare a VM took since the read stays: the VM's pass sees the config missing and the
			// pool writes it again (createConfigs), one regeneration instead of a lost lease.
			pre.ResourceVersion = ptr.To(claim.GetResourceVersion())
		}
		if err := ls.Client.Delete(ctx, claim, pre); err != nil {
			if unchangedOnly && apierrors.IsConflict(err) {
				continue
			}
			if client.IgnoreNotFound(err) != nil {
				return removed, fmt.Errorf("deleting IPAddressClaim %s: %w", name, err)
			}
		}
		if unchangedOnly {
			if err := ls.deleteSecondaries(ctx, st, name); err != nil {
				return removed, err
			}
		}
		removed = append(removed, name)
	}
	return removed, nil
}

// releaseAllLeases runs when the pool is deleted: leases of VMs that stay (retained, or held by a
// VsphereAgent kept under Retain) are kept and no longer owned by the pool; every other lease is removed.
func (ls *Leases) releaseAllLeases(ctx context.Context, s *pass) error {
	if s.pool.Spec.Network == nil {
		return nil
	}
	if _, err := agents.UseServedIPAMVersion(ls.Client.RESTMapper()); err != nil {
		return nil
	}
	claims := agents.NewList(agents.IPAddressClaimGVK())
	if err := ls.APIReader.List(ctx, claims, client.InNamespace(s.pool.Namespace), client.MatchingLabels{afv1.LabelPool: s.pool.Name}); err != nil {
		return fmt.Errorf("listing IPAddressClaims: %w", err)
	}
	st := &State{claims: map[string]*unstructured.Unstructured{}, secondaries: map[string][]*unstructured.Unstructured{}}
	var release []string
	for i := range claims.Items {
		c := &claims.Items[i]
		if lease := c.GetLabels()[labelLease]; lease != "" {
			st.secondaries[lease] = append(st.secondaries[lease], c)
			continue
		}
		if !ownedBy(c, s.pool.UID) {
			continue
		}
		l := leaseOf(c, nil, nil)
		keep := l.Disposition == leases.StateRetained || (l.Holder != "" && l.Disposition != leases.StateReleased && s.pool.Spec.CleanupPolicy == afv1.CleanupPolicyRetain)
		if keep {
			if err := ls.retainLease(ctx, ls.Client, c, s.pool.UID); err != nil {
				return err
			}
			continue
		}
		st.claims[c.GetName()] = c
		release = append(release, c.GetName())
	}
	if len(release) == 0 {
		return nil
	}
	ls.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonLeasesReleased, events.ActionLeaseAddresses, "pool deleted: released %d static address lease(s)", len(release))
	_, err := ls.removeLeases(ctx, s.pool, st, release, false)
	return err
}

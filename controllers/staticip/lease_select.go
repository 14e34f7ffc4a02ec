package staticip

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/leases"
)

// imageDeadline is how long a held lease waits for a discovery image that carries its NMStateConfig
// (from the config's creation) before its config is written again: assisted-service regenerates within
// seconds, so an image that still lacks it missed the change and a fresh NMStateConfig makes it look again.
const imageDeadline = 10 * time.Minute

// checkAddresses reads and validates the address of every lease whose NMStateConfig is still to be
// written (or rewritten): an address that cannot work is refused (lease state Invalid, a rate-limited
// Warning Event naming the claim), so no NMStateConfig and no VM is made with it.
func (ls *Leases) checkAddresses(ctx context.Context, s *pass) error {
	st := s.staticIP
	var refused []string
	for i := range st.leases {
		l := &st.leases[i]
		if l.Deleting || l.Disposition != "" || !l.Complete() || (l.HasConfig && l.Selected) || (l.Holder != "" && l.HasConfig) {
			continue
		}
		addrs, bad, err := leaseAddresses(ctx, ls.APIReader, s.pool, *l)
		if apierrors.IsNotFound(err) {
			continue // the provider names it before its cache shows it: the next pass reads it
		}
		if err != nil {
			return err
		}
		if bad != nil {
			l.Invalid = bad.err.Error()
			msg := fmt.Sprintf("IPAddress %s of IPAddressClaim %s is refused: %v", bad.name, bad.claim, bad.err)
			refused = append(refused, msg)
			key := client.ObjectKeyFromObject(s.pool).String() + "/invalid-ip/" + l.Name
			if ls.Events == nil || ls.Events.Allow(key, afv1.ReasonInvalidIPAddress, ls.Clock.Now()) {
				ls.Recorder.Eventf(s.pool, nil, "Warning", afv1.ReasonInvalidIPAddress, events.ActionLeaseAddresses, "%s; no NMStateConfig is written with it", msg)
			}
			continue
		}
		st.addresses[l.Name] = addrs
	}
	if len(refused) > 0 {
		st.unservable, st.unservableMsg = afv1.ReasonInvalidIPAddress, strings.Join(refused, "; ")
	}
	return nil
}

// followSelector rewrites the NMStateConfigs of leases without a VM that the InfraEnv's current
// nmStateConfigLabelSelector does not select (it changed): deleted and created again with the current
// labels, not relabelled, so that the new object's creationTimestamp is after the selector change and
// the ordering rule (an image generated strictly after the config's creation) proves the image was
// generated with it selected. Leases of VMs already created keep their configs: they booted.
func (ls *Leases) followSelector(ctx context.Context, s *pass) error {
	st := s.staticIP
	waiting := waitingHolders(s.vas)
	var rewritten []string
	for i := range st.leases {
		l := &st.leases[i]
		if !l.HasConfig || l.Selected || l.Deleting || l.Disposition != "" || (l.Holder != "" && !waiting.Has(l.Holder)) {
			continue
		}
		addr, ok := st.addresses[l.Name]
		if !ok && l.Holder != "" && l.Complete() {
			a, bad, err := leaseAddresses(ctx, ls.APIReader, s.pool, *l)
			if err != nil {
				return err
			}
			if bad == nil {
				addr, ok = a, true
			}
		}
		if !ok {
			continue // refused or not read: checkAddresses reports it
		}
		if old := st.configs[l.Name]; old != nil {
			uid := old.GetUID()
			if err := ls.Client.Delete(ctx, old, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return fmt.Errorf("deleting NMStateConfig %s for the InfraEnv's new selector: %w", l.Name, err)
			}
		}
		if err := ls.createConfig(ctx, s.pool, st, *l, addr); err != nil {
			return err
		}
		l.ConfigCreated, l.Selected = st.configs[l.Name].GetCreationTimestamp().Time, true
		rewritten = append(rewritten, l.Name)
	}
	if len(rewritten) > 0 {
		ls.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonLeasesFollowSelector, events.ActionLeaseAddresses,
			"wrote NMStateConfig(s) %s again with InfraEnv %s's nmStateConfigLabelSelector %s: VMs wait for the image generated with them",
			strings.Join(rewritten, ", "), s.pool.Spec.InfraEnvRef.Name, selectorString(st.selector))
		s.requeueAfter(leasePoll)
	}
	return nil
}

// findUnservedHolds counts the VMs waiting for an image that carries their lease's NMStateConfig, and
// marks the pool's leases unservable when one waited beyond imageDeadline (the VM's side writes that
// config again).
func (ls *Leases) findUnservedHolds(s *pass) {
	st := s.staticIP
	if st.unservable != "" {
		return
	}
	image := imageOf(s.pool)
	waiting := waitingHolders(s.vas)
	now := ls.Clock.Now()
	for _, l := range st.leases {
		if l.StateOf() != leases.StateAssigned || !waiting.Has(l.Holder) || !l.HasConfig || leases.ImageCarries(image, l.ConfigCreated) {
			continue
		}
		st.awaitingImage++
		if now.Sub(l.ConfigCreated) >= imageDeadline {
			st.unservable = afv1.ReasonLeaseNotInImage
			st.unservableMsg = fmt.Sprintf("VsphereAgent %s waits for lease %s: no discovery image of InfraEnv %s carried its NMStateConfig within %s (cached image created %s)",
				l.Holder, l.Name, s.pool.Spec.InfraEnvRef.Name, imageDeadline, formatTime(image))
			return
		}
	}
}

// waitingHolders are the VsphereAgents that may hold a lease whose VM is not created yet.
func waitingHolders(vas []afv1.VsphereAgent) sets.Set[string] {
	out := sets.New[string]()
	for _, va := range vas {
		if va.DeletionTimestamp.IsZero() && va.Status.StaticIP == nil && va.Status.VM.InstanceUUID == "" {
			out.Insert(va.Name)
		}
	}
	return out
}

// imageOf is the InfraEnv status.createdTime of the pool's cached ISO (zero when none).
func imageOf(pool *afv1.VsphereAgentPool) time.Time {
	if pool.Status.ISO != nil && pool.Status.ISO.SourceCreatedTime != nil {
		return pool.Status.ISO.SourceCreatedTime.Time
	}
	return time.Time{}
}

func selectorString(sel map[string]string) string {
	parts := make([]string, 0, len(sel))
	for k, v := range sel {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// dropHold gives a held lease back to the pool (its VM was never created).
func dropHold(ctx context.Context, c client.Client, claim client.Object) error {
	labels := claim.GetLabels()
	delete(labels, afv1.LabelVsphereAgent)
	claim.SetLabels(labels)
	if err := c.Update(ctx, claim); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("giving back lease %s: %w", claim.GetName(), err)
	}
	return nil
}

// deleteConfig removes a lease's NMStateConfig (this exact object).
func deleteConfig(ctx context.Context, c client.Client, cfg client.Object) error {
	uid := cfg.GetUID()
	if err := c.Delete(ctx, cfg, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting NMStateConfig %s: %w", cfg.GetName(), err)
	}
	return nil
}

// SetStatus reports the leases (status.leases, condition StaticIPsReady) of a static-IP pool.
func SetStatus(p *afv1.VsphereAgentPool, st *State) {
	if p.Spec.Network == nil || st == nil {
		p.Status.Leases = nil
		meta.RemoveStatusCondition(&p.Status.Conditions, afv1.ConditionStaticIPsReady)
		return
	}
	sum := &afv1.LeaseSummary{}
	unselected := 0
	for _, l := range st.leases {
		switch l.StateOf() {
		case leases.StateReady:
			sum.Ready++
		case leases.StateAssigned:
			sum.Assigned++
		case leases.StatePending, leases.StateExhausted, leases.StateInvalid:
			sum.Pending++
			if l.HasConfig && !l.Selected {
				unselected++
			}
		case leases.StateRetained:
			sum.Retained++
		}
	}
	p.Status.Leases = sum
	gen := p.Generation
	switch {
	case st.block != "":
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionStaticIPsReady, false, st.block, st.blockMsg, gen)
	case st.unservable != "":
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionStaticIPsReady, false, st.unservable, st.unservableMsg, gen)
	case st.awaitingImage > 0:
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionStaticIPsReady, false, afv1.ReasonLeasesPending,
			fmt.Sprintf("%d VM(s) wait for a discovery image that carries their lease's NMStateConfig; %d lease(s) ready", st.awaitingImage, sum.Ready), gen)
	case sum.Ready == 0 && sum.Pending > 0:
		msg := fmt.Sprintf("%d lease(s) wait for their address or NMStateConfig; %d held by VMs", sum.Pending, sum.Assigned)
		if unselected > 0 {
			msg += fmt.Sprintf("; %d NMStateConfig(s) not selected by the InfraEnv's nmStateConfigLabelSelector are written again", unselected)
		}
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionStaticIPsReady, false, afv1.ReasonLeasesPending, msg, gen)
	default:
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionStaticIPsReady, true, afv1.ReasonLeasesReady,
			fmt.Sprintf("%d lease(s) ready, %d held by VMs, %d pending", sum.Ready, sum.Assigned, sum.Pending), gen)
	}
}

package staticip

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/leases"
)

// AddressOf is the VM's leased address ("" for DHCP VMs).
func AddressOf(va *afv1.VsphereAgent) string {
	if va.Status.StaticIP == nil {
		return ""
	}
	return va.Status.StaticIP.Address
}

// Hold returns the MAC the VM is created with (pools with spec.network), holding a lease first.
// Ready is false while the VM must wait (Reason and Message say why; look again within Poll): no ready
// lease yet, its NMStateConfig is not selected by the InfraEnv's current selector (the pool writes it
// again), or the cached ISO's image predates it (a VM booted from it would get no address and never
// register). A lease that no image will carry gets an exit (LeaseNotInImage: Warning Event, and the hold
// given back or the config written again). DHCP pools: Ready, no MAC.
func (ls *Leases) Hold(ctx context.Context, va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) (Held, error) {
	if pool.Spec.Network == nil {
		return Held{Ready: true}, nil
	}
	wait := func(reason, msg string) (Held, error) {
		return Held{Reason: reason, Message: msg}, nil
	}
	if _, err := agents.UseServedIPAMVersion(ls.Client.RESTMapper()); err != nil {
		return wait(afv1.ReasonIPAMUnavailable, "the hub serves no ipam.cluster.x-k8s.io IPAddressClaim")
	}
	sel, selMsg, err := ls.nmStateSelector(ctx, pool)
	if err != nil {
		return Held{}, err
	}
	claims := agents.NewList(agents.IPAddressClaimGVK())
	if err := ls.APIReader.List(ctx, claims, client.InNamespace(va.Namespace), client.MatchingLabels{afv1.LabelPool: pool.Name}); err != nil {
		return Held{}, fmt.Errorf("listing IPAddressClaims: %w", err)
	}
	configs := agents.NewList(agents.NMStateConfigGVK)
	if err := ls.APIReader.List(ctx, configs, client.InNamespace(va.Namespace), client.MatchingLabels{afv1.LabelPool: pool.Name}); err != nil {
		return Held{}, fmt.Errorf("listing NMStateConfigs: %w", err)
	}
	configOf := map[string]*unstructured.Unstructured{}
	for i := range configs.Items {
		configOf[configs.Items[i].GetLabels()[labelLease]] = &configs.Items[i]
	}
	image := imageOf(pool)

	secondaries := map[string]*unstructured.Unstructured{}
	for i := range claims.Items {
		if c := &claims.Items[i]; c.GetLabels()[labelLease] != "" {
			secondaries[c.GetName()] = c
		}
	}
	view := func(c *unstructured.Unstructured) leases.Lease {
		return withSecondaries(leaseOf(c, configOf[c.GetName()], sel), c, secondaries, pool)
	}
	shape := Shape(pool)
	var held *unstructured.Unstructured
	var candidates, inImage []*unstructured.Unstructured
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.GetLabels()[labelLease] != "" || (!ownedBy(c, pool.UID) && c.GetLabels()[afv1.LabelVsphereAgent] != va.Name) {
			continue
		}
		l := view(c)
		if l.Holder == va.Name && l.Disposition == "" {
			if l.Shape != shape {
				// Made for other NICs than the pool's VMs now have: the VM would boot without its addresses.
				if err := dropHold(ctx, ls.Client, c); err != nil {
					return Held{}, err
				}
				continue
			}
			held = c
			break
		}
		if l.StateOf() == leases.StateReady && !l.Deleting && l.Shape == shape {
			candidates = append(candidates, c)
			if leases.ImageCarries(image, l.ConfigCreated) {
				inImage = append(inImage, c)
			}
		}
	}
	if selMsg != "" {
		// The InfraEnv cannot select any config: no image will carry the held lease's. Give it back.
		if held != nil {
			if err := dropHold(ctx, ls.Client, held); err != nil {
				return Held{}, err
			}
			ls.Recorder.Eventf(va, nil, "Warning", afv1.ReasonLeaseNotInImage, events.ActionLeaseAddresses,
				"gave back lease %s: %s; the VM is not created", held.GetName(), selMsg)
		}
		return wait(afv1.ReasonLeaseNotInImage, selMsg+"; no VM is created until it selects the pool's NMStateConfigs")
	}
	if held == nil {
		if len(inImage) > 0 {
			candidates = inImage // a lease the cached image already carries: the VM is created at once
		}
		if len(candidates) == 0 {
			return wait(afv1.ReasonWaitingForLease, "no static address lease is ready yet (see the pool's StaticIPsReady condition)")
		}
		// Spread concurrent VMs over the candidates; a lost race (conflict) retries with a fresh read.
		h := fnv.New32a()
		_, _ = h.Write([]byte(va.Name))
		held = candidates[int(h.Sum32())%len(candidates)]
		labels := held.GetLabels()
		labels[afv1.LabelVsphereAgent] = va.Name
		held.SetLabels(labels)
		if err := ls.Client.Update(ctx, held); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return wait(afv1.ReasonWaitingForLease, "another VM took the lease it was about to hold; retrying")
			}
			return Held{}, fmt.Errorf("holding lease %s: %w", held.GetName(), err)
		}
		if err := crashpoint.Hit(ctx, crashpoint.LeaseAssigned); err != nil {
			return Held{}, err
		}
		ls.Recorder.Eventf(va, nil, "Normal", afv1.ReasonLeaseHeld, events.ActionLeaseAddresses, "holds static address lease %s (MAC %s)", held.GetName(), held.GetAnnotations()[annotationMAC])
	}
	l := view(held)
	switch {
	case !l.HasConfig:
		return wait(afv1.ReasonWaitingForLease, "lease "+l.Name+" has no NMStateConfig yet")
	case !l.Selected:
		return wait(afv1.ReasonWaitingForLease, fmt.Sprintf("NMStateConfig %s lacks the InfraEnv's nmStateConfigLabelSelector %s: the pool writes it again", l.Name, selectorString(sel)))
	case !leases.ImageCarries(image, l.ConfigCreated) && ls.Clock.Now().Sub(l.ConfigCreated) >= imageDeadline:
		// No image carried it in time: write it again (a new config makes assisted-service regenerate).
		if err := deleteConfig(ctx, ls.Client, configOf[l.Name]); err != nil {
			return Held{}, err
		}
		msg := fmt.Sprintf("no discovery image of InfraEnv %s carried NMStateConfig %s within %s (cached image created %s): the config is written again and the VM waits for the image generated with it",
			pool.Spec.InfraEnvRef.Name, l.Name, imageDeadline, formatTime(image))
		ls.Recorder.Eventf(va, nil, "Warning", afv1.ReasonLeaseNotInImage, events.ActionLeaseAddresses, "%s", msg)
		return wait(afv1.ReasonLeaseNotInImage, msg)
	case !leases.ImageCarries(image, l.ConfigCreated):
		return wait(afv1.ReasonWaitingForImageWithLease, fmt.Sprintf("the cached discovery ISO (image created %s) predates NMStateConfig %s (created %s): waiting for the regenerated image, else the VM would boot without its address",
			formatTime(image), l.Name, l.ConfigCreated.UTC().Format(time.RFC3339)))
	}
	addrs, bad, err := leaseAddresses(ctx, ls.APIReader, pool, l)
	if err != nil {
		return Held{}, err
	}
	if bad != nil {
		return wait(afv1.ReasonInvalidIPAddress, fmt.Sprintf("IPAddress %s of IPAddressClaim %s is refused: %v", bad.name, bad.claim, bad.err))
	}
	cfgAt, imgAt := metav1.NewTime(l.ConfigCreated), metav1.NewTime(image)
	va.Status.StaticIP = &afv1.StaticIPStatus{Lease: l.Name, Address: addrs[0][0].CIDR(), ConfigCreatedAt: &cfgAt, ImageCreatedAt: &imgAt}
	if all := CIDRs(pool, addrs); len(all) > 1 {
		va.Status.StaticIP.Addresses = all
	}
	return Held{MAC: l.MAC, NICMACs: l.NICMACs, Ready: true}, nil
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

// Settle runs when the VsphereAgent's finalizer ends: a destroyed VM's lease is released (the pool
// removes released leases in a batch); a VM that stays keeps its lease, no longer owned by the pool.
func (ls *Leases) Settle(ctx context.Context, va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool, destroyed bool) error {
	if va.Status.StaticIP == nil && pool != nil && pool.Spec.Network == nil {
		return nil // a DHCP pool's VM (a lease held before its VM was created has the pool's spec.network)
	}
	if _, err := agents.UseServedIPAMVersion(ls.Client.RESTMapper()); err != nil {
		return nil
	}
	claims := agents.NewList(agents.IPAddressClaimGVK())
	if err := ls.APIReader.List(ctx, claims, client.InNamespace(va.Namespace),
		client.MatchingLabels{afv1.LabelPool: va.Spec.PoolRef.Name, afv1.LabelVsphereAgent: va.Name}); err != nil {
		return fmt.Errorf("listing IPAddressClaims: %w", err)
	}
	state := leases.StateRetained
	if destroyed {
		state = leases.StateReleased
	}
	poolUID := ""
	for _, ref := range va.OwnerReferences {
		if ref.Kind == "VsphereAgentPool" {
			poolUID = string(ref.UID)
		}
	}
	for i := range claims.Items {
		if err := markLease(ctx, ls.Client, &claims.Items[i], state, types.UID(poolUID), ls.Clock.Now()); err != nil {
			return err
		}
	}
	if destroyed && len(claims.Items) > 0 {
		return crashpoint.Hit(ctx, crashpoint.LeaseReleased)
	}
	return nil
}

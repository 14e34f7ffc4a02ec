package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// DEMO_STATIC_IPS=1: the same scenario on a network without DHCP (docs/static-ips.md).
const (
	staticSpareLeases = 2
	leaseSettle       = 30 * time.Second
)

// enableStaticIPs makes the scene's pool a static-IP pool and returns the world's static addressing.
func (d *demo) enableStaticIPs(ctx context.Context, s *world.Scenario, pool *afv1.VsphereAgentPool) (*world.StaticIPOptions, error) {
	opts, err := d.h.EnableStaticIPs(ctx, s, pool, staticSpareLeases)
	if err != nil {
		return nil, err
	}
	d.t.TrackStaticIPs()
	d.v.println("==> static IPs (DEMO_STATIC_IPS=1): no DHCP; InfraEnv %s selects NMStateConfigs %v; the pool leases addresses from InClusterIPPool %s (%v/%d, gateway %s) with %d spare leases; the world regenerates the discovery image on every NMStateConfig change",
		s.InfraEnv.Name, map[string]string{"agent-forge.containeroo.ch/static-ip": s.Namespace}, harness.StaticIPPool, opts.Pools[0].Addresses, opts.Pools[0].Prefix, opts.Pools[0].Gateway, staticSpareLeases)
	return opts, nil
}

// checkStaticIPs records the static-IP invariants of one snapshot (each violation once).
func (d *demo) checkStaticIPs(s *harness.Snapshot) {
	if !d.cfg.staticIPs || d.sc == nil {
		return
	}
	for _, msg := range s.StaticIPViolations(d.sc.world) {
		if !d.staticSeen[msg] {
			d.staticSeen[msg] = true
			d.t.Violate("%s", msg)
		}
	}
}

// finishStaticIPs checks, after scale-down, that every lease of a destroyed VM was released (its claim and
// NMStateConfig gone) and that image regenerations stayed within one for the spares, one per demand burst
// and one per scale-down (its releases go in one batch).
func (d *demo) finishStaticIPs(ctx context.Context, scaleUps, scaleDowns int) error {
	if !d.cfg.staticIPs {
		return nil
	}
	deadline := time.Now().Add(leaseSettle)
	var problems []string
	for {
		var err error
		problems, err = d.leaseProblems(ctx)
		if err != nil {
			return err
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return errStopped
		case <-time.After(observeInterval):
		}
	}
	for _, p := range problems {
		d.t.Violate("%s", p)
	}
	regens := d.sc.world.ImageRegenerations()
	limit := 1 + scaleUps + scaleDowns // the spares prepared at start, each demand burst, each scale-down's releases (batched)
	d.v.println("==> static IPs: %d addresses leased, %d image regenerations (limit %d: 1 for the spares, %d demand bursts, %d scale-down release batch)",
		d.t.StaticIPsLeased(), regens, limit, scaleUps, scaleDowns)
	if regens > limit {
		d.t.Violate("%d image regenerations, more than one per demand burst plus one per release batch (%d)", regens, limit)
	}
	return nil
}

// leaseProblems lists leases that outlived their VM: a claim held by a VsphereAgent that is gone, a
// released claim not removed, or an NMStateConfig without its claim.
func (d *demo) leaseProblems(ctx context.Context) ([]string, error) {
	ns := d.sc.pool.Namespace
	list := func(gvkGroup, version, kind string) ([]unstructured.Unstructured, error) {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(gvkGroup + "/" + version)
		l.SetKind(kind + "List")
		err := d.h.Client.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{afv1.LabelPool: d.sc.pool.Name})
		return l.Items, err
	}
	claims, err := list(world.IPAddressClaimGVK.Group, world.IPAddressClaimGVK.Version, "IPAddressClaim")
	if err != nil {
		return nil, err
	}
	configs, err := list(world.NMStateConfigGVK.Group, world.NMStateConfigGVK.Version, "NMStateConfig")
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, va := range d.t.Last().VAs {
		live[va.Name] = true
	}
	var out []string
	names := map[string]bool{}
	for _, c := range claims {
		names[c.GetName()] = true
		holder, state := c.GetLabels()[afv1.LabelVsphereAgent], c.GetLabels()["agent-forge.containeroo.ch/lease-state"]
		switch {
		case state == "released":
			out = append(out, fmt.Sprintf("lease %s of destroyed VM %s was not released", c.GetName(), holder))
		case holder != "" && state == "" && !live[holder]:
			out = append(out, fmt.Sprintf("lease %s is held by VsphereAgent %s, which is gone", c.GetName(), holder))
		}
	}
	for _, c := range configs {
		if !names[c.GetName()] {
			out = append(out, fmt.Sprintf("NMStateConfig %s outlived its lease", c.GetName()))
		}
	}
	return out, nil
}

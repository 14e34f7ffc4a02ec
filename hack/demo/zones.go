package main

import (
	"context"
	"fmt"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

// useZones (DEMO_ZONES=n) gives the pool one failure domain per simulated cluster and tells the tracker
// their names, so the summary reports the spread.
func (d *demo) useZones(pool *afv1.VsphereAgentPool) {
	if d.cfg.zones == 0 {
		return
	}
	pool.Spec.VSphere.FailureDomains = harness.ZoneDomains(d.cfg.zones)
	names := make([]string, 0, d.cfg.zones)
	for _, fd := range pool.Spec.VSphere.FailureDomains {
		names = append(names, fmt.Sprintf("%s (%s, %s)", fd.Name, fd.ComputeCluster, fd.Datastore))
	}
	d.v.println("    DEMO_ZONES=%d: spec.vsphere.failureDomains %s", d.cfg.zones, strings.Join(names, ", "))
	zones := make([]string, 0, d.cfg.zones)
	for _, fd := range pool.Spec.VSphere.FailureDomains {
		zones = append(zones, fd.Name)
	}
	d.t.SetZones(zones)
	d.zoneSeen = map[string]bool{}
}

// checkZones records, once each, Agents whose zone label is not their VM's failure domain and VMs outside
// their domain's cluster (DEMO_ZONES only).
func (d *demo) checkZones(ctx context.Context, s *harness.Snapshot) error {
	if d.cfg.zones == 0 || len(s.Agents) == 0 {
		return nil
	}
	clusters, err := d.h.VMClusters(ctx)
	if err != nil {
		return err
	}
	for _, msg := range s.ZoneViolations(s.Pool.Spec.VSphere.FailureDomains, clusters) {
		if !d.zoneSeen[msg] {
			d.zoneSeen[msg] = true
			d.t.Violate("%s", msg)
		}
	}
	return nil
}

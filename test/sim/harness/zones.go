package harness

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// ZoneDomains returns n failure domains, zone-a, zone-b, ..., one per cluster of a simulator started with
// vcsim.Options{Clusters: n}: cluster i's compute and its own datastore (vcsim.ZoneOf(i)).
func ZoneDomains(n int) []afv1.FailureDomain {
	out := make([]afv1.FailureDomain, 0, n)
	for i := 0; i < n; i++ {
		z := vcsim.ZoneOf(i)
		out = append(out, afv1.FailureDomain{Name: fmt.Sprintf("zone-%c", 'a'+i), Region: "demo", ComputeCluster: z.Cluster, Datastore: z.Datastore})
	}
	return out
}

// VMClusters maps the name of every VM in the simulator to the cluster (or host) that runs it: the owner
// of its resource pool.
func (h *Harness) VMClusters(ctx context.Context) (map[string]string, error) {
	c := h.govmomi.Client
	v, err := view.NewManager(c).CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	if err != nil {
		return nil, err
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var vms []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, []string{"name", "resourcePool"}, &vms); err != nil {
		return nil, err
	}
	owners := map[string]string{} // resource pool -> owner name
	out := map[string]string{}
	for _, vm := range vms {
		if vm.ResourcePool == nil {
			continue
		}
		rp := vm.ResourcePool.Value
		if _, ok := owners[rp]; !ok {
			var pool mo.ResourcePool
			if err := h.govmomi.PropertyCollector().RetrieveOne(ctx, *vm.ResourcePool, []string{"owner"}, &pool); err != nil {
				return nil, err
			}
			var owner mo.ManagedEntity
			if err := h.govmomi.PropertyCollector().RetrieveOne(ctx, pool.Owner, []string{"name"}, &owner); err != nil {
				return nil, err
			}
			owners[rp] = owner.Name
		}
		out[vm.Name] = owners[rp]
	}
	return out, nil
}

// ZoneViolations checks the failure-domain invariant on a snapshot of a pool with failure domains: the
// zone label (and spec.nodeLabels zone) of every prepared Agent equals its VM's failure domain, and the VM
// runs in that domain's cluster (clusters from VMClusters). It returns one message per breach.
func (s *Snapshot) ZoneViolations(domains []afv1.FailureDomain, clusters map[string]string) []string {
	clusterOf := map[string]string{}
	for _, d := range domains {
		clusterOf[d.Name] = d.ComputeCluster
	}
	vaByName := map[string]*afv1.VsphereAgent{}
	for i := range s.VAs {
		vaByName[s.VAs[i].Name] = &s.VAs[i]
	}
	var out []string
	for _, a := range s.Agents {
		va := vaByName[a.VsphereAgent]
		if va == nil {
			continue // its VsphereAgent is gone (scale-down): nothing to compare
		}
		zone := va.Spec.FailureDomain
		if a.Zone != zone || a.NodeZone != zone {
			out = append(out, fmt.Sprintf("Agent %s carries zone %q (spec.nodeLabels %q), its VM %s is in failure domain %q", a.Name, a.Zone, a.NodeZone, va.Status.VM.Name, zone))
		}
		if got, want := clusters[va.Status.VM.Name], clusterOf[zone]; va.Status.VM.Name != "" && got != "" && got != want {
			out = append(out, fmt.Sprintf("VM %s of failure domain %q runs in cluster %s, want %s", va.Status.VM.Name, zone, got, want))
		}
	}
	return out
}

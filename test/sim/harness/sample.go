package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25"
	"sigs.k8s.io/yaml"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/testenv"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// SamplePoolPath is the pool sample shipped for OperatorHub (alm-examples) and loaded by the demo.
const SamplePoolPath = "config/samples/agent-forge_v1alpha1_vsphereagentpool.yaml"

// LoadSamplePool reads the shipped VsphereAgentPool sample (strictly: an unknown field is an error).
func LoadSamplePool() (*afv1.VsphereAgentPool, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, SamplePoolPath))
	if err != nil {
		return nil, err
	}
	pool := &afv1.VsphereAgentPool{}
	if err := yaml.UnmarshalStrict(data, pool); err != nil {
		return nil, fmt.Errorf("%s: %w", SamplePoolPath, err)
	}
	return pool, nil
}

// AdaptToSimulator changes only the vSphere inventory fields of pool that do not exist in the
// simulator to the simulator's equivalents, and returns one human-readable line per change. It also
// prepares the pool's VM folder before anything runs (see vcsim.EnsureFolder for why).
func (h *Harness) AdaptToSimulator(ctx context.Context, pool *afv1.VsphereAgentPool) ([]string, error) {
	isoURL := ""
	if h.ISO != nil {
		isoURL = h.ISO.URL()
	}
	return AdaptPoolToSimulator(ctx, h.VC, h.govmomi.Client, isoURL, pool)
}

// AdaptPoolToSimulator is AdaptToSimulator for a simulator and ISO server started without a Harness (test/olm
// runs them beside OLM's API server): vc is the simulator, vim a session to it, isoURL the discovery image's
// URL ("" when none is served).
func AdaptPoolToSimulator(ctx context.Context, vc *vcsim.Env, vim *vim25.Client, isoURL string, pool *afv1.VsphereAgentPool) ([]string, error) {
	var changes []string
	set := func(field string, v *string, replacement string, ok bool) {
		if !ok {
			changes = append(changes, fmt.Sprintf("spec.vsphere.%s: %q -> %q (not in the simulator)", field, *v, replacement))
			*v = replacement
		}
	}
	vs := &pool.Spec.VSphere
	set("datacenter", &vs.Datacenter, vcsim.Datacenter, vs.Datacenter == vcsim.Datacenter)
	datastores := []string{vcsim.Datastore, vcsim.PodDatastore, vcsim.DatastoreCluster}
	set("datastoreCluster", &vs.DatastoreCluster, vcsim.DatastoreCluster, slices.Contains(datastores, vs.DatastoreCluster))
	set("isoDatastore", &vs.ISODatastore, vcsim.Datastore, slices.Contains(datastores[:2], vs.ISODatastore))
	set("resourcePool", &vs.ResourcePool, vcsim.ResourcePool, vs.ResourcePool == "" || vs.ResourcePool == vcsim.ResourcePool)

	finder := find.NewFinder(vim, false)
	dc, err := finder.Datacenter(ctx, vcsim.Datacenter)
	if err != nil {
		return nil, err
	}
	finder.SetDatacenter(dc)
	_, netErr := finder.Network(ctx, vs.Network)
	set("network", &vs.Network, vcsim.Network, netErr == nil)

	var tags []string
	for _, t := range vs.VMTags {
		if slices.Contains(vcsim.Tags, t) {
			tags = append(tags, t)
		}
	}
	if len(tags) != len(vs.VMTags) {
		if len(tags) == 0 {
			tags = []string{vcsim.Tags[0]}
		}
		changes = append(changes, fmt.Sprintf("spec.vsphere.vmTags: %v -> %v (simulator tags: %v in category %q)", vs.VMTags, tags, vcsim.Tags, vcsim.TagCategory))
		vs.VMTags = tags
	}
	if strings.HasPrefix(isoURL, "http://") && !pool.Spec.ISO.AllowPlainHTTP {
		changes = append(changes, "spec.iso.allowPlainHTTP: false -> true (the simulated image service serves plain HTTP)")
		pool.Spec.ISO.AllowPlainHTTP = true
	}
	folder := vs.Folder
	if folder == "" {
		folder = pool.Spec.HostedClusterRef.Name
	}
	if err := vc.EnsureFolder(ctx, folder); err != nil {
		return nil, err
	}
	return changes, nil
}

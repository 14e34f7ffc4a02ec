package validation

import (
	"fmt"
	"strings"
	"testing"
)

// admissibleCase is one spec value the upstream Helm-installed operator (1.0.x/1.1.x) admits and its
// users' pools may carry: our CRD must admit it too, so that re-applying such a pool after the move
// (a backup, a GitOps sync) is never refused (docs/migration.md).
type admissibleCase struct {
	name  string
	edits []edit
}

func admit(name string, e ...edit) admissibleCase { return admissibleCase{name: name, edits: e} }

// tagIDs returns n distinct vSphere tag IDs, the form the upstream documentation uses for vmTags.
func tagIDs(n int) []interface{} {
	out := make([]interface{}, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("urn:vmomi:InventoryServiceTag:5a1c3e6f-2b1d-4f1e-9c0a-%012d:GLOBAL", i))
	}
	return out
}

var upstreamAdmissible = []admissibleCase{
	admit("role infra", set("spec.agent.role", "infra")),
	admit("role label equal to a role other than worker", set("spec.agent.role", "infra"),
		set("spec.agent.labels", map[string]interface{}{"hypershift.openshift.io/nodepool-role": "infra", "agent-forge.containeroo.ch/nodepool": "demo"})),
	admit("numCPUs 1", set("spec.template.numCPUs", 1)),
	admit("numCPUs 128", set("spec.template.numCPUs", 128)),
	admit("memoryMiB 1024", set("spec.template.memoryMiB", 1024)),
	admit("memoryMiB 2048", set("spec.template.memoryMiB", 2048)),
	admit("memoryMiB not a multiple of 4", set("spec.template.memoryMiB", 16385)),
	admit("memoryMiB 1048576", set("spec.template.memoryMiB", 1048576)),
	admit("namePrefix of 58", set("spec.template.namePrefix", strings.Repeat("w", 58))),
	admit("guestID with a dot and a dash", set("spec.vsphere.guestID", "rhel-9.4_64Guest")),
	admit("guestID of 512", set("spec.vsphere.guestID", strings.Repeat("g", 512))),
	admit("scsiType scsi", set("spec.vsphere.scsiType", "scsi")),
	admit("scsiType virtualscsi", set("spec.vsphere.scsiType", "virtualscsi")),
	admit("scsiType nvme", set("spec.vsphere.scsiType", "nvme")),
	admit("networkAdapterType vmxnet2", set("spec.vsphere.networkAdapterType", "vmxnet2")),
	admit("networkAdapterType e1000x", set("spec.vsphere.networkAdapterType", "e1000x")),
	admit("vmTags as 64 tag IDs", set("spec.vsphere.vmTags", tagIDs(64))),
	admit("vmTags item of 512", set("spec.vsphere.vmTags", []interface{}{strings.Repeat("t", 512)})),
	admit("datacenter of 512", set("spec.vsphere.datacenter", strings.Repeat("d", 512))),
	admit("datastoreCluster of 512", set("spec.vsphere.datastoreCluster", strings.Repeat("d", 512))),
	admit("isoDatastore of 512", set("spec.vsphere.isoDatastore", strings.Repeat("i", 512))),
	admit("resourcePool path of 512", set("spec.vsphere.resourcePool", "/DC0/host/C0/Resources/"+strings.Repeat("r", 489))),
	admit("folder path of 512", set("spec.vsphere.folder", "/DC0/vm/"+strings.Repeat("f", 504))),
	admit("pathPrefix absolute", set("spec.iso.pathPrefix", "/agent-forge")),
	admit("pathPrefix with space and shell character", set("spec.iso.pathPrefix", "ISO Cache/$pool (hosted)")),
	admit("pathPrefix of 512", set("spec.iso.pathPrefix", strings.Repeat("p", 512))),
	admit("checkInterval 10m (upstream's default)", set("spec.iso.checkInterval", "10m")),
	admit("checkInterval 30s", set("spec.iso.checkInterval", "30s")),
	admit("checkInterval 0s", set("spec.iso.checkInterval", "0s")),
	admit("checkInterval 720h", set("spec.iso.checkInterval", "720h")),
	admit("retainVersions 20", set("spec.iso.retainVersions", 20)),
	admit("cleanupPolicy Retain", set("spec.cleanupPolicy", "Retain")),
	admit("credentials Secret in another namespace", set("spec.vsphere.credentialsSecretRef", map[string]interface{}{"name": "vsphere", "namespace": "agent-forge-operator-system"})),
}

// TestUpstreamSpecValuesAreAccepted creates a pool per value the upstream operator admits.
func TestUpstreamSpecValuesAreAccepted(t *testing.T) {
	for _, tc := range upstreamAdmissible {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := objectFromYAML(t, validPoolYAML)
			obj.SetName(uniqueName("upstream-value"))
			for _, e := range tc.edits {
				e(t, obj)
			}
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

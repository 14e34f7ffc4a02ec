package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// upstreamPoolYAML is shaped like the upstream sample pool (v1.0.2): the role label and the user's
// pool label agent-forge.containeroo.ch/nodepool in spec.agent.labels.
const upstreamPoolYAML = `
apiVersion: agent-forge.containeroo.ch/v1alpha1
kind: VsphereAgentPool
metadata:
  name: upstream
  namespace: default
spec:
  hostedClusterRef: {name: demo}
  nodePoolRef: {name: demo-workers}
  infraEnvRef: {name: demo}
  controlPlaneNamespace: clusters-demo
  vsphere:
    credentialsSecretRef: {name: vsphere-credentials}
    datacenter: DC0
    datastoreCluster: DC0_POD0
    isoDatastore: LocalDS_0
    network: VM Network
  agent:
    role: worker
    labels:
      hypershift.openshift.io/nodepool-role: worker
      agent-forge.containeroo.ch/nodepool: demo-workers
`

func TestUpstreamShapedAgentLabelsAreAccepted(t *testing.T) {
	obj := objectFromYAML(t, upstreamPoolYAML)
	obj.SetName(uniqueName("upstream"))
	stored := createAndRead(t, obj)
	labels, _, _ := unstructured.NestedStringMap(stored.Object, "spec", "agent", "labels")
	if labels["hypershift.openshift.io/nodepool-role"] != "worker" || labels["agent-forge.containeroo.ch/nodepool"] != "demo-workers" {
		t.Fatalf("stored labels = %v", labels)
	}

	// Without an explicit role the default (worker) is what the role label must equal.
	noRole := objectFromYAML(t, upstreamPoolYAML)
	noRole.SetName(uniqueName("upstream-default-role"))
	unset("spec.agent.role")(t, noRole)
	createAndRead(t, noRole)

	// Any other user key under the operator's domain that the operator does not own is the user's.
	other := objectFromYAML(t, upstreamPoolYAML)
	other.SetName(uniqueName("upstream-user-key"))
	set("spec.agent.labels", map[string]interface{}{"agent-forge.containeroo.ch/tier": "general"})(t, other)
	createAndRead(t, other)
}

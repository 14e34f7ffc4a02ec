package validation

import (
	"strings"
	"testing"
)

// invalidCase is one bad object and the field path the API server must name when refusing it.
type invalidCase struct {
	name  string
	edits []edit
	field string
}

func one(name, field string, e ...edit) invalidCase {
	return invalidCase{name: name, field: field, edits: e}
}

var invalidPools = []invalidCase{
	// Required fields.
	one("hostedClusterRef missing", "spec.hostedClusterRef", unset("spec.hostedClusterRef")),
	one("nodePoolRef missing", "spec.nodePoolRef", unset("spec.nodePoolRef")),
	one("infraEnvRef missing", "spec.infraEnvRef", unset("spec.infraEnvRef")),
	one("infraEnvRef name missing", "spec.infraEnvRef.name", unset("spec.infraEnvRef.name")),
	one("controlPlaneNamespace missing", "spec.controlPlaneNamespace", unset("spec.controlPlaneNamespace")),
	one("vsphere missing", "spec.vsphere", unset("spec.vsphere")),
	one("credentialsSecretRef missing", "spec.vsphere.credentialsSecretRef", unset("spec.vsphere.credentialsSecretRef")),
	one("datacenter missing", "spec.vsphere.datacenter", unset("spec.vsphere.datacenter")),
	one("datastoreCluster missing", "spec.vsphere.datastoreCluster", unset("spec.vsphere.datastoreCluster")),
	one("isoDatastore missing", "spec.vsphere.isoDatastore", unset("spec.vsphere.isoDatastore")),
	one("network missing", "spec.vsphere.network", unset("spec.vsphere.network")),
	one("agent missing", "spec.agent", unset("spec.agent")),
	one("agent labels missing", "spec.agent.labels", unset("spec.agent.labels")),
	one("datacenter empty", "spec.vsphere.datacenter", set("spec.vsphere.datacenter", "")),
	one("network too long", "spec.vsphere.network", set("spec.vsphere.network", strings.Repeat("n", 513))),

	// References must be DNS names.
	one("hostedClusterRef uppercase and underscore", "spec.hostedClusterRef.name", set("spec.hostedClusterRef.name", "Bad_Name")),
	one("nodePoolRef leading dash", "spec.nodePoolRef.name", set("spec.nodePoolRef.name", "-workers")),
	one("infraEnvRef empty", "spec.infraEnvRef.name", set("spec.infraEnvRef.name", "")),
	one("infraEnvRef too long", "spec.infraEnvRef.name", set("spec.infraEnvRef.name", strings.Repeat("a", 254))),
	one("credentialsSecretRef uppercase", "spec.vsphere.credentialsSecretRef.name", set("spec.vsphere.credentialsSecretRef.name", "Creds")),
	one("credentialsSecretRef namespace with dot", "spec.vsphere.credentialsSecretRef.namespace", set("spec.vsphere.credentialsSecretRef.namespace", "a.b")),

	// controlPlaneNamespace is a DNS label.
	one("controlPlaneNamespace uppercase", "spec.controlPlaneNamespace", set("spec.controlPlaneNamespace", "Clusters-Demo")),
	one("controlPlaneNamespace with dot", "spec.controlPlaneNamespace", set("spec.controlPlaneNamespace", "clusters.demo")),
	one("controlPlaneNamespace too long", "spec.controlPlaneNamespace", set("spec.controlPlaneNamespace", strings.Repeat("c", 64))),

	// Enums and patterns of the VM shape.
	one("firmware unknown", "spec.vsphere.firmware", set("spec.vsphere.firmware", "uefi")),
	one("scsiType too long", "spec.vsphere.scsiType", set("spec.vsphere.scsiType", strings.Repeat("s", 513))),
	one("networkAdapterType too long", "spec.vsphere.networkAdapterType", set("spec.vsphere.networkAdapterType", strings.Repeat("e", 513))),
	one("cleanupPolicy unknown", "spec.cleanupPolicy", set("spec.cleanupPolicy", "Orphan")),
	one("role with space", "spec.agent.role", set("spec.agent.role", "my role")),
	one("role empty", "spec.agent.role", set("spec.agent.role", "")),
	one("role too long", "spec.agent.role", set("spec.agent.role", strings.Repeat("r", 64))),
	one("guestID too long", "spec.vsphere.guestID", set("spec.vsphere.guestID", strings.Repeat("g", 513))),
	one("folder with ..", "spec.vsphere.folder", set("spec.vsphere.folder", "vm/../other")),

	// Sizes.
	one("numCPUs below 1", "spec.template.numCPUs", set("spec.template.numCPUs", 0)),
	one("numCPUs above 256", "spec.template.numCPUs", set("spec.template.numCPUs", 257)),
	one("memoryMiB below 1024", "spec.template.memoryMiB", set("spec.template.memoryMiB", 1020)),
	one("memoryMiB above maximum", "spec.template.memoryMiB", set("spec.template.memoryMiB", 6291460)),
	one("diskGiB below 20", "spec.template.diskGiB", set("spec.template.diskGiB", 10)),
	one("diskGiB above maximum", "spec.template.diskGiB", set("spec.template.diskGiB", 70000)),
	one("namePrefix uppercase", "spec.template.namePrefix", set("spec.template.namePrefix", "Worker")),
	one("namePrefix trailing dash", "spec.template.namePrefix", set("spec.template.namePrefix", "worker-")),
	one("namePrefix too long", "spec.template.namePrefix", set("spec.template.namePrefix", strings.Repeat("w", 59))),

	// ISO cache.
	one("retainVersions zero", "spec.iso.retainVersions", set("spec.iso.retainVersions", 0)),
	one("retainVersions negative", "spec.iso.retainVersions", set("spec.iso.retainVersions", -1)),
	one("retainVersions above 20", "spec.iso.retainVersions", set("spec.iso.retainVersions", 21)),
	one("pathPrefix with ..", "spec.iso.pathPrefix", set("spec.iso.pathPrefix", "agent-forge/../etc")),
	one("pathPrefix is ..", "spec.iso.pathPrefix", set("spec.iso.pathPrefix", "..")),
	one("pathPrefix with a newline", "spec.iso.pathPrefix", set("spec.iso.pathPrefix", "iso\ncache")),
	one("pathPrefix with a control character", "spec.iso.pathPrefix", set("spec.iso.pathPrefix", "iso\x01cache")),
	one("pathPrefix too long", "spec.iso.pathPrefix", set("spec.iso.pathPrefix", strings.Repeat("p", 513))),
	one("checkInterval below 10s", "spec.iso.checkInterval", set("spec.iso.checkInterval", "5s")),
	one("checkInterval not a duration", "spec.iso.checkInterval", set("spec.iso.checkInterval", "hourly")),
	one("maxSize zero", "spec.iso.maxSize", set("spec.iso.maxSize", "0")),
	one("maxSize zero as a number", "spec.iso.maxSize", set("spec.iso.maxSize", 0)),
	one("maxSize negative", "spec.iso.maxSize", set("spec.iso.maxSize", "-1Gi")),
	one("maxSize negative number", "spec.iso.maxSize", set("spec.iso.maxSize", -5)),
	one("maxSize not a quantity", "spec.iso.maxSize", set("spec.iso.maxSize", "big")),
	one("caBundleRef without name", "spec.iso.caBundleRef.name", set("spec.iso.caBundleRef", map[string]interface{}{"kind": "ConfigMap"})),
	one("caBundleRef name empty", "spec.iso.caBundleRef.name", set("spec.iso.caBundleRef", map[string]interface{}{"name": ""})),
	one("caBundleRef name uppercase", "spec.iso.caBundleRef.name", set("spec.iso.caBundleRef", map[string]interface{}{"name": "Image-CA"})),
	one("caBundleRef kind unknown", "spec.iso.caBundleRef.kind", set("spec.iso.caBundleRef", map[string]interface{}{"name": "ca", "kind": "Namespace"})),
	one("caBundleRef key with a slash", "spec.iso.caBundleRef.key", set("spec.iso.caBundleRef", map[string]interface{}{"name": "ca", "key": "certs/ca.crt"})),
	one("caBundleRef key empty", "spec.iso.caBundleRef.key", set("spec.iso.caBundleRef", map[string]interface{}{"name": "ca", "key": ""})),

	// Timing and limits.
	one("registrationTimeout below 1m", "spec.registrationTimeout", set("spec.registrationTimeout", "30s")),
	one("registrationTimeout above 24h", "spec.registrationTimeout", set("spec.registrationTimeout", "25h")),
	one("registrationTimeout not a duration", "spec.registrationTimeout", set("spec.registrationTimeout", "soon")),
	one("maxConcurrentProvisioning above maxVMs", "spec.limits.maxConcurrentProvisioning",
		set("spec.limits", map[string]interface{}{"maxVMs": 3, "maxConcurrentProvisioning": 5})),
	one("maxVMs negative", "spec.limits.maxVMs", set("spec.limits.maxVMs", -1)),
	one("maxVMs above maximum", "spec.limits.maxVMs", set("spec.limits.maxVMs", 10001)),
	one("standby above maxVMs", "spec.standby",
		set("spec.limits", map[string]interface{}{"maxVMs": 2}), set("spec.standby", 3)),
	one("standby negative", "spec.standby", set("spec.standby", -1)),
	one("standby above maximum", "spec.standby", set("spec.standby", 1001)),
	one("maxConcurrentProvisioning zero", "spec.limits.maxConcurrentProvisioning", set("spec.limits.maxConcurrentProvisioning", 0)),
	one("maxConcurrentProvisioning negative", "spec.limits.maxConcurrentProvisioning", set("spec.limits.maxConcurrentProvisioning", -2)),

	// Agent labels.
	one("labels empty", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{})),
	one("labels more than 32", "spec.agent.labels", set("spec.agent.labels", labels(33))),
	one("label key with space", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"bad key": "v"})),
	one("label key leading dash", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"-pool": "v"})),
	one("label key empty", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"": "v"})),
	one("label key uppercase prefix", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"Example.com/pool": "v"})),
	one("label key two slashes", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"example.com/a/b": "v"})),
	one("label key name above 63", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"example.com/" + strings.Repeat("k", 64): "v"})),
	one("label key prefix above 253", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{strings.Repeat("a.", 127) + "b/pool": "v"})),
	// Only an escaped dot separates prefix labels: an unescaped one would let "_" through.
	one("label key prefix with underscore", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"example_com/pool": "v"})),
	one("label value above 63", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"pool": strings.Repeat("v", 64)})),
	one("label value trailing dash", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"pool": "workers-"})),
	one("label value with space", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"pool": "my workers"})),
	one("label reserved agentMachineRef", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"agentMachineRef": "x"})),
	one("label nodepool-role other than the role", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"hypershift.openshift.io/nodepool-role": "infra"})),
	one("label reserved operator pool label", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"agent-forge.containeroo.ch/pool": "x"})),
	one("label reserved operator vsphereagent label", "spec.agent.labels", set("spec.agent.labels", map[string]interface{}{"agent-forge.containeroo.ch/vsphereagent": "x"})),

	// vSphere tags.
	one("vmTags more than 64", "spec.vsphere.vmTags", set("spec.vsphere.vmTags", tags(65))),
	one("vmTags empty item", "spec.vsphere.vmTags", set("spec.vsphere.vmTags", []interface{}{"ok", ""})),
	one("vmTags duplicate", "spec.vsphere.vmTags", set("spec.vsphere.vmTags", []interface{}{"cat/a", "cat/a"})),

	// Failure domains.
	one("failure domain names not unique", "spec.vsphere.failureDomains[1]", set("spec.vsphere.failureDomains", []interface{}{
		map[string]interface{}{"name": "a"}, map[string]interface{}{"name": "a", "datastore": "ds2"}})),
	one("failure domain without a name", "spec.vsphere.failureDomains[0].name", set("spec.vsphere.failureDomains", []interface{}{map[string]interface{}{"datastore": "ds"}})),
	one("failure domain name not a label value", "spec.vsphere.failureDomains[0].name", set("spec.vsphere.failureDomains", []interface{}{map[string]interface{}{"name": "zone a"}})),
	one("failure domain region not a label value", "spec.vsphere.failureDomains[0].region", set("spec.vsphere.failureDomains", []interface{}{map[string]interface{}{"name": "a", "region": "-eu"}})),
	one("failure domain with computeCluster and resourcePool", "spec.vsphere.failureDomains[0]", set("spec.vsphere.failureDomains", []interface{}{
		map[string]interface{}{"name": "a", "computeCluster": "C1", "resourcePool": "C1/Resources/rp"}})),
	one("failure domain folder with ..", "spec.vsphere.failureDomains[0].folder", set("spec.vsphere.failureDomains", []interface{}{map[string]interface{}{"name": "a", "folder": "vm/../x"}})),
	one("failure domain maxVMs negative", "spec.vsphere.failureDomains[0].maxVMs", set("spec.vsphere.failureDomains", []interface{}{map[string]interface{}{"name": "a", "maxVMs": -1}})),
	one("failure domains more than 32", "spec.vsphere.failureDomains", set("spec.vsphere.failureDomains", failureDomains(33))),

	// Static IPs.
	one("network without addressesFromPools", "spec.network.addressesFromPools", set("spec.network", map[string]interface{}{"spareLeases": 1})),
	one("network with no pool", "spec.network.addressesFromPools", set("spec.network", map[string]interface{}{"addressesFromPools": []interface{}{}})),
	one("network with three pools (one per family at most)", "spec.network.addressesFromPools", set("spec.network", staticNetwork(ipPool("a"), ipPool("b"), ipPool("c")))),
	one("network with one pool twice", "spec.network.addressesFromPools", set("spec.network", staticNetwork(ipPool("a"), ipPool("a")))),
	one("network pool kind missing", "spec.network.addressesFromPools[0].kind", set("spec.network", staticNetwork(map[string]interface{}{"apiGroup": "ipam.cluster.x-k8s.io", "name": "a"}))),
	one("network pool name uppercase", "spec.network.addressesFromPools[0].name", set("spec.network", staticNetwork(ipPool("Vm-Net")))),
	one("network nameserver not an IP", "spec.network.nameservers", set("spec.network", withField(staticNetwork(ipPool("a")), "nameservers", []interface{}{"dns.example.com"}))),
	one("network route destination not a CIDR", "spec.network.routes[0].to", set("spec.network", withField(staticNetwork(ipPool("a")), "routes", []interface{}{map[string]interface{}{"to": "10.1.0.0", "via": "10.0.0.1"}}))),
	one("network route via not an IP", "spec.network.routes[0].via", set("spec.network", withField(staticNetwork(ipPool("a")), "routes", []interface{}{map[string]interface{}{"to": "10.1.0.0/16", "via": "gw"}}))),
	one("network spareLeases negative", "spec.network.spareLeases", set("spec.network", withField(staticNetwork(ipPool("a")), "spareLeases", -1))),
	one("network spareLeases above 100", "spec.network.spareLeases", set("spec.network", withField(staticNetwork(ipPool("a")), "spareLeases", 101))),
	one("network interfaceName with space", "spec.network.interfaceName", set("spec.network", withField(staticNetwork(ipPool("a")), "interfaceName", "ens 192"))),
}

// failureDomains returns n valid failure domains.
func failureDomains(n int) []interface{} {
	out := make([]interface{}, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, map[string]interface{}{"name": "zone-" + strings.Repeat("z", i+1)})
	}
	return out
}

func ipPool(name string) map[string]interface{} {
	return map[string]interface{}{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": name}
}

func staticNetwork(pools ...map[string]interface{}) map[string]interface{} {
	list := make([]interface{}, 0, len(pools))
	for _, p := range pools {
		list = append(list, p)
	}
	return map[string]interface{}{"addressesFromPools": list}
}

func withField(m map[string]interface{}, k string, v interface{}) map[string]interface{} {
	m[k] = v
	return m
}

var invalidAgents = []invalidCase{
	one("poolRef missing", "spec.poolRef", unset("spec.poolRef")),
	one("poolRef name empty", "spec.poolRef.name", set("spec.poolRef.name", "")),
	one("poolRef name uppercase", "spec.poolRef.name", set("spec.poolRef.name", "Workers")),
	one("poolRef name with underscore", "spec.poolRef.name", set("spec.poolRef.name", "demo_workers")),
	one("failureDomain too long", "spec.failureDomain", set("spec.failureDomain", strings.Repeat("z", 64))),
}

func TestInvalidPoolsAreRefused(t *testing.T) {
	runInvalid(t, validPoolYAML, "vap", invalidPools)
}

func TestInvalidAgentsAreRefused(t *testing.T) {
	runInvalid(t, validAgentYAML, "va", invalidAgents)
}

// TestTheBaseObjectsAreValid guards the table: every refusal above must come from its one edit.
func TestTheBaseObjectsAreValid(t *testing.T) {
	for _, manifest := range []string{validPoolYAML, validAgentYAML} {
		obj := objectFromYAML(t, manifest)
		obj.SetName(uniqueName("base"))
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatalf("base %s refused: %v", obj.GetKind(), err)
		}
	}
}

func runInvalid(t *testing.T, manifest, prefix string, cases []invalidCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := objectFromYAML(t, manifest)
			obj.SetName(uniqueName(prefix))
			for _, e := range tc.edits {
				e(t, obj)
			}
			assertRefused(t, k8s.Create(ctx, obj), tc.field)
		})
	}
}

// TestEnoughInvalidCases keeps the table at the size the project promises.
func TestEnoughInvalidCases(t *testing.T) {
	if n := len(invalidPools) + len(invalidAgents) + len(immutableCases); n < 45 {
		t.Fatalf("only %d invalid objects; want at least 45", n)
	}
}

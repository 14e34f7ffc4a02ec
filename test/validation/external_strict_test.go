package validation

import (
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The external CRD fixtures (test/crds) are structural schemas of the real assisted-service and Agent
// CAPI provider types, with no x-kubernetes-preserve-unknown-fields except where the real CRDs have it.
// These tests prove the net: a field the real API lacks is refused under strict field validation and
// pruned otherwise, and objects shaped like the real ones are stored as written.

// wellFormedAgentYAML is shaped like an Agent assisted-service writes for a vSphere VM.
const wellFormedAgentYAML = `
apiVersion: agent-install.openshift.io/v1beta1
kind: Agent
metadata:
  namespace: default
  labels:
    infraenvs.agent-install.openshift.io: demo
    agentMachineRef: demo-workers-x7k2p
  annotations:
    agentMachineRefNamespace: clusters-demo
spec:
  approved: true
  role: worker
  hostname: worker-0
  clusterDeploymentName: {name: demo, namespace: clusters-demo}
  installation_disk_id: /dev/disk/by-id/wwn-0x6000c29
  ignitionEndpointTokenReference: {name: token-demo, namespace: clusters-demo}
  nodeLabels: {node-role.kubernetes.io/infra: ""}
status:
  bootstrap: false
  role: worker
  inventory:
    hostname: localhost
    reportTime: "2026-01-01T00:00:00Z"
    bmcAddress: 0.0.0.0
    bmcV6Address: "::/0"
    boot: {currentBootMode: uefi}
    cpu: {architecture: x86_64, count: 4, clockMegahertz: 2400, flags: [sse4_2, avx2], modelName: Xeon}
    memory: {physicalBytes: 17179869184, usableBytes: 16777216000}
    disks:
    - id: /dev/disk/by-id/wwn-0x6000c29
      name: sda
      path: /dev/sda
      byID: /dev/disk/by-id/wwn-0x6000c29
      driveType: SSD
      sizeBytes: 128849018880
      bootable: true
      installationEligibility: {eligible: true, notEligibleReasons: []}
      ioPerf: {syncDurationMilliseconds: 2}
    interfaces:
    - name: ens192
      macAddress: "00:50:56:aa:bb:cc"
      flags: [up, broadcast, running, multicast]
      ipV4Addresses: [192.168.1.20/24]
      ipV6Addresses: []
      hasCarrier: true
      mtu: 1500
      speedMbps: 10000
      vendor: "0x15ad"
      product: "0x07b0"
    systemVendor: {serialNumber: "VMware-42 1e 8c 9a 5b 3d 71 02-9f 4e 11 aa 20 6c d4 03", productName: "VMware7,1", manufacturer: "VMware, Inc.", virtual: true}
  progress: {currentStage: Done, progressStages: [Starting installation, Done], installationPercentage: 100, stageStartTime: "2026-01-01T00:00:00Z"}
  ntpSources: [{sourceName: clock.example.com, sourceState: synced}]
  debugInfo: {state: added-to-existing-cluster, stateInfo: Done, eventsURL: "https://assisted/events", logsURL: "https://assisted/logs"}
  validationsInfo:
    hardware:
    - {id: has-min-cpu-cores, status: success, message: Sufficient CPU cores}
  installation_disk_id: /dev/disk/by-id/wwn-0x6000c29
  deprovision_info: {cluster_name: old, cluster_namespace: old-ns, node_name: worker-0, message: reused}
  csrStatus:
    approvedCSRs: [{name: csr-abc, type: client, approvedAt: "2026-01-01T00:00:00Z"}]
    lastApprovalAttempt: "2026-01-01T00:00:00Z"
  conditions:
  - {type: SpecSynced, status: "True", reason: SyncOK, message: The Spec has been successfully applied, lastTransitionTime: "2026-01-01T00:00:00Z", lastHeartbeatTime: "2026-01-01T00:00:00Z"}
  - {type: Connected, status: "True", reason: AgentIsConnected, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: Validated, status: "True", reason: ValidationsPassing, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: Bound, status: "True", reason: Bound, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: Installed, status: "True", reason: InstallationCompleted, message: "The installation has completed: Done", lastTransitionTime: "2026-01-01T00:00:00Z"}
`

// strict is the test client with strict server-side field validation on every write.
func strict() client.Client {
	return client.WithFieldValidation(k8s, client.FieldValidation(metav1.FieldValidationStrict))
}

// createWithStatus creates obj (spec and metadata) and then writes its status through the status
// subresource, both through c; it returns the object as stored.
func createWithStatus(t *testing.T, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	status, hasStatus := obj.Object["status"]
	delete(obj.Object, "status")
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("create %s: %v", obj.GetKind(), err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
	if hasStatus {
		obj.Object["status"] = status
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatalf("status update %s: %v", obj.GetKind(), err)
		}
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatalf("get: %v", err)
	}
	return got
}

// assertUnknownField checks that err is the API server's strict-decoding refusal naming field.
func assertUnknownField(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a strict field validation error naming %s", field)
	}
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("want a BadRequest 'unknown field' error naming %s, got %T: %v", field, err, err)
	}
	if !strings.Contains(err.Error(), `"`+field+`"`) {
		t.Fatalf("error does not name %s: %v", field, err)
	}
	t.Logf("refused: %v", err)
}

func wellFormedAgent(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	a := objectFromYAML(t, wellFormedAgentYAML)
	a.SetName(uniqueName("agent"))
	return a
}

func TestAgentShapedLikeTheRealOneIsAcceptedStrictly(t *testing.T) {
	a := wellFormedAgent(t)
	want := a.DeepCopy()
	got := createWithStatus(t, strict(), a)
	for _, part := range []string{"spec", "status"} {
		if !reflect.DeepEqual(got.Object[part], want.Object[part]) {
			t.Errorf("%s not stored as written:\n got  %v\n want %v", part, got.Object[part], want.Object[part])
		}
	}
}

func TestAgentUnknownSpecFieldIsRefusedStrictly(t *testing.T) {
	a := wellFormedAgent(t)
	delete(a.Object, "status")
	set("spec.notAField", "x")(t, a)
	err := strict().Create(ctx, a)
	if err == nil {
		_ = k8s.Delete(ctx, a)
	}
	assertUnknownField(t, err, "spec.notAField")
}

func TestAgentUnknownInventoryFieldIsRefusedStrictly(t *testing.T) {
	a := wellFormedAgent(t)
	delete(a.Object, "status")
	createWithStatus(t, strict(), a)
	b := wellFormedAgent(t)
	a.Object["status"] = b.Object["status"]
	set("status.inventory.notAField", "x")(t, a)
	assertUnknownField(t, strict().Status().Update(ctx, a), "status.inventory.notAField")
}

// With the API server's default directive (Warn; the test environment's clients send Strict unless
// told otherwise) the same fields are dropped with a warning only: what a real hub does to a client that
// does not ask for Strict, and what the old preserve-unknown-fields fixtures did not do at all.
func TestAgentUnknownFieldIsPrunedWithoutStrictValidation(t *testing.T) {
	warn := client.WithFieldValidation(k8s, client.FieldValidation(metav1.FieldValidationWarn))
	a := wellFormedAgent(t)
	set("spec.notAField", "x")(t, a)
	set("status.inventory.interfaces", []interface{}{map[string]interface{}{
		"macAddress": "00:50:56:aa:bb:cc", "flags": []interface{}{}, "ipV4Addresses": []interface{}{},
		"ipV6Addresses": []interface{}{}, "mac": "00:50:56:aa:bb:cc",
	}})(t, a)
	got := createWithStatus(t, warn, a)
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "notAField"); found {
		t.Errorf("spec.notAField was stored: %v", got.Object["spec"])
	}
	ifaces, _, _ := unstructured.NestedSlice(got.Object, "status", "inventory", "interfaces")
	if len(ifaces) != 1 {
		t.Fatalf("interfaces = %v", ifaces)
	}
	if _, found := ifaces[0].(map[string]interface{})["mac"]; found {
		t.Errorf("interfaces[0].mac was stored: %v", ifaces[0])
	}
}

// Required fields of the real types: spec.role (no omitempty) and an interface's address lists and flags.
func TestAgentRequiredFields(t *testing.T) {
	a := wellFormedAgent(t)
	delete(a.Object, "status")
	unset("spec.role")(t, a)
	err := strict().Create(ctx, a)
	if err == nil {
		_ = k8s.Delete(ctx, a)
	}
	assertRefused(t, err, "spec.role")

	b := wellFormedAgent(t)
	delete(b.Object, "status")
	createWithStatus(t, strict(), b)
	b.Object["status"] = wellFormedAgent(t).Object["status"]
	set("status.inventory.interfaces", []interface{}{map[string]interface{}{"macAddress": "00:50:56:aa:bb:cc"}})(t, b)
	assertRefused(t, strict().Status().Update(ctx, b), "status.inventory.interfaces[0].flags")
}

// The other external kinds the world writes, shaped like the real ones, are stored as written under
// strict validation; one field the real API lacks is refused.
func TestExternalKindsShapedLikeTheRealOnesAreAcceptedStrictly(t *testing.T) {
	cases := []struct {
		name, manifest, unknown string
	}{
		{"InfraEnv", `
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata: {namespace: default}
spec:
  pullSecretRef: {name: pull-secret}
  cpuArchitecture: x86_64
  ipxeScriptType: DiscoveryImageAlways
  agentLabels: {example.com/pool: demo-workers}
  nmStateConfigLabelSelector: {matchLabels: {infraenv: demo}}
  sshAuthorizedKey: ssh-ed25519 AAAA
  proxy: {httpProxy: "http://proxy:3128", noProxy: .cluster.local}
  additionalNTPSources: [clock.example.com]
  kernelArguments: [{operation: append, value: rd.net.timeout.carrier=60}]
  agentApproval: {autoApprove: false}
status:
  isoDownloadURL: "https://assisted-image-service/images/abc?api_key=x&arch=x86_64&type=minimal-iso&version=4.18"
  createdTime: "2026-01-01T00:00:00Z"
  agentLabelSelector: {matchLabels: {infraenvs.agent-install.openshift.io: demo}}
  bootArtifacts: {initrd: "https://x/initrd", kernel: "https://x/kernel", rootfs: "https://x/rootfs", ipxeScript: "https://x/ipxe", discoveryIgnitionURL: "https://x/ign"}
  debugInfo: {eventsURL: "https://x/events"}
  conditions:
  - {type: ImageCreated, status: "True", reason: ImageCreated, message: Image has been created, lastTransitionTime: "2026-01-01T00:00:00Z"}
`, "status.bootArtifacts.notAField"},
		{"AgentMachine v1beta1", `
apiVersion: capi-provider.agent-install.openshift.io/v1beta1
kind: AgentMachine
metadata: {namespace: default}
spec:
  agentLabelSelector: {matchLabels: {example.com/pool: demo-workers}}
  providerID: agent://0a1b2c3d
status:
  ready: true
  agentRef: {name: 0a1b2c3d, namespace: default}
  addresses: [{type: Hostname, address: worker-0}, {type: InternalIP, address: 192.168.1.20}]
  conditions:
  - {type: Ready, status: "True", reason: InfoReported, message: "", observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: AgentReserved, status: "True", reason: AgentReserved, message: "", observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z"}
`, "status.conditions[0].severity"},
		{"AgentMachine v1alpha1", `
apiVersion: capi-provider.agent-install.openshift.io/v1alpha1
kind: AgentMachine
metadata: {namespace: default}
spec:
  providerID: agent://0a1b2c3d
status:
  ready: false
  failureReason: CreateError
  failureMessage: the agent went away
`, "status.notAField"},
		{"NMStateConfig", `
apiVersion: agent-install.openshift.io/v1beta1
kind: NMStateConfig
metadata: {namespace: default, labels: {infraenv: demo}}
spec:
  interfaces: [{name: eth0, macAddress: "00:50:56:aa:bb:cc"}]
  config:
    interfaces:
    - {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.168.1.20, prefix-length: 24}]}}
    dns-resolver: {config: {server: [192.168.1.1]}}
    routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.168.1.1, next-hop-interface: eth0}]}
`, "spec.notAField"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := objectFromYAML(t, tc.manifest)
			obj.SetName(uniqueName("external"))
			want := obj.DeepCopy()
			got := createWithStatus(t, strict(), obj)
			for _, part := range []string{"spec", "status"} {
				if w, ok := want.Object[part]; ok && !reflect.DeepEqual(got.Object[part], w) {
					t.Errorf("%s not stored as written:\n got  %v\n want %v", part, got.Object[part], w)
				}
			}

			bad := want.DeepCopy()
			bad.SetName(uniqueName("external"))
			path := tc.unknown
			if i := strings.Index(path, "[0]"); i >= 0 {
				// a field inside the first list item
				list, _, _ := unstructured.NestedSlice(bad.Object, strings.Split(path[:i], ".")...)
				list[0].(map[string]interface{})[path[i+4:]] = int64(1)
				_ = unstructured.SetNestedSlice(bad.Object, list, strings.Split(path[:i], ".")...)
			} else {
				set(path, "x")(t, bad)
			}
			var err error
			if strings.HasPrefix(path, "status.") {
				status := bad.Object["status"]
				delete(bad.Object, "status")
				if err := strict().Create(ctx, bad); err != nil {
					t.Fatalf("create: %v", err)
				}
				t.Cleanup(func() { _ = k8s.Delete(ctx, bad) })
				bad.Object["status"] = status
				err = strict().Status().Update(ctx, bad)
			} else if err = strict().Create(ctx, bad); err == nil {
				_ = k8s.Delete(ctx, bad)
			}
			assertUnknownField(t, err, path)
		})
	}
}

// The net is on by default: the plain client every test builds from the test environment (as do the
// world driver and the operator's identity) refuses an unknown field without asking for it.
func TestDefaultTestClientRefusesUnknownFields(t *testing.T) {
	a := wellFormedAgent(t)
	delete(a.Object, "status")
	set("spec.notAField", "x")(t, a)
	err := k8s.Create(ctx, a)
	if err == nil {
		_ = k8s.Delete(ctx, a)
	}
	assertUnknownField(t, err, "spec.notAField")
}

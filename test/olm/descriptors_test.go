package olm

import (
	"strings"
	"testing"
)

const ui = "urn:alm:descriptor:com.tectonic.ui:"

func loadCurrentBundle(t *testing.T) *bundle {
	t.Helper()
	dir, err := repoPath("bundle")
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadBundle(dir)
	if err != nil {
		t.Fatalf("loading bundle (run 'make bundle'): %v", err)
	}
	return b
}

// TestEverySpecFieldHasADescriptor fails when a spec field of an owned CRD has no specDescriptor, so the
// console form would silently omit it. Fix by adding a +operator-sdk:csv:customresourcedefinitions
// marker to the Go field and running 'make bundle'.
func TestEverySpecFieldHasADescriptor(t *testing.T) {
	b := loadCurrentBundle(t)
	owned := map[string]ownedCRD{}
	for _, o := range b.csv.Spec.CustomResourceDefinitions.Owned {
		owned[o.Name] = o
	}
	if len(owned) != len(b.crds) {
		t.Errorf("CSV owns %d CRDs, bundle ships %d", len(owned), len(b.crds))
	}
	for name, crd := range b.crds {
		o, ok := owned[name]
		if !ok {
			t.Errorf("bundled CRD %s is not an owned CRD of the CSV", name)
			continue
		}
		schema, version, err := servedSchema(crd)
		if err != nil {
			t.Fatal(err)
		}
		if o.Version != version || o.Kind != crd.Spec.Names.Kind {
			t.Errorf("%s: CSV describes %s/%s, CRD serves %s/%s", name, o.Kind, o.Version, crd.Spec.Names.Kind, version)
		}
		if o.DisplayName == "" {
			t.Errorf("%s: owned CRD has no displayName", name)
		}
		spec, ok := schema.Properties["spec"]
		if !ok {
			t.Fatalf("%s: schema has no spec", name)
		}
		descs := descriptorsByPath(o.SpecDescriptors)
		paths := schemaPaths(spec, "")
		if len(paths) == 0 {
			t.Errorf("%s: spec has no fields", name)
		}
		for _, p := range paths {
			d, ok := descs[p]
			switch {
			case !ok:
				t.Errorf("%s: spec field %q has no specDescriptor", crd.Spec.Names.Kind, p)
			case d.DisplayName == "" || d.Description == "":
				t.Errorf("%s: specDescriptor %q needs a displayName and a description", crd.Spec.Names.Kind, p)
			}
		}
		for p := range descs {
			if !contains(paths, p) {
				t.Errorf("%s: specDescriptor %q names no spec field", crd.Spec.Names.Kind, p)
			}
		}
		statusPaths := schemaPaths(schema.Properties["status"], "")
		for _, d := range o.StatusDescriptors {
			if !contains(statusPaths, d.Path) {
				t.Errorf("%s: statusDescriptor %q names no status field", crd.Spec.Names.Kind, d.Path)
			}
		}
	}
}

// TestConsoleWidgets pins the x-descriptors that decide how the console renders the pool form.
func TestConsoleWidgets(t *testing.T) {
	b := loadCurrentBundle(t)
	pool := ownedByKind(t, b, "VsphereAgentPool")
	agent := ownedByKind(t, b, "VsphereAgent")
	spec := descriptorsByPath(pool.SpecDescriptors)

	want := map[string][]string{
		"vsphere.credentialsSecretRef.name": {"urn:alm:descriptor:io.kubernetes:Secret"},
		"agent.approve":                     {ui + "booleanSwitch"},
		"iso.ejectAfterInstall":             {ui + "booleanSwitch"},
		"paused":                            {ui + "booleanSwitch"},
		"vsphere.diskEagerlyScrub":          {ui + "booleanSwitch", ui + "advanced"},
		"template.numCPUs":                  {ui + "number"},
		"template.memoryMiB":                {ui + "number"},
		"template.diskGiB":                  {ui + "number"},
		"limits.maxVMs":                     {ui + "number"},
		"iso.retainVersions":                {ui + "number", ui + "advanced"},
		"cleanupPolicy":                     {ui + "select:Delete", ui + "select:Retain"},
		"vsphere.guestID":                   {ui + "advanced"},
		"registrationTimeout":               {ui + "advanced"},
	}
	for path, xs := range want {
		for _, x := range xs {
			if !hasX(spec[path], x) {
				t.Errorf("VsphereAgentPool specDescriptor %q lacks %s (has %v)", path, x, spec[path].XDescriptors)
			}
		}
	}
	// fieldGroup is deprecated since OpenShift 4.5 (the console nests fields by their path); none may remain.
	for kind, o := range map[string]ownedCRD{"VsphereAgentPool": pool, "VsphereAgent": agent} {
		for _, d := range append(append([]descriptor{}, o.SpecDescriptors...), o.StatusDescriptors...) {
			for _, x := range d.XDescriptors {
				if strings.Contains(x, "fieldGroup") || strings.Contains(x, "arrayFieldGroup") {
					t.Errorf("%s descriptor %q uses the deprecated %s", kind, d.Path, x)
				}
			}
		}
	}
	// References to other objects are resource pickers of the kind they name.
	for path, picker := range map[string]string{
		"hostedClusterRef.name":             "urn:alm:descriptor:io.kubernetes:hypershift.openshift.io:v1beta1:HostedCluster",
		"nodePoolRef.name":                  "urn:alm:descriptor:io.kubernetes:hypershift.openshift.io:v1beta1:NodePool",
		"infraEnvRef.name":                  "urn:alm:descriptor:io.kubernetes:agent-install.openshift.io:v1beta1:InfraEnv",
		"vsphere.credentialsSecretRef.name": "urn:alm:descriptor:io.kubernetes:Secret",
	} {
		if !hasX(spec[path], picker) {
			t.Errorf("VsphereAgentPool specDescriptor %q is not a resource picker (%s): %v", path, picker, spec[path].XDescriptors)
		}
	}
	agentSpec := descriptorsByPath(agent.SpecDescriptors)
	if !hasX(agentSpec["poolRef.name"], "urn:alm:descriptor:io.kubernetes:agent-forge.containeroo.ch:v1alpha1:VsphereAgentPool") {
		t.Errorf("VsphereAgent specDescriptor poolRef.name is not a VsphereAgentPool picker: %v", agentSpec["poolRef.name"].XDescriptors)
	}

	for kind, o := range map[string]ownedCRD{"VsphereAgentPool": pool, "VsphereAgent": agent} {
		if !hasX(descriptorsByPath(o.StatusDescriptors)["conditions"], "urn:alm:descriptor:io.kubernetes.conditions") {
			t.Errorf("%s: status.conditions lacks the io.kubernetes.conditions statusDescriptor", kind)
		}
	}
	poolStatus := descriptorsByPath(pool.StatusDescriptors)
	for _, p := range []string{"waitingAgentMachines", "desiredReplicas", "availableAgents", "vms", "iso.path", "iso.sha256"} {
		if _, ok := poolStatus[p]; !ok {
			t.Errorf("VsphereAgentPool: no statusDescriptor for %q", p)
		}
	}
	agentStatus := descriptorsByPath(agent.StatusDescriptors)
	if !hasX(agentStatus["vm.phase"], "urn:alm:descriptor:io.kubernetes.phase") {
		t.Errorf("VsphereAgent: status.vm.phase lacks the io.kubernetes.phase statusDescriptor")
	}
	for _, p := range []string{"isoEjection", "isoEjection.isoPath", "vm.isoPath"} {
		if _, ok := agentStatus[p]; !ok {
			t.Errorf("VsphereAgent: no statusDescriptor for %q", p)
		}
	}
}

// TestCSVMetadata checks what OperatorHub needs besides descriptors.
func TestCSVMetadata(t *testing.T) {
	b := loadCurrentBundle(t)
	ann := b.csv.Metadata.Annotations
	for _, key := range []string{
		"alm-examples", "capabilities", "categories", "containerImage", "operators.openshift.io/valid-subscription",
		"features.operators.openshift.io/disconnected", "features.operators.openshift.io/fips-compliant",
		"features.operators.openshift.io/proxy-aware", "features.operators.openshift.io/tls-profiles",
		"features.operators.openshift.io/token-auth-aws", "features.operators.openshift.io/token-auth-azure",
		"features.operators.openshift.io/token-auth-gcp",
	} {
		if ann[key] == "" {
			t.Errorf("CSV annotation %s is missing", key)
		}
	}
	if b.csv.Spec.MinKubeVersion == "" {
		t.Error("CSV has no minKubeVersion")
	}
	if want := "agent-forge-operator.v" + b.csv.Spec.Version; b.csv.Metadata.Name != want {
		t.Errorf("CSV name %q, want %q", b.csv.Metadata.Name, want)
	}
	// The development render names the image by the version's tag, a release render by digest (images_test.go).
	if img := ann["containerImage"]; !strings.HasSuffix(img, ":v"+b.csv.Spec.Version) && !digestRef.MatchString(img) {
		t.Errorf("containerImage %q is neither the image of version %s nor pinned by digest", img, b.csv.Spec.Version)
	}
}

func ownedByKind(t *testing.T, b *bundle, kind string) ownedCRD {
	t.Helper()
	for _, o := range b.csv.Spec.CustomResourceDefinitions.Owned {
		if o.Kind == kind {
			return o
		}
	}
	t.Fatalf("CSV owns no %s", kind)
	return ownedCRD{}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

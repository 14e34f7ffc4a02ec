package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// networkPolicies renders a kustomization with the pinned kustomize and returns its NetworkPolicies and
// the manager's pod template labels.
func networkPolicies(t *testing.T, dir string) ([]networkingv1.NetworkPolicy, objects) {
	t.Helper()
	kustomize := repoPath(t, "bin", "kustomize")
	if _, err := os.Stat(kustomize); err != nil {
		t.Fatalf("bin/kustomize not built (make test builds it for bundle-verify; alone: make bin/kustomize): %v", err)
	}
	out, err := exec.CommandContext(t.Context(), kustomize, "build", repoPath(t, "config", dir)).Output()
	if err != nil {
		t.Fatalf("kustomize build config/%s: %v", dir, err)
	}
	o := newObjects()
	o.add(t, "kustomize build config/"+dir, out)
	return policiesIn(t, dir, out), o
}

func policiesIn(t *testing.T, name string, data []byte) []networkingv1.NetworkPolicy {
	t.Helper()
	var out []networkingv1.NetworkPolicy
	for _, doc := range splitDocs(data) {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if head.Kind == "NetworkPolicy" {
			var np networkingv1.NetworkPolicy
			if err := yaml.UnmarshalStrict(doc, &np); err != nil {
				t.Fatalf("%s: NetworkPolicy: %v", name, err)
			}
			out = append(out, np)
		}
	}
	return out
}

// allowsEgress: some egress rule admits proto/port (rules here name ports only, any destination).
func allowsEgress(np networkingv1.NetworkPolicy, proto string, port int) bool {
	for _, r := range np.Spec.Egress {
		if len(r.To) == 0 && rulePorts(r.Ports, proto, port) {
			return true
		}
	}
	return false
}

// ingressFrom: the namespaces (by kubernetes.io/metadata.name) allowed to reach proto/port; "*" when any
// source may.
func ingressFrom(np networkingv1.NetworkPolicy, proto string, port int) []string {
	var from []string
	for _, r := range np.Spec.Ingress {
		if !rulePorts(r.Ports, proto, port) {
			continue
		}
		if len(r.From) == 0 {
			return []string{"*"}
		}
		for _, p := range r.From {
			if p.NamespaceSelector == nil || p.PodSelector != nil || p.IPBlock != nil {
				return []string{"*"} // not a plain namespace peer: treat as open
			}
			ns := p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
			if ns == "" || len(p.NamespaceSelector.MatchLabels) != 1 || len(p.NamespaceSelector.MatchExpressions) > 0 {
				return []string{"*"}
			}
			from = append(from, ns)
		}
	}
	slices.Sort(from)
	return from
}

func rulePorts(ports []networkingv1.NetworkPolicyPort, proto string, port int) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && string(*p.Protocol) == proto && p.Port != nil && p.Port.IntValue() == port {
			return true
		}
	}
	return false
}

// checkManagerPolicy: the one policy selects the manager's pods, lets only the monitoring stacks reach
// the metrics port and nothing else in, and lets the manager reach the API server, DNS, vCenters and
// image hosts.
func checkManagerPolicy(t *testing.T, name string, nps []networkingv1.NetworkPolicy, o objects, deployment string) {
	t.Helper()
	if len(nps) != 1 {
		t.Fatalf("%s: %d NetworkPolicies, want 1", name, len(nps))
	}
	np := nps[0]
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Errorf("%s: policyTypes %v, want Ingress and Egress", name, np.Spec.PolicyTypes)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() {
		t.Fatalf("%s: podSelector %v selects every pod (%v)", name, np.Spec.PodSelector, err)
	}
	if pod, ok := o.pods[deployment]; ok && !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("%s: podSelector %v does not select the manager's pods %v", name, np.Spec.PodSelector, pod.Labels)
	}
	if got, want := ingressFrom(np, "TCP", 8443), []string{"openshift-monitoring", "openshift-user-workload-monitoring"}; !slices.Equal(got, want) {
		t.Errorf("%s: metrics (8443) reachable from %v, want %v", name, got, want)
	}
	for _, port := range []int{8081, 9443, 22} {
		if got := ingressFrom(np, "TCP", port); len(got) > 0 {
			t.Errorf("%s: port %d reachable from %v, want nothing", name, port, got)
		}
	}
	for _, e := range []struct {
		proto string
		port  int
		what  string
	}{{"TCP", 6443, "the API server"}, {"UDP", 53, "DNS"}, {"UDP", 5353, "OpenShift's DNS"}, {"TCP", 443, "vCenters and image hosts"}} {
		if !allowsEgress(np, e.proto, e.port) {
			t.Errorf("%s: egress to %s (%s %d) not allowed", name, e.what, e.proto, e.port)
		}
	}
	if allowsEgress(np, "TCP", 2379) {
		t.Errorf("%s: egress is open beyond the named ports", name)
	}
}

// What `make deploy` applies: the manager's NetworkPolicy with the rest.
func TestNetworkPolicyInKustomizeOutput(t *testing.T) {
	nps, o := networkPolicies(t, "default")
	checkManagerPolicy(t, "config/default", nps, o, bundlePrefix+"controller-manager")
}

// What an OLM user applies: the same policy in the suggested namespace, named like the bundle's objects;
// its selector matches the pod template of the CSV's Deployment.
func TestNetworkPolicyForOLMInstalls(t *testing.T) {
	nps, _ := networkPolicies(t, "network-policy-olm")
	o := newObjects()
	readFiles(t, o, repoPath(t, "bundle", "manifests", "*.yaml"))
	checkManagerPolicy(t, "config/network-policy-olm", nps, o, bundlePrefix+"controller-manager")
	if nps[0].Namespace != "agent-forge-operator" || nps[0].Name != bundlePrefix+"controller-manager" {
		t.Errorf("policy %s/%s, want agent-forge-operator/%scontroller-manager", nps[0].Namespace, nps[0].Name, bundlePrefix)
	}
}

// The bundle carries no NetworkPolicy: OLM v1 refuses it as a bundle object and Red Hat's certification
// pipeline rejects bundles with one.
func TestBundleHasNoNetworkPolicy(t *testing.T) {
	files, err := filepath.Glob(repoPath(t, "bundle", "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundle manifests (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if nps := policiesIn(t, f, b); len(nps) > 0 {
			t.Errorf("%s: the bundle ships a NetworkPolicy", f)
		}
	}
}

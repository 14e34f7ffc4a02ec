package pool

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// The pool's hostedClusterRef must be the NodePool's spec.clusterName and its controlPlaneNamespace the
// namespace HyperShift derives from that HostedCluster; each disagreement names the expected value.
func TestReferenceMismatch(t *testing.T) {
	nodePool := func(clusterName string) agents.NodePool {
		u := agents.New(agents.NodePoolGVK)
		u.SetNamespace("clusters")
		u.SetName("workers")
		if clusterName != "" {
			_ = unstructured.SetNestedField(u.Object, clusterName, "spec", "clusterName")
		}
		return agents.NodePoolFrom(u)
	}
	for _, tc := range []struct {
		name, hostedCluster, cpNS, clusterName string
		reason                                 string
		mentions                               []string
	}{
		{name: "both agree", hostedCluster: "hc1", cpNS: "clusters-hc1", clusterName: "hc1"},
		{name: "dots in the HostedCluster name become dashes", hostedCluster: "hc.one", cpNS: "clusters-hc-one", clusterName: "hc.one"},
		{name: "NodePool without clusterName: no verdict", hostedCluster: "hc1", cpNS: "typo", clusterName: ""},
		{name: "mistyped controlPlaneNamespace", hostedCluster: "hc1", cpNS: "clusters-hc2", clusterName: "hc1",
			reason: afv1.ReasonControlPlaneNamespaceMismatch, mentions: []string{`expected controlPlaneNamespace "clusters-hc1"`, `"clusters-hc2"`}},
		{name: "dots kept in controlPlaneNamespace", hostedCluster: "hc.one", cpNS: "clusters-hcone", clusterName: "hc.one",
			reason: afv1.ReasonControlPlaneNamespaceMismatch, mentions: []string{`expected controlPlaneNamespace "clusters-hc-one"`}},
		{name: "hostedClusterRef of another cluster", hostedCluster: "hc2", cpNS: "clusters-hc1", clusterName: "hc1",
			reason: afv1.ReasonHostedClusterMismatch, mentions: []string{`expected hostedClusterRef.name "hc1"`, `"hc2"`}},
		{name: "both wrong: the HostedCluster first, both expected values named", hostedCluster: "hc2", cpNS: "clusters-hc2", clusterName: "hc1",
			reason: afv1.ReasonHostedClusterMismatch, mentions: []string{`expected hostedClusterRef.name "hc1"`, `expected controlPlaneNamespace "clusters-hc1"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &afv1.VsphereAgentPoolSpec{HostedClusterRef: afv1.HostedClusterReference{Name: tc.hostedCluster}, ControlPlaneNamespace: tc.cpNS}
			reason, msg := referenceMismatch(spec, nodePool(tc.clusterName))
			if reason != tc.reason {
				t.Fatalf("reason %q, want %q (message %q)", reason, tc.reason, msg)
			}
			if reason == "" && msg != "" {
				t.Errorf("no mismatch but message %q", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q does not mention %s", msg, m)
				}
			}
		})
	}
}

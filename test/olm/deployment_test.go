package olm

import (
	"bytes"
	"encoding/base64"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDeploymentIsRestricted checks the operator Deployment OLM installs against the restricted pod
// security profile and the operability basics (probes, resources, leader election).
func TestDeploymentIsRestricted(t *testing.T) {
	b := loadCurrentBundle(t)
	deps := b.csv.Spec.Install.Spec.Deployments
	if len(deps) != 1 {
		t.Fatalf("want one Deployment in the CSV, got %d", len(deps))
	}
	pod := deps[0].Spec.Template.Spec
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context is not restricted: %+v", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("manager has no security context")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("manager may escalate privileges")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("manager's root filesystem is writable")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("manager capabilities not dropped: %+v", sc.Capabilities)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
	}
	// OpenShift's conventions for its operators: requests, no CPU limit (throttling a controller
	// delays every reconcile for nothing the node could not give); memory bounded.
	if _, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		t.Errorf("a CPU limit is set: %v", c.Resources.Limits)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Error("no memory limit")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe is not /healthz: %+v", c.LivenessProbe)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe is not /readyz: %+v", c.ReadinessProbe)
	}
	if !slices.Contains(c.Args, "--leader-elect") {
		t.Errorf("leader election is off: %v", c.Args)
	}
	// A release bundle pins the image by digest (make bundle-digests); it is still the annotated repository.
	want := b.csv.Metadata.Annotations["containerImage"]
	if repo, _, _ := strings.Cut(want, ":"); c.Image != want && !strings.HasPrefix(c.Image, repo+"@sha256:") {
		t.Errorf("manager image %q differs from the containerImage annotation %q", c.Image, want)
	}
}

// TestIconIsOurs checks the CSV icon is config/manifests/icon.svg (OperatorHub refuses an empty icon).
func TestIconIsOurs(t *testing.T) {
	b := loadCurrentBundle(t)
	if len(b.csv.Spec.Icon) != 1 || b.csv.Spec.Icon[0].MediaType != "image/svg+xml" {
		t.Fatalf("want one SVG icon, got %+v", b.csv.Spec.Icon)
	}
	got, err := base64.StdEncoding.DecodeString(b.csv.Spec.Icon[0].Base64Data)
	if err != nil {
		t.Fatal(err)
	}
	path, err := repoPath("config", "manifests", "icon.svg")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the CSV icon differs from config/manifests/icon.svg; update the base CSV's spec.icon")
	}
}

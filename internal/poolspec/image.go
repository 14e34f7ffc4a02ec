package poolspec

import (
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/planner"
)

// BootedImage is the discovery image a VsphereAgent's VM booted: the content address in its ISO path
// and the image version recorded at creation (zero for VMs created before versions were recorded).
func BootedImage(va *afv1.VsphereAgent) planner.Image {
	img := planner.Image{SHA256: isoDigest(va.Status.VM.ISOPath)}
	if t := va.Status.VM.ImageCreatedTime; t != nil {
		img.CreatedTime = t.Time
	}
	return img
}

// isoDigest is the <sha256> of a cached ISO path "[ds] prefix/<sha256>.iso", or "".
func isoDigest(p string) string {
	if !strings.HasSuffix(p, ".iso") {
		return ""
	}
	p = strings.TrimSuffix(p, ".iso")
	return p[strings.LastIndexAny(p, "/ ]")+1:]
}

// Image is the image the pool's cache serves (status.iso), or zero when none is cached.
func Image(pool *afv1.VsphereAgentPool) planner.Image {
	st := pool.Status.ISO
	if st == nil || st.Path == "" || st.SHA256 == "" {
		return planner.Image{}
	}
	img := planner.Image{SHA256: st.SHA256}
	if st.SourceCreatedTime != nil {
		img.CreatedTime = st.SourceCreatedTime.Time
	}
	return img
}

// HoldsLease reports whether the VM was created with a static-IP lease (spec.network).
func HoldsLease(va *afv1.VsphereAgent) bool {
	return va.Status.StaticIP != nil && va.Status.StaticIP.Lease != ""
}

// ReplaceOutdated is spec.iso.replaceOutdatedVMs (default true).
func ReplaceOutdated(pool *afv1.VsphereAgentPool) bool {
	return pool.Spec.ISO.ReplaceOutdatedVMs == nil || *pool.Spec.ISO.ReplaceOutdatedVMs
}

package controllers

import (
	"context"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/planner"
)

// bootedImage is the discovery image a VsphereAgent's VM booted: the content address in its ISO path
// and the image version recorded at creation (zero for VMs created before versions were recorded).
func bootedImage(va *afv1.VsphereAgent) planner.Image {
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

// poolImage is the image the pool's cache serves (status.iso), or zero when none is cached.
func poolImage(pool *afv1.VsphereAgentPool) planner.Image {
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

// currentImage is the pool's cached image when it is the InfraEnv's current one (same createdTime, ISO
// ready); zero otherwise: while the cache catches up, a replacement would boot the old image again.
func currentImage(s *poolScope) planner.Image {
	img := poolImage(s.pool)
	if s.infraEnv == nil || s.infraEnv.CreatedTime == nil || s.isoCond == nil || !s.isoCond.status ||
		!img.CreatedTime.Equal(s.infraEnv.CreatedTime.Time) {
		return planner.Image{}
	}
	return img
}

// holdsLease: the VM was created with a static-IP lease (spec.network).
func holdsLease(va *afv1.VsphereAgent) bool {
	return va.Status.StaticIP != nil && va.Status.StaticIP.Lease != ""
}

func replaceOutdatedEnabled(pool *afv1.VsphereAgentPool) bool {
	return pool.Spec.ISO.ReplaceOutdatedVMs == nil || *pool.Spec.ISO.ReplaceOutdatedVMs
}

// reportImage sets the VsphereAgent's ImageCurrent condition against the pool's cached image (the pool
// decides the replacement; this shows each VM's standing, e.g. a bound worker on an older image).
func (r *VsphereAgentReconciler) reportImage(_ context.Context, s *vmScope) (bool, error) {
	va := s.va
	state := planner.Lifecycle(planner.VMObservation{
		Name: va.Name, Phase: va.Status.VM.Phase, Reason: va.Status.VM.Reason, Deleting: !va.DeletionTimestamp.IsZero(),
		MachineRef: va.Status.VM.MachineName != "", AgentBound: s.agent != nil && s.agent.IsBound(),
	})
	v := planner.DecideImage(planner.ImageCheck{
		Enabled: replaceOutdatedEnabled(s.pool), Current: poolImage(s.pool), Booted: bootedImage(va), State: state,
		StaticIPLease: holdsLease(va),
	})
	if v.Reason != planner.ImageReasonUnknown {
		setCondition(&va.Status.Conditions, afv1.ConditionImageCurrent, v.Current, v.Reason, v.Message, va.Generation)
	}
	return true, nil
}

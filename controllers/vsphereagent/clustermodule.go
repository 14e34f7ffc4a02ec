package vsphereagent

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// A VM's membership of its pool's cluster module (spec.antiAffinity, see controllers/pool/antiaffinity.go):
// a new VM joins before it is powered on (ensureVM passes the module to CreateVM); a VM made before the
// module existed, or whose module was replaced, joins afterwards (joinClusterModule); a VM leaves before it
// is destroyed (leaveClusterModules). Membership never holds a VM back: a failed join is a condition, a
// Warning Event and a retry.

// joinRetry is how long a VM whose join failed waits before the next try.
const joinRetry = time.Minute

// clusterModuleOf is the module the pool's status names for the VM's failure domain ("" when the pool
// asks for no anti-affinity or records none for it).
func clusterModuleOf(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) string {
	if pool == nil || !pool.Spec.AntiAffinity.Enabled() {
		return ""
	}
	m, _ := pool.Status.AntiAffinity.ModuleFor(va.Spec.FailureDomain)
	return m.ModuleID
}

// joinClusterModule puts an existing VM into its pool's module when it is not recorded as a member of it.
func (r *Reconciler) joinClusterModule(ctx context.Context, s *vmScope) (bool, error) {
	va, pool := s.va, s.pool
	if !pool.Spec.AntiAffinity.Enabled() {
		// Off: the pool deletes its modules (and so the memberships); nothing to say per VM.
		meta.RemoveStatusCondition(&va.Status.Conditions, afv1.ConditionClusterModuleMember)
		va.Status.VM.ClusterModule = ""
		return true, nil
	}
	if va.Status.VM.InstanceUUID == "" || va.Status.VM.Phase == afv1.VMPhaseFailed {
		return true, nil
	}
	want := clusterModuleOf(va, pool)
	if want == "" {
		reason, msg := afv1.ReasonClusterModuleJoinFailed, "the pool has no cluster module for this VM's cluster yet"
		if c := conditions.FindCondition(pool.Status.Conditions, afv1.ConditionAntiAffinity); c != nil && c.Status != "True" {
			reason, msg = c.Reason, "the pool's anti-affinity is not in force: "+c.Message
		}
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionClusterModuleMember, false, reason, msg, va.Generation)
		return true, nil
	}
	if want == va.Status.VM.ClusterModule {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionClusterModuleMember, true, afv1.ReasonClusterModuleJoined,
			"VM "+va.Status.VM.Name+" is a member of cluster module "+want, va.Generation)
		return true, nil
	}
	now := r.Opts.Clock.Now()
	if wait := r.joins.wait(va.UID, now); wait > 0 {
		s.requeueAfter(wait)
		return true, nil
	}
	vs, err := r.client(ctx, s)
	if err == nil {
		err = vs.JoinClusterModule(ctx, poolspec.DatacenterOf(va, pool), want, string(va.UID), poolspec.Ownership(va, pool))
	}
	if err != nil {
		r.joinFailed(s, want, err)
		return true, nil
	}
	r.joins.forget(va.UID)
	va.Status.VM.ClusterModule = want
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionClusterModuleMember, true, afv1.ReasonClusterModuleJoined,
		"VM "+va.Status.VM.Name+" is a member of cluster module "+want, va.Generation)
	return true, nil
}

// joinFailed reports a failed join (condition; a Warning Event when the condition turns) and schedules
// the next try.
func (r *Reconciler) joinFailed(s *vmScope, module string, err error) {
	va := s.va
	msg := "adding VM " + va.Status.VM.Name + " to cluster module " + module + " failed (retried; the VM runs without anti-affinity meanwhile): " + err.Error()
	if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionClusterModuleMember); c == nil || c.Reason != afv1.ReasonClusterModuleJoinFailed {
		r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonClusterModuleJoinFailed, events.ActionAntiAffinity, "%s", msg)
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionClusterModuleMember, false, afv1.ReasonClusterModuleJoinFailed, msg, va.Generation)
	r.joins.failed(va.UID, r.Opts.Clock.Now())
	s.requeueAfter(joinRetry)
}

// joinedAtCreate records what CreateVM said about the VM's join (spec.ClusterModule).
func (r *Reconciler) joinedAtCreate(s *vmScope, spec vsphere.VMSpec, info *vsphere.VMInfo) {
	switch {
	case spec.ClusterModule == "":
	case info.ClusterModule != "":
		s.va.Status.VM.ClusterModule = info.ClusterModule
		conditions.SetCondition(&s.va.Status.Conditions, afv1.ConditionClusterModuleMember, true, afv1.ReasonClusterModuleJoined,
			"VM "+info.Name+" joined cluster module "+info.ClusterModule+" before it was powered on", s.va.Generation)
	case info.ClusterModuleErr != nil:
		r.joinFailed(s, spec.ClusterModule, info.ClusterModuleErr)
	}
}

// leaveClusterModules takes the VM out of its recorded module and of the one its pool names now (they
// differ only after a module was replaced, or when the join's record was lost in a crash) before it is
// destroyed. An absent VM or module, a vCenter without the API, or a VM that is not ours (DestroyVM
// refuses it and says so) is no reason to wait.
func (r *Reconciler) leaveClusterModules(ctx context.Context, vs vsphere.Client, va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) error {
	r.joins.forget(va.UID)
	ids := []string{va.Status.VM.ClusterModule}
	if m := clusterModuleOf(va, pool); m != "" && m != ids[0] {
		ids = append(ids, m)
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		err := vs.LeaveClusterModule(ctx, poolspec.DatacenterOf(va, pool), id, string(va.UID), poolspec.Ownership(va, pool))
		switch vsphere.ClassOf(err) {
		case vsphere.ClassNotFound, vsphere.ClassUnsupported, vsphere.ClassOwnership:
			err = nil
		}
		if err != nil {
			r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonClusterModuleJoinFailed, events.ActionDestroyVM,
				"removing VM %s from cluster module %s before destroying it: %v", va.Status.VM.Name, id, err)
			return err
		}
	}
	return nil
}

// joinBackoff remembers, per VsphereAgent, when a failed join may be tried again.
type joinBackoff struct {
	mu    sync.Mutex
	until map[types.UID]time.Time
}

func (b *joinBackoff) wait(uid types.UID, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.until[uid]; ok && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func (b *joinBackoff) failed(uid types.UID, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.until == nil {
		b.until = map[types.UID]time.Time{}
	}
	b.until[uid] = now.Add(joinRetry)
}

func (b *joinBackoff) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.until, uid)
}

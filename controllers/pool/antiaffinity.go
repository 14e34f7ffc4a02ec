package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/redact"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Anti-affinity through vSphere cluster modules (spec.antiAffinity.mode ClusterModule): the pool keeps
// one module per compute cluster it places into, recorded in status.antiAffinity.modules; the
// VsphereAgent controller adds each VM to its module (before power-on) and takes it out before the VM
// is destroyed. The pool never deletes a module its status does not name.
//
// Crash window: a module is created, then its ID is written with the pass's status. A process that dies
// (or a status write that conflicts) in between leaves a module no status names. This process remembers
// the modules it created (moduleMemory) and takes them back on its next pass; after a restart a module
// whose members all carry this pool's ownership marker is adopted; an empty module is never adopted
// (it may be anyone's, e.g. CAPV's between its own create and join) and is left behind: an empty module
// constrains nothing (docs/anti-affinity.md says how to list and remove one).

// antiAffinityRecheck is how often a pool with anti-affinity reads its clusters' DRS setting and
// modules again when nothing changed (its spec's generation, a module missing from status).
const antiAffinityRecheck = 5 * time.Minute

// clusterView is one compute cluster a pool places into, as one check read it.
type clusterView struct {
	vsphere.ComputeCluster
	domains []string // the failure domains placing into it (empty: a pool without any)
	readErr error    // ComputeClusterOf failed
}

// moduleChoice is what to do about one cluster's module (chooseModule).
type moduleChoice string

const (
	moduleKeep     moduleChoice = "keep"     // the recorded module exists
	moduleAdopt    moduleChoice = "adopt"    // not recorded; a module whose members are all the pool's VMs
	moduleRemember moduleChoice = "remember" // not recorded; a module this process created for the pool
	moduleCreate   moduleChoice = "create"   // none: create one
)

// chooseModule decides a cluster's module from the recorded ID, the modules vCenter lists in the cluster
// and the one this process remembers creating. Pure: the decision the table tests pin.
func chooseModule(recorded string, listed []vsphere.ClusterModule, remembered, poolUID string) (string, moduleChoice) {
	has := func(id string) bool {
		return id != "" && slices.ContainsFunc(listed, func(m vsphere.ClusterModule) bool { return m.ID == id })
	}
	switch {
	case has(recorded):
		return recorded, moduleKeep
	case has(remembered):
		return remembered, moduleRemember
	}
	for _, m := range listed {
		if m.OwnedBy(poolUID) {
			return m.ID, moduleAdopt
		}
	}
	return "", moduleCreate
}

// antiAffinityVerdict is the AntiAffinity condition from the problems one check found (reason and
// message each), in the order found: the first problem's reason, every message.
func antiAffinityVerdict(problems [][2]string, modules int) (ok bool, reason, message string) {
	if len(problems) == 0 {
		return true, afv1.ReasonClusterModulesReady, fmt.Sprintf("%d cluster module(s) in force: DRS keeps the pool's VMs on different ESXi hosts where it can", modules)
	}
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		msgs = append(msgs, p[1])
	}
	return false, problems[0][0], strings.Join(msgs, "; ") + "; VMs are still created, without anti-affinity where it is not in force"
}

// ensureClusterModules is the pool's anti-affinity phase (see the file comment). It never blocks
// creation: its problems are a condition and Warning Events only.
func (r *Reconciler) ensureClusterModules(ctx context.Context, s *poolScope) error {
	p := s.pool
	if !p.Spec.AntiAffinity.Enabled() {
		meta.RemoveStatusCondition(&p.Status.Conditions, afv1.ConditionAntiAffinity)
		if p.Status.AntiAffinity != nil && s.vs != nil && !p.Spec.Paused {
			// Turned off: the pool's modules go (their VMs with them), as at pool deletion.
			kept := r.deleteModules(ctx, s.vs, p, p.Status.AntiAffinity.Modules)
			p.Status.AntiAffinity = moduleStatus(kept)
		}
		return nil
	}
	if s.vs == nil || p.Spec.Paused {
		return nil // VSphereReachable (or Paused) says why; the condition keeps its last verdict
	}
	key := client.ObjectKeyFromObject(p)
	if !r.modules.due(key, p.UID, p.Generation, r.Opts.Clock.Now(), complete(p)) {
		return nil
	}
	clusters := r.readClusters(ctx, s)
	var problems [][2]string
	problem := func(cause, msg string) { problems = append(problems, [2]string{cause, msg}) }
	var modules []afv1.ClusterModuleStatus
	unsupported := false
	for _, cl := range clusters {
		where := clusterName(cl)
		switch {
		case cl.readErr != nil:
			problem(afv1.ReasonClusterModuleFailed, "reading the compute cluster of "+where+": "+redact.String(cl.readErr.Error()))
			modules = append(modules, recordedFor(p, cl)...) // unknown: keep what is recorded
			continue
		case !cl.IsCluster:
			problem(afv1.ReasonNoComputeCluster, where+" is a standalone host, not a cluster: no DRS keeps VMs apart there")
			continue
		case unsupported:
			continue
		}
		if !cl.DRSEnabled {
			problem(afv1.ReasonDRSDisabled, "DRS is off on cluster "+cl.Name+": its module is kept but nothing keeps the VMs apart until DRS is on")
		}
		m, err := r.ensureModule(ctx, s, cl)
		if err != nil {
			if vsphere.ClassOf(err) == vsphere.ClassUnsupported {
				unsupported = true
				problems = append([][2]string{{afv1.ReasonClusterModulesUnsupported, "vCenter has no cluster-modules API (it needs vCenter 7.0 Update 1 or later)"}}, problems...)
				continue
			}
			problem(afv1.ReasonClusterModuleFailed, "cluster module of cluster "+cl.Name+": "+redact.String(err.Error()))
			modules = append(modules, recordedFor(p, cl)...)
			continue
		}
		modules = append(modules, m)
	}
	// Modules of clusters the pool no longer places into go (their VMs are being released).
	var gone []afv1.ClusterModuleStatus
	if p.Status.AntiAffinity != nil {
		for _, old := range p.Status.AntiAffinity.Modules {
			if !slices.ContainsFunc(modules, func(m afv1.ClusterModuleStatus) bool { return m.ClusterRef == old.ClusterRef }) &&
				!slices.ContainsFunc(clusters, func(c clusterView) bool { return c.Ref == old.ClusterRef }) {
				gone = append(gone, old)
			}
		}
	}
	modules = append(modules, r.deleteModules(ctx, s.vs, p, gone)...)
	p.Status.AntiAffinity = moduleStatus(modules)

	ok, reason, msg := antiAffinityVerdict(problems, len(modules))
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionAntiAffinity, ok, reason, msg, p.Generation)
	topic := key.String() + "/antiaffinity"
	if ok {
		r.refusalEvents.Clear(topic)
		r.modules.checked(key, p.UID, p.Generation, r.Opts.Clock.Now(), complete(p))
		return nil
	}
	if r.refusalEvents.Allow(topic, reason, r.Opts.Clock.Now()) {
		r.Recorder.Eventf(p, nil, "Warning", reason, events.ActionAntiAffinity, "anti-affinity not in force: %s", msg)
	}
	if reason == afv1.ReasonClusterModuleFailed {
		s.requeueAfter(time.Minute) // retried soon; the other verdicts are rechecked every antiAffinityRecheck
	} else {
		r.modules.checked(key, p.UID, p.Generation, r.Opts.Clock.Now(), complete(p))
	}
	return nil
}

// readClusters resolves the compute cluster of every placement of the pool, grouped by cluster.
func (r *Reconciler) readClusters(ctx context.Context, s *poolScope) []clusterView {
	p := s.pool
	var out []clusterView
	for _, d := range poolspec.Domains(p) {
		cl, err := s.vs.ComputeClusterOf(ctx, p.Spec.VSphere.Datacenter, d.ResourcePool)
		if err != nil {
			out = append(out, clusterView{ComputeCluster: vsphere.ComputeCluster{Name: d.ResourcePool}, domains: nonEmpty(d.Name), readErr: err})
			continue
		}
		if i := slices.IndexFunc(out, func(c clusterView) bool { return c.readErr == nil && c.Ref == cl.Ref }); i >= 0 {
			out[i].domains = append(out[i].domains, nonEmpty(d.Name)...)
			continue
		}
		out = append(out, clusterView{ComputeCluster: *cl, domains: nonEmpty(d.Name)})
	}
	return out
}

// ensureModule finds (recorded, remembered or adopted) or creates the module of one cluster.
func (r *Reconciler) ensureModule(ctx context.Context, s *poolScope, cl clusterView) (afv1.ClusterModuleStatus, error) {
	p := s.pool
	key := client.ObjectKeyFromObject(p)
	listed, err := s.vs.ClusterModules(ctx, cl.Ref)
	if err != nil {
		return afv1.ClusterModuleStatus{}, err
	}
	recorded := ""
	if p.Status.AntiAffinity != nil {
		for _, m := range p.Status.AntiAffinity.Modules {
			if m.ClusterRef == cl.Ref {
				recorded = m.ModuleID
			}
		}
	}
	id, how := chooseModule(recorded, listed, r.modules.remembered(key, p.UID, cl.Ref), string(p.UID))
	if recorded != "" && how != moduleKeep {
		r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonClusterModuleFailed, events.ActionAntiAffinity,
			"cluster module %s of cluster %s is gone from vCenter; the pool makes another and its VMs join it", recorded, cl.Name)
	}
	switch how {
	case moduleAdopt:
		r.Recorder.Eventf(p, nil, "Normal", afv1.ReasonClusterModuleAdopted, events.ActionAntiAffinity,
			"cluster module %s of cluster %s holds only this pool's VMs; recorded as the pool's", id, cl.Name)
	case moduleCreate:
		if id, err = s.vs.CreateClusterModule(ctx, cl.Ref); err != nil {
			return afv1.ClusterModuleStatus{}, err
		}
		r.modules.created(key, p.UID, cl.Ref, id) // taken back by the next pass if this pass's status is lost
		r.Recorder.Eventf(p, nil, "Normal", afv1.ReasonClusterModuleCreated, events.ActionAntiAffinity,
			"created cluster module %s in cluster %s for the pool's VMs", id, cl.Name)
	}
	return afv1.ClusterModuleStatus{FailureDomains: cl.domains, Cluster: cl.Name, ClusterRef: cl.Ref, ModuleID: id}, nil
}

// deleteModules deletes modules the pool's status names, announcing each; it returns those it could not
// delete (kept in status, retried).
func (r *Reconciler) deleteModules(ctx context.Context, vs vsphere.Client, p *afv1.VsphereAgentPool, mods []afv1.ClusterModuleStatus) []afv1.ClusterModuleStatus {
	var kept []afv1.ClusterModuleStatus
	for _, m := range mods {
		if err := vs.DeleteClusterModule(ctx, m.ModuleID); err != nil {
			kept = append(kept, m)
			r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonClusterModuleFailed, events.ActionAntiAffinity,
				"deleting cluster module %s of cluster %s: %v", m.ModuleID, m.Cluster, err)
			continue
		}
		r.modules.forgetCreated(client.ObjectKeyFromObject(p), m.ClusterRef)
		r.Recorder.Eventf(p, nil, "Normal", afv1.ReasonClusterModuleDeleted, events.ActionAntiAffinity,
			"deleted cluster module %s of cluster %s", m.ModuleID, m.Cluster)
	}
	return kept
}

// deleteModulesAtDeletion removes the deleted pool's modules; false while one could not be deleted and
// is retried (a Warning Event says why). Credentials that cannot be read any more leave them behind,
// named in a Warning Event: nothing else could ever delete them.
func (r *Reconciler) deleteModulesAtDeletion(ctx context.Context, s *poolScope) bool {
	p := s.pool
	if p.Status.AntiAffinity == nil || len(p.Status.AntiAffinity.Modules) == 0 {
		return true
	}
	ids := make([]string, 0, len(p.Status.AntiAffinity.Modules))
	for _, m := range p.Status.AntiAffinity.Modules {
		ids = append(ids, m.ModuleID)
	}
	creds, err := r.Opts.Credentials.Read(ctx, r.APIReader, p, r.Opts.CredentialsSecretNamespaces)
	if err != nil {
		r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonClusterModuleFailed, events.ActionDeletePool,
			"cluster module(s) %s left in vCenter: the credentials cannot be read (%v)", strings.Join(ids, ", "), err)
		return true
	}
	vs, err := r.Opts.Sessions.Get(ctx, creds)
	if err != nil {
		r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonClusterModuleFailed, events.ActionDeletePool,
			"deleting cluster module(s) %s: vCenter not usable: %v", strings.Join(ids, ", "), err)
		return false
	}
	return len(r.deleteModules(ctx, vs, p, p.Status.AntiAffinity.Modules)) == 0
}

// recordedFor returns the recorded module of cl (kept while cl cannot be read).
func recordedFor(p *afv1.VsphereAgentPool, cl clusterView) []afv1.ClusterModuleStatus {
	if p.Status.AntiAffinity == nil {
		return nil
	}
	var out []afv1.ClusterModuleStatus
	for _, m := range p.Status.AntiAffinity.Modules {
		if (cl.Ref != "" && m.ClusterRef == cl.Ref) || (cl.Ref == "" && slices.ContainsFunc(cl.domains, func(d string) bool { return slices.Contains(m.FailureDomains, d) })) ||
			(cl.Ref == "" && len(cl.domains) == 0 && len(m.FailureDomains) == 0) {
			out = append(out, m)
		}
	}
	return out
}

// complete reports whether the status names a module for every failure domain of the pool.
func complete(p *afv1.VsphereAgentPool) bool {
	for _, d := range poolspec.Domains(p) {
		if _, ok := p.Status.AntiAffinity.ModuleFor(d.Name); !ok {
			return false
		}
	}
	return true
}

func moduleStatus(mods []afv1.ClusterModuleStatus) *afv1.AntiAffinityStatus {
	if len(mods) == 0 {
		return nil
	}
	slices.SortFunc(mods, func(a, b afv1.ClusterModuleStatus) int { return strings.Compare(a.ClusterRef, b.ClusterRef) })
	mods = slices.CompactFunc(mods, func(a, b afv1.ClusterModuleStatus) bool { return a.ClusterRef == b.ClusterRef })
	return &afv1.AntiAffinityStatus{Modules: mods}
}

func clusterName(cl clusterView) string {
	if cl.Name != "" {
		return cl.Name
	}
	return cl.Ref
}

func nonEmpty(name string) []string {
	if name == "" {
		return nil
	}
	return []string{name}
}

// moduleMemory is what this process remembers of each pool's modules: when they were last checked, and
// the modules it created (taken back if the status that named them was lost).
type moduleMemory struct {
	mu    sync.Mutex
	pools map[types.NamespacedName]*poolModules
}

type poolModules struct {
	uid        types.UID
	generation int64
	checkedAt  time.Time
	// complete says the check left a module recorded for every failure domain: a status found without one
	// since (its write was lost) is checked again at once.
	complete bool
	created  map[string]string // cluster ref -> module ID
}

func (m *moduleMemory) entry(pool types.NamespacedName, uid types.UID) *poolModules {
	if m.pools == nil {
		m.pools = map[types.NamespacedName]*poolModules{}
	}
	e, ok := m.pools[pool]
	if !ok || e.uid != uid {
		e = &poolModules{uid: uid, created: map[string]string{}}
		m.pools[pool] = e
	}
	return e
}

// due reports whether the pool's modules are checked this pass: never checked, its spec changed, its
// status lost a module the last check recorded, or antiAffinityRecheck passed.
func (m *moduleMemory) due(pool types.NamespacedName, uid types.UID, generation int64, now time.Time, complete bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(pool, uid)
	return e.checkedAt.IsZero() || e.generation != generation || (e.complete && !complete) || now.Sub(e.checkedAt) >= antiAffinityRecheck
}

func (m *moduleMemory) checked(pool types.NamespacedName, uid types.UID, generation int64, now time.Time, complete bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(pool, uid)
	e.generation, e.checkedAt, e.complete = generation, now, complete
}

func (m *moduleMemory) created(pool types.NamespacedName, uid types.UID, clusterRef, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entry(pool, uid).created[clusterRef] = id
}

func (m *moduleMemory) remembered(pool types.NamespacedName, uid types.UID, clusterRef string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entry(pool, uid).created[clusterRef]
}

func (m *moduleMemory) forgetCreated(pool types.NamespacedName, clusterRef string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.pools[pool]; ok {
		delete(e.created, clusterRef)
	}
}

// ForgetPool drops a deleted pool's records (a poolmemory Record).
func (m *moduleMemory) ForgetPool(pool types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pools, pool)
}

// HoldsPool reports whether anything of the pool is remembered.
func (m *moduleMemory) HoldsPool(pool types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.pools[pool]
	return ok
}

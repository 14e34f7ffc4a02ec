package pool

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// ISORequest asks the ISO cache to keep a pool's discovery ISO current.
type ISORequest struct {
	Pool     *afv1.VsphereAgentPool
	InfraEnv agents.InfraEnv
	Client   vsphere.Client
	// CABundle is the pool's image host CA (spec.iso.caBundleRef) as read this pass, named by
	// CABundleSource in messages.
	CABundle       []byte
	CABundleSource string
}

// ISOUpdate is the cache's answer for one pass: a new status.iso (nil: unchanged), the ISOReady
// condition, and when to look again.
type ISOUpdate struct {
	Status          *afv1.ISOStatus
	Ready           bool
	Reason, Message string
	RequeueAfter    time.Duration
}

// ISOCache keeps discovery ISOs cached on the datastore. Reconcile never blocks on a download.
type ISOCache interface {
	Reconcile(ctx context.Context, req ISORequest) ISOUpdate
}

// managedISOCache adapts the iso package's background Manager to the pool controller: it applies the
// latest finished job to status.iso, decides whether a new refresh is due, starts it without waiting,
// and reports ISOReady.
type managedISOCache struct {
	manager *iso.Manager
	clock   clock.PassiveClock
}

// NewISOCache returns the production ISO cache; onDone is called when a background job finishes
// (wire it to requeue the pool); crash is the crash-point seam (Options.CrashPoint, nil in production).
func NewISOCache(c clock.PassiveClock, trustedCABundle string, recorder iso.EventRecorder, log logr.Logger, onDone func(types.NamespacedName),
	crash func(ctx context.Context, point string, pool types.NamespacedName)) (ISOCache, manager.Runnable, error) {
	cache, err := iso.NewCache(iso.Options{Clock: c, Log: log, TrustedCABundleFile: trustedCABundle})
	if err != nil {
		return nil, nil, err
	}
	m := iso.NewManager(iso.ManagerOptions{Cache: cache, Clock: c, Recorder: recorder, Log: log, OnDone: onDone, CrashPoint: crash})
	return &managedISOCache{manager: m, clock: c}, m, nil
}

func (c *managedISOCache) Reconcile(_ context.Context, req ISORequest) ISOUpdate {
	pool := req.Pool
	key := types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}
	var upd ISOUpdate
	status := afv1.ISOStatus{}
	if pool.Status.ISO != nil {
		status = *pool.Status.ISO.DeepCopy() // the refresh job reads it in its own goroutine
	}
	var cond *metav1.Condition
	if res, ok := c.manager.Result(key); ok {
		status = *res.Status.DeepCopy()
		cond = res.Condition
	}
	if status.URL != "" {
		// A URL stored by an older version (upstream kept the InfraEnv's URL, token included) is redacted
		// on this pass, whether or not a refresh ever succeeds (e.g. refused as plain HTTP).
		status.URL = iso.RedactURL(status.URL)
	}
	// A path stored by upstream agent-forge-operator has no "[datastore] ": stored as ours from now on
	// (iso.PoolISOPath makes the same conversion for a VM created before this is written).
	if p := iso.StatusPath(pool, &status); p != "" {
		status.Path = p
	}
	upd.Status = &status
	view := pool.DeepCopy()
	view.Status.ISO = &status

	src := iso.Source{URL: req.InfraEnv.ISODownloadURL, CreatedTime: req.InfraEnv.CreatedTime}
	need := iso.Decide(c.clock.Now(), view, src)
	retain := int(pool.Spec.ISO.RetainVersions)
	if retain < 1 {
		retain = iso.DefaultRetainVersions
	}
	job := iso.Job{
		Object: view, Client: req.Client, Need: need, RetainVersions: retain,
		Refresh: iso.RefreshRequest{
			Datacenter: pool.Spec.VSphere.Datacenter, Datastore: pool.Spec.VSphere.ISODatastore, Prefix: iso.PathPrefix(pool),
			Source: src, ForceToken: pool.Annotations[afv1.AnnotationForceISORefresh], Conditional: need.Conditional, Revalidate: need.Revalidate,
			Status: status, PreviousReady: previousReady(pool),
			CABundle: req.CABundle, CABundleSource: req.CABundleSource, MaxSize: maxISOSize(pool),
			AllowPlainHTTP: pool.Spec.ISO.AllowPlainHTTP,
		},
	}
	es := c.manager.Ensure(key, job)
	switch {
	case es.State == iso.EnsureStarted || es.State == iso.EnsureRunning:
		wc := iso.ConditionWhileRefreshing(&status)
		cond = &wc
		upd.RequeueAfter = 10 * time.Second // fallback poll; the job's completion also requeues the pool
	case cond == nil && status.Path != "":
		cond = &metav1.Condition{Status: metav1.ConditionTrue, Reason: afv1.ReasonCached, Message: "discovery ISO cached at " + status.Path}
	case cond == nil:
		cond = &metav1.Condition{Status: metav1.ConditionFalse, Reason: afv1.ReasonDownloading, Message: "waiting to download the discovery ISO"}
	}
	upd.Ready, upd.Reason, upd.Message = cond.Status == metav1.ConditionTrue, cond.Reason, cond.Message
	if upd.RequeueAfter == 0 {
		upd.RequeueAfter = need.RequeueAfter
	}
	if es.RetryAfter > 0 && (upd.RequeueAfter == 0 || es.RetryAfter < upd.RequeueAfter) {
		upd.RequeueAfter = es.RetryAfter
	}
	return upd
}

// ForgetPool drops a deleted pool's state, cancelling its job (a poolmemory Record).
func (c *managedISOCache) ForgetPool(key types.NamespacedName) { c.manager.Forget(key) }

// HoldsPool reports whether the ISO manager keeps state of the pool.
func (c *managedISOCache) HoldsPool(key types.NamespacedName) bool { return c.manager.Holds(key) }

// maxISOSize is spec.iso.maxSize in bytes (0: the cache's default, for a pool that bypassed defaulting).
func maxISOSize(pool *afv1.VsphereAgentPool) int64 {
	if q := pool.Spec.ISO.MaxSize; q != nil {
		return q.Value()
	}
	return 0
}

// previousReady is a copy of the pool's ISOReady condition for a refresh job: the job runs in its own
// goroutine while the pass goes on to rewrite the pool's conditions in place.
func previousReady(pool *afv1.VsphereAgentPool) *metav1.Condition {
	if c := conditions.FindCondition(pool.Status.Conditions, afv1.ConditionISOReady); c != nil {
		return c.DeepCopy()
	}
	return nil
}

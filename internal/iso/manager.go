package iso

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// ManagerOptions configure a Manager. Zero values take the defaults noted per field.
type ManagerOptions struct {
	Cache *Cache
	// Clock times backoff and prune retries (default: the real clock).
	Clock clock.PassiveClock
	// Recorder receives the jobs' events on Job.Object (optional).
	Recorder EventRecorder
	Log      logr.Logger
	// OnDone is called (from the job's goroutine) after a job's result is stored; wire it to a
	// controller-runtime source.Channel to requeue the pool. It should not block for long.
	OnDone func(key types.NamespacedName)
	// MaxConcurrent bounds simultaneous jobs across pools (default 4).
	MaxConcurrent int
	// PruneRetryInterval spaces prune-only jobs (deferred or failed prunes) of one pool (default 5m).
	PruneRetryInterval time.Duration
	// BackoffBase and BackoffMax bound the retry delay after failed refreshes (default 30s, 15m).
	BackoffBase, BackoffMax time.Duration
	// CrashPoint is a test seam (controllers.Options.CrashPoint) called at the ISO crash points with the
	// pool's key; nil in the shipped binary.
	CrashPoint func(ctx context.Context, point string, pool types.NamespacedName)
}

// Job is what Ensure runs for a pool: a refresh when Need.Needed, then a retention pass.
type Job struct {
	// Object is the pool (events are recorded on it); pass a deep copy.
	Object runtime.Object
	Client vsphere.Client
	// Need is Decide's verdict; Refresh.Conditional should equal Need.Conditional.
	Need    RefreshNeed
	Refresh RefreshRequest
	// RetainVersions is spec.iso.retainVersions.
	RetainVersions int
}

// JobResult is a finished job. Apply Status to pool.status.iso and, when non-nil, Condition as
// ISOReady; applying the same result twice is harmless. Events were already recorded. A prune-only
// job carries the previous refresh's Condition forward (nil if the Manager never refreshed the pool).
type JobResult struct {
	// Seq increases with every finished job of the pool.
	Seq uint64
	// Refresh is the refresh's result; zero when the job only pruned.
	Refresh   *RefreshResult
	Status    afv1.ISOStatus
	Condition *metav1.Condition
	Events    []Event
	// Failures counts consecutive failed refreshes (0 after a success).
	Failures   int
	FinishedAt time.Time
}

// EnsureState says what Ensure did.
type EnsureState string

// The states Ensure reports.
const (
	EnsureStarted    EnsureState = "Started"    // a job was started now
	EnsureRunning    EnsureState = "Running"    // a job is already running for the pool
	EnsureBackingOff EnsureState = "BackingOff" // the same refresh failed recently; retry after RetryAfter
	EnsureIdle       EnsureState = "Idle"       // nothing to do (RetryAfter: next prune retry, if any)
)

// EnsureStatus is Ensure's answer; requeue after RetryAfter when it is > 0.
type EnsureStatus struct {
	State      EnsureState
	RetryAfter time.Duration
}

// Manager runs at most one refresh+prune job per pool in the background.
type Manager struct {
	o      ManagerOptions
	sem    chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	pools map[types.NamespacedName]*poolState
}

type poolState struct {
	running     bool
	cancel      context.CancelFunc
	result      *JobResult
	seq         uint64
	failures    int
	failedFor   string // fingerprint of the failed refresh
	retryAt     time.Time
	lastPruneAt time.Time
}

// NewManager builds a Manager; Stop (or Start's context ending) cancels its jobs.
func NewManager(o ManagerOptions) *Manager {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 4
	}
	if o.PruneRetryInterval <= 0 {
		o.PruneRetryInterval = 5 * time.Minute
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 30 * time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 15 * time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{o: o, sem: make(chan struct{}, o.MaxConcurrent), ctx: ctx, cancel: cancel,
		pools: map[types.NamespacedName]*poolState{}}
}

// Start implements controller-runtime's manager.Runnable: it waits for ctx, then stops all jobs.
func (m *Manager) Start(ctx context.Context) error {
	<-ctx.Done()
	m.Stop()
	return nil
}

// Stop cancels running jobs and waits for them.
func (m *Manager) Stop() {
	// Cancel under mu: an Ensure racing the stop either added its job to wg before this (Wait then
	// waits for it) or sees the cancelled context and starts none (a WaitGroup's Add must not race
	// its Wait).
	m.mu.Lock()
	m.cancel()
	m.mu.Unlock()
	m.wg.Wait()
}

// fingerprint identifies "the same refresh" for backoff: a new URL, ISO generation, force token,
// per-pool CA, size limit or plain-HTTP policy is retried at once.
func fingerprint(job Job) string {
	created := ""
	if t := job.Refresh.Source.CreatedTime; t != nil {
		created = t.UTC().Format(time.RFC3339)
	}
	return URLHash(job.Refresh.Source.URL) + "|" + created + "|" + job.Refresh.ForceToken + "|" +
		job.Refresh.Datastore + "|" + job.Refresh.Prefix + "|" + URLHash(string(job.Refresh.CABundle)) + "|" + strconv.FormatInt(job.Refresh.maxSize(), 10) + "|" +
		strconv.FormatBool(job.Refresh.AllowPlainHTTP)
}

// Ensure starts the pool's job when needed and none is running. It never blocks on the job.
func (m *Manager) Ensure(key types.NamespacedName, job Job) EnsureStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pools[key]
	if ps == nil {
		ps = &poolState{}
		m.pools[key] = ps
	}
	if ps.running {
		return EnsureStatus{State: EnsureRunning}
	}
	now := m.o.Clock.Now()
	switch {
	case job.Need.Needed:
		if ps.failures > 0 && ps.failedFor == fingerprint(job) && now.Before(ps.retryAt) {
			return EnsureStatus{State: EnsureBackingOff, RetryAfter: ps.retryAt.Sub(now)}
		}
	case job.Need.PrunePending:
		if next := ps.lastPruneAt.Add(m.o.PruneRetryInterval); now.Before(next) {
			return EnsureStatus{State: EnsureIdle, RetryAfter: next.Sub(now)}
		}
	default:
		return EnsureStatus{State: EnsureIdle}
	}
	if m.ctx.Err() != nil {
		return EnsureStatus{State: EnsureIdle}
	}
	ctx, cancel := context.WithCancel(m.ctx)
	ps.running, ps.cancel = true, cancel
	m.wg.Add(1)
	go m.run(ctx, cancel, key, job)
	return EnsureStatus{State: EnsureStarted}
}

// Result returns the pool's latest finished job, if any.
func (m *Manager) Result(key types.NamespacedName) (JobResult, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ps := m.pools[key]; ps != nil && ps.result != nil {
		return *ps.result, true
	}
	return JobResult{}, false
}

// Running reports whether a job is running for the pool.
func (m *Manager) Running(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pools[key]
	return ps != nil && ps.running
}

// Holds reports whether the manager keeps state of the pool (a job, its result, a failure's backoff).
func (m *Manager) Holds(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.pools[key]
	return ok
}

// Forget cancels the pool's job, if any, and drops its state (call when the pool is deleted).
func (m *Manager) Forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ps := m.pools[key]; ps != nil && ps.cancel != nil {
		ps.cancel()
	}
	delete(m.pools, key)
}

func (m *Manager) run(ctx context.Context, cancel context.CancelFunc, key types.NamespacedName, job Job) {
	defer m.wg.Done()
	defer cancel()
	log := m.o.Log.WithValues("pool", key.String())
	if seam := m.o.CrashPoint; seam != nil {
		ctx = crashpoint.With(ctx, func(ctx context.Context, point string) { seam(ctx, point, key) })
	}
	select {
	case m.sem <- struct{}{}:
		defer func() { <-m.sem }()
	case <-ctx.Done():
		m.finish(key, job, JobResult{Status: job.Refresh.Status}, false)
		return
	}
	res := JobResult{Status: job.Refresh.Status}
	refreshFailed := false
	if job.Need.Needed {
		rr, err := m.o.Cache.Refresh(logr.NewContext(ctx, log), job.Client, job.Refresh)
		refreshFailed = err != nil
		res.Refresh, res.Status = &rr, rr.Status
		cond := rr.Condition
		res.Condition = &cond
		res.Events = append(res.Events, rr.Events...)
	}
	pr := m.o.Cache.Prune(ctx, job.Client, PruneRequest{Datacenter: job.Refresh.Datacenter, Datastore: job.Refresh.Datastore,
		Prefix: job.Refresh.Prefix, RetainVersions: job.RetainVersions, Status: res.Status})
	res.Status = pr.Status
	res.Events = append(res.Events, pr.Events...)
	if m.o.Recorder != nil && job.Object != nil {
		for _, e := range res.Events {
			m.o.Recorder.Eventf(job.Object, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
		}
	}
	m.finish(key, job, res, refreshFailed)
}

func (m *Manager) finish(key types.NamespacedName, job Job, res JobResult, refreshFailed bool) {
	m.mu.Lock()
	ps := m.pools[key]
	if ps == nil { // forgotten meanwhile
		m.mu.Unlock()
		return
	}
	now := m.o.Clock.Now()
	ps.running, ps.cancel = false, nil
	ps.lastPruneAt = now
	switch {
	case refreshFailed:
		ps.failures++
		ps.failedFor = fingerprint(job)
		ps.retryAt = now.Add(backoff(m.o.BackoffBase, m.o.BackoffMax, ps.failures))
	case job.Need.Needed:
		ps.failures, ps.failedFor = 0, ""
	}
	if res.Condition == nil && ps.result != nil && ps.result.Condition != nil {
		// A prune-only job keeps showing the last refresh's verdict (a failure stays visible).
		cond := *ps.result.Condition
		res.Condition = &cond
	}
	ps.seq++
	res.Seq, res.Failures, res.FinishedAt = ps.seq, ps.failures, now
	ps.result = &res
	m.mu.Unlock()
	if m.o.OnDone != nil {
		m.o.OnDone(key)
	}
}

func backoff(base, maxDelay time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}

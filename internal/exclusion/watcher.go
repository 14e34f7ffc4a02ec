package exclusion

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/periodic"
)

// Leases are not secret (holder pod names, timestamps); list is cluster-wide because upstream's Lease may
// be in any namespace a user installed it to. See docs/rbac.md.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=list

// callTimeout bounds each read or write of a Lease.
const callTimeout = 10 * time.Second

// DefaultGrace is how long reads of the Leases may fail before the gate closes: one leader-election
// Lease duration (controller-runtime's 15s). A manager that appeared meanwhile has acquired and renewed
// its Lease within that time; acting longer on a verdict that can no longer be refreshed could act beside it.
const DefaultGrace = defaultLeaseDuration

// Watcher reads the Leases named LeaseName in every namespace at start and every Interval, and answers
// the controllers' gate. Until its first answer the gate is closed (Blocked checks synchronously); once
// reads have failed for Grace it is closed again (fails closed) until a read succeeds.
type Watcher struct {
	// Reader lists Leases uncached (the manager's API reader): a cluster-wide Lease informer would be
	// a watch on every controller's heartbeat for a check that runs every Interval.
	Reader client.Reader
	// Writer marks our own Lease (nil: never mark).
	Writer client.Writer
	// Clock judges the Leases' liveness and the verdict's age (tests inject a fake).
	Clock clock.WithTicker
	// Interval is how often the Leases are read and how old a verdict may be (default 30s).
	Interval time.Duration
	// LeaseName is the leader-election ID shared with upstream.
	LeaseName string
	// Namespace is this manager's namespace (where its own Lease lives).
	Namespace string
	// LeaderElection is true when this manager holds its Lease (then it marks it and uses its age).
	LeaderElection bool
	// Slack is added to a Lease's duration (default DefaultSlack).
	Slack time.Duration
	// Grace is how long, from the first failed read after a successful one, the last verdict is kept
	// (default DefaultGrace); after it the gate is closed until a read succeeds.
	Grace time.Duration
	Log   logr.Logger
	// OnChange is called when the verdict changes (the pools requeue and report it).
	OnChange func()

	mu      sync.Mutex
	checked time.Time
	verdict Verdict
	err     error
	// failingSince is the first failed read since the last successful one (zero: the last read succeeded).
	failingSince time.Time
	// failedClosed is true once reads have failed for Grace.
	failedClosed bool
}

// Gate is the controllers' answer: whether to stand down, and why.
type Gate struct {
	Blocked bool
	// Unreadable is true when the gate is closed because the Leases could not be read (not yet, or for
	// longer than the grace period), rather than because another manager holds one.
	Unreadable bool
	// Message is the condition and Event text (never a secret: Lease namespaces and holders, API errors).
	Message string
}

// NeedLeaderElection is true: only the leader acts, so only the leader needs to stand down (and it alone may
// mark the Lease it holds). Without leader election the watcher runs at once.
func (w *Watcher) NeedLeaderElection() bool { return true }

func (w *Watcher) interval() time.Duration {
	if w.Interval <= 0 {
		return 30 * time.Second
	}
	return w.Interval
}

// Start checks now and every interval until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	return periodic.Every(ctx, w.Clock, w.interval(), w.check)
}

// Blocked reports whether this manager must stand down, with the condition message (see Check).
func (w *Watcher) Blocked(ctx context.Context) (bool, string) {
	g := w.Check(ctx)
	return g.Blocked, g.Message
}

// Check answers the gate. A verdict older than the interval (or none yet) is checked again first. When
// the Leases cannot be read it blocks if no earlier verdict exists, or once reads have failed for Grace:
// acting beside a manager we cannot rule out is what this guards against. Within the grace the last
// verdict stands, so one failed read does not stop every controller.
func (w *Watcher) Check(ctx context.Context) Gate {
	if w == nil {
		return Gate{}
	}
	w.mu.Lock()
	fresh := !w.checked.IsZero() && w.failingSince.IsZero() && w.Clock.Since(w.checked) < w.interval()
	w.mu.Unlock()
	if !fresh {
		w.check(ctx)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.checked.IsZero():
		msg := "the leader-election Leases of other agent-forge managers could not be read yet; this manager takes no action until they are"
		if w.err != nil {
			msg += ": " + w.err.Error()
		}
		return Gate{Blocked: true, Unreadable: true, Message: msg}
	case w.failedClosed:
		msg := fmt.Sprintf("the leader-election Leases of other agent-forge managers could not be read since %s (more than %s): another manager cannot be ruled out, so this manager takes no action until they are read again",
			w.failingSince.UTC().Format(time.RFC3339), w.grace())
		if w.err != nil {
			msg += ": " + w.err.Error()
		}
		return Gate{Blocked: true, Unreadable: true, Message: msg}
	}
	return Gate{Blocked: w.verdict.Blocked, Message: w.verdict.Message()}
}

func (w *Watcher) grace() time.Duration {
	if w.Grace <= 0 {
		return DefaultGrace
	}
	return w.Grace
}

// RecheckAfter is how long a blocked controller waits before asking again (OnChange requeues earlier).
func (w *Watcher) RecheckAfter() time.Duration { return w.interval() }

func (w *Watcher) check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	leases, own, err := w.read(ctx)
	if err != nil {
		w.readFailed(err)
		return
	}
	slack := w.Slack
	if slack <= 0 {
		slack = DefaultSlack
	}
	v := Decide(leases, own, w.Clock.Now(), slack)
	w.mu.Lock()
	reopened := w.failedClosed
	changed := w.checked.IsZero() || reopened || v.Blocked != w.verdict.Blocked || v.Namespace != w.verdict.Namespace || v.Holder != w.verdict.Holder
	w.checked, w.verdict, w.err = w.Clock.Now(), v, nil
	w.failingSince, w.failedClosed = time.Time{}, false
	w.mu.Unlock()
	metrics.ManagerLeasesUnreadable.Set(0)
	if reopened {
		w.Log.Info("the leader-election Leases of other agent-forge managers are readable again")
	}
	if v.Blocked {
		metrics.OtherManagerActive.Set(1)
	} else {
		metrics.OtherManagerActive.Set(0)
	}
	if !changed {
		return
	}
	if v.Blocked {
		w.Log.Info("another agent-forge manager is active; standing down", "leaseNamespace", v.Namespace, "holder", v.Holder, "sameOperator", v.Ours)
	} else {
		w.Log.Info("no other agent-forge manager is active")
	}
	if w.OnChange != nil {
		w.OnChange()
	}
}

// readFailed records a failed read: the last verdict stands for Grace from the first failure, then the
// gate closes (logged, metric, OnChange so that the pools report it).
func (w *Watcher) readFailed(err error) {
	now := w.Clock.Now()
	w.mu.Lock()
	w.err = err
	if w.failingSince.IsZero() {
		w.failingSince = now
	}
	closing := !w.failedClosed && now.Sub(w.failingSince) >= w.grace()
	if closing {
		w.failedClosed = true
	}
	since := w.failingSince
	w.mu.Unlock()
	if !closing {
		w.Log.Error(err, "reading the leader-election Leases of other agent-forge managers failed; keeping the last verdict within the grace period", "failingSince", since, "grace", w.grace())
		return
	}
	w.Log.Error(err, "the leader-election Leases of other agent-forge managers could not be read for the grace period; standing down until they can", "failingSince", since, "grace", w.grace())
	metrics.ManagerLeasesUnreadable.Set(1)
	if w.OnChange != nil {
		w.OnChange()
	}
}

// read lists the Leases of that name in every namespace, and marks our own when we hold it.
func (w *Watcher) read(ctx context.Context) ([]Lease, Own, error) {
	var list coordinationv1.LeaseList
	if err := w.Reader.List(ctx, &list, client.MatchingFields{"metadata.name": w.LeaseName}); err != nil {
		return nil, Own{}, fmt.Errorf("listing Leases %s: %w", w.LeaseName, err)
	}
	own := Own{Namespace: w.Namespace}
	out := make([]Lease, 0, len(list.Items))
	for i := range list.Items {
		l := &list.Items[i]
		if l.Namespace == w.Namespace {
			if w.LeaderElection {
				own.Created = l.CreationTimestamp.Time
				if err := w.mark(ctx, l); err != nil {
					return nil, Own{}, err
				}
			}
			continue
		}
		out = append(out, view(l))
	}
	return out, own, nil
}

// mark labels our own Lease as this operator's, so another install of ours recognises it. The update
// carries the Lease's resourceVersion: it never overwrites a renewal (a conflict is retried next check).
func (w *Watcher) mark(ctx context.Context, l *coordinationv1.Lease) error {
	if w.Writer == nil || l.Labels[MarkLabel] == MarkValue {
		return nil
	}
	patched := l.DeepCopy()
	if patched.Labels == nil {
		patched.Labels = map[string]string{}
	}
	patched.Labels[MarkLabel] = MarkValue
	if err := w.Writer.Update(ctx, patched); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("marking our Lease %s: %w", types.NamespacedName{Namespace: l.Namespace, Name: l.Name}, err)
	}
	return nil
}

func view(l *coordinationv1.Lease) Lease {
	v := Lease{Namespace: l.Namespace, Created: l.CreationTimestamp.Time, Marked: l.Labels[MarkLabel] == MarkValue}
	if l.Spec.HolderIdentity != nil {
		v.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		v.RenewTime = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		v.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return v
}

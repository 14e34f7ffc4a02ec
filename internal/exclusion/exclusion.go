// Package exclusion keeps this manager from acting while another agent-forge manager runs in the
// cluster. Upstream's manager (Helm chart, kustomize, Syn) and a second install of this operator use the
// same leader-election ID, but each keeps its Lease in its own namespace, so leader election alone lets
// both act on the same pools, VsphereAgents, Agents and VMs. A Lease of that name in another namespace,
// still held and renewed recently, is such a manager.
//
// Decide is the pure rule (table-tested on an injected clock); Watcher reads the Leases at start and
// every interval and answers the controllers' gate (Blocked).
package exclusion

import (
	"fmt"
	"sort"
	"time"
)

const (
	// MarkLabel marks the Lease of a manager of this operator (not upstream's): set on our own Lease
	// by the leader, so two installs of ours can agree which one acts.
	MarkLabel = "agent-forge.containeroo.ch/manager"
	// MarkValue is MarkLabel's value.
	MarkValue = "agent-forge-operator-olm"
	// DefaultSlack is added to a Lease's duration before it counts as abandoned: clock skew between
	// the other manager's node and ours, and one missed renewal (controller-runtime renews every 2s).
	DefaultSlack = 10 * time.Second
	// defaultLeaseDuration is controller-runtime's LeaseDuration, used when a Lease names none.
	defaultLeaseDuration = 15 * time.Second
)

// Lease is what the rule needs of one coordination.k8s.io Lease.
type Lease struct {
	Namespace string
	// Holder is spec.holderIdentity ("" once released: controller-runtime's ReleaseOnCancel).
	Holder string
	// RenewTime is spec.renewTime (zero when unset).
	RenewTime time.Time
	// Duration is spec.leaseDurationSeconds (zero when unset).
	Duration time.Duration
	// Created is metadata.creationTimestamp: the age of the install, kept across failovers.
	Created time.Time
	// Marked is true when the Lease carries MarkLabel=MarkValue (a manager of this operator).
	Marked bool
}

// Own is this manager's side: its namespace and, when leader election is on and its Lease exists, that
// Lease's creation time (zero otherwise).
type Own struct {
	Namespace string
	Created   time.Time
}

// Verdict says whether this manager must stand down and because of which Lease.
type Verdict struct {
	Blocked bool
	// Namespace and Holder name the other manager's Lease (never a secret: a pod name and a UUID).
	Namespace, Holder string
	// Ours is true when the other manager marked its Lease as this operator's (a second install).
	Ours bool
	// Until is when the other Lease expires unless renewed again.
	Until time.Time
}

// Message is the condition and Event text of a blocked verdict.
func (v Verdict) Message() string {
	if !v.Blocked {
		return "no other agent-forge manager holds a live Lease"
	}
	who := "another agent-forge manager (upstream's Helm/kustomize/ArgoCD install, or an older release of this operator)"
	if v.Ours {
		who = "an older install of this operator"
	}
	return fmt.Sprintf("%s holds the Lease agent-forge-operator.containeroo.ch in namespace %s (holder %s); this manager takes no action on pools, VsphereAgents, Agents or VMs until that Lease is no longer renewed (stop or remove the other install, see docs/migration.md)",
		who, v.Namespace, v.Holder)
}

// Live reports whether l is held and was renewed within its duration plus slack at now.
func Live(l Lease, now time.Time, slack time.Duration) bool {
	if l.Holder == "" || l.RenewTime.IsZero() {
		return false
	}
	d := l.Duration
	if d <= 0 {
		d = defaultLeaseDuration
	}
	return now.Before(l.RenewTime.Add(d + slack))
}

// Decide is the rule. Any live Lease in another namespace blocks this manager, except one marked as
// this operator's that is younger than ours (or as old, and in a namespace sorting after ours): of two
// installs of this operator, the older acts and the newer waits, so exactly one acts. An unmarked
// Lease is upstream's (or an older release of ours that cannot wait for us): it always wins.
func Decide(leases []Lease, own Own, now time.Time, slack time.Duration) Verdict {
	sorted := append([]Lease(nil), leases...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Namespace < sorted[j].Namespace })
	for _, l := range sorted {
		if l.Namespace == own.Namespace || !Live(l, now, slack) {
			continue
		}
		if l.Marked && !olderInstall(l, own) {
			continue
		}
		d := l.Duration
		if d <= 0 {
			d = defaultLeaseDuration
		}
		return Verdict{Blocked: true, Namespace: l.Namespace, Holder: l.Holder, Ours: l.Marked, Until: l.RenewTime.Add(d + slack)}
	}
	return Verdict{}
}

// olderInstall reports whether the marked Lease l belongs to an install that takes precedence over ours.
func olderInstall(l Lease, own Own) bool {
	switch {
	case own.Created.IsZero():
		return true // we hold no Lease (leader election off): the install that does acts
	case l.Created.Before(own.Created):
		return true
	case l.Created.Equal(own.Created):
		return l.Namespace < own.Namespace
	}
	return false
}

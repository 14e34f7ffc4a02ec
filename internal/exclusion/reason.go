package exclusion

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// StandDownReason is the condition and Event reason of a closed exclusion gate: another manager holds
// a live Lease, or the Leases could not be read (not yet, or beyond the grace period: the gate fails
// closed).
func StandDownReason(g Gate) string {
	if g.Unreadable {
		return afv1.ReasonManagerLeasesUnreadable
	}
	return afv1.ReasonOtherManagerRunning
}

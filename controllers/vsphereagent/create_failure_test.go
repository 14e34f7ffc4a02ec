package vsphereagent

import (
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// The VsphereAgent reason of an ownership refusal is the one the registration breaker counts.
func TestOwnershipRefusalCountsTowardsBreaker(t *testing.T) {
	reason := createFailureReason(vsphere.NewError(vsphere.ClassOwnership, "CreateVM", "marker of another VsphereAgent"))
	if reason != string(vsphere.ClassOwnership) || !planner.CountsTowardsBreaker(reason) {
		t.Fatalf("ownership refusal reason %q (class %q) must count towards the breaker", reason, vsphere.ClassOwnership)
	}
	for _, class := range []vsphere.ErrorClass{vsphere.ClassDuplicateName, vsphere.ClassInvalid} {
		if r := createFailureReason(vsphere.NewError(class, "CreateVM", "refused")); !planner.CountsTowardsBreaker(r) {
			t.Errorf("permanent create refusal %s -> reason %q does not count towards the breaker", class, r)
		}
	}
}

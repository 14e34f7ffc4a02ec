package vsphere_test

import (
	"testing"

	"golang.org/x/sync/errgroup"
)

// A session's datacenter cache is shared by concurrent reconciles (many pools, 16 VM workers). govmomi's
// Finder fills its datacenter folders lazily on first use, unsynchronised: the cache must hand out a
// Finder that is already filled, or -race reports concurrent placement checks on a fresh session.
func TestConcurrentPlacementChecksOnAFreshSession(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	spec := simPrivilegeSpec().PlacementSpec
	var checks errgroup.Group
	for range 4 {
		checks.Go(func() error {
			problems, err := h.client.CheckPlacement(ctx, spec)
			if err == nil && len(problems) > 0 {
				t.Errorf("the simulator's placement has problems: %v", problems)
			}
			return err
		})
	}
	if err := checks.Wait(); err != nil {
		t.Fatal(err)
	}
}

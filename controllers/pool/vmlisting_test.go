package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func TestPoolsShareTheMarkedVMListing(t *testing.T) {
	ctx := context.Background()
	var l markedVMListings
	var reads atomic.Int32
	vms := []vsphere.VMInfo{
		{Name: "a-1", InstanceUUID: "1", Ownership: vsphere.Ownership{PoolUID: "pool-a", OwnerUID: "1"}},
		{Name: "b-1", InstanceUUID: "2", Ownership: vsphere.Ownership{PoolUID: "pool-b", OwnerUID: "2"}},
	}
	read := func(context.Context) ([]vsphere.VMInfo, error) { reads.Add(1); return vms, nil }
	now := time.Unix(1000, 0)
	key := listingKey("vc", "user", "dc")

	got, _ := l.list(ctx, key, now, time.Minute, read)
	if a, _ := splitCopies(got, "pool-a"); len(a) != 1 || a[0].Name != "a-1" {
		t.Fatalf("pool-a's VMs: %+v", a)
	}
	if b, _ := l.list(ctx, key, now.Add(59*time.Second), time.Minute, read); len(originalsOf(b, "pool-b")) != 1 || reads.Load() != 1 {
		t.Fatalf("a second pool within the window listed again (%d reads) or lost its VM", reads.Load())
	}
	if _, _ = l.list(ctx, listingKey("vc", "other-user", "dc"), now, time.Minute, read); reads.Load() != 2 {
		t.Errorf("another vCenter user took this user's listing (%d reads)", reads.Load())
	}
	if _, _ = l.list(ctx, key, now.Add(time.Minute), time.Minute, read); reads.Load() != 3 {
		t.Errorf("a listing as old as the window was reused (%d reads)", reads.Load())
	}
	if len(originalsOf(vms, "")) != 0 {
		t.Error("an empty pool UID picked VMs")
	}
}

func TestAFailedListingIsNotKept(t *testing.T) {
	ctx := context.Background()
	var l markedVMListings
	now := time.Unix(1000, 0)
	key := listingKey("vc", "user", "dc")
	if _, err := l.list(ctx, key, now, time.Minute, func(context.Context) ([]vsphere.VMInfo, error) { return nil, errors.New("vCenter busy") }); err == nil {
		t.Fatal("the failure was not returned")
	}
	got, err := l.list(ctx, key, now, time.Minute, func(context.Context) ([]vsphere.VMInfo, error) { return []vsphere.VMInfo{{Name: "x"}}, nil })
	if err != nil || len(got) != 1 {
		t.Fatalf("the next scan got %v, %v: the failed listing was kept", got, err)
	}
}

func TestScansWaitForTheListingUnderWay(t *testing.T) {
	ctx := context.Background()
	var l markedVMListings
	now := time.Unix(1000, 0)
	key := listingKey("vc", "user", "dc")
	release := make(chan struct{})
	var reads atomic.Int32
	listing := make(chan struct{})
	read := func(context.Context) ([]vsphere.VMInfo, error) {
		if reads.Add(1) == 1 {
			close(listing)
		}
		<-release
		return []vsphere.VMInfo{{Name: "x"}}, nil
	}
	var wg sync.WaitGroup
	results := make([]int, 5)
	wg.Add(1)
	go func() {
		defer wg.Done()
		got, _ := l.list(ctx, key, now, time.Minute, read)
		results[0] = len(got)
	}()
	<-listing // the first scan is listing
	for i := 1; i < len(results); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, _ := l.list(ctx, key, now, time.Minute, read)
			results[i] = len(got)
		}()
	}
	close(release)
	wg.Wait()
	if reads.Load() != 1 {
		t.Errorf("%d listings for five scans at once, want 1", reads.Load())
	}
	for i, n := range results {
		if n != 1 {
			t.Errorf("scan %d got %d VMs, want the shared listing's 1", i, n)
		}
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	l2 := markedVMListings{byKey: map[string]*markedVMListing{key: {at: now, done: make(chan struct{})}}}
	if _, err := l2.list(cancelled, key, now, time.Minute, read); !errors.Is(err, context.Canceled) {
		t.Errorf("a waiting scan whose pass ended got %v, want its context's error", err)
	}
}

func originalsOf(vms []vsphere.VMInfo, poolUID string) []vsphere.VMInfo {
	originals, _ := splitCopies(vms, poolUID)
	return originals
}

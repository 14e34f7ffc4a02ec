package pool

import (
	"context"
	"sync"
	"time"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// markedVMListings shares the listing of every VM carrying an agent-forge marker among the pools' orphan
// scans: the pools reaching one datacenter as one vCenter user make one listing per window (maxAge), not
// one each. A scan lists every VM of the datacenter with its devices; issue #39's full-size bench (50
// pools, 1000 VMs) spent most of the pool workers' CPU on 50 such listings of the same 1000 VMs. Keyed by
// user too: another user may see other VMs, so its scans never take this user's listing as complete.
type markedVMListings struct {
	mu    sync.Mutex
	byKey map[string]*markedVMListing
}

type markedVMListing struct {
	at   time.Time
	vms  []vsphere.VMInfo
	err  error
	done chan struct{} // closed when vms and err are set
}

func listingKey(server, user, datacenter string) string {
	return server + "\x00" + user + "\x00" + datacenter
}

// list returns the VMs carrying any marker in the key's datacenter: the listing taken within maxAge of now
// (waiting for it while another scan takes it), else a new one from read. The result is shared: callers
// must not change it. A failed listing is not kept: the next scan lists again.
func (l *markedVMListings) list(ctx context.Context, key string, now time.Time, maxAge time.Duration, read func(context.Context) ([]vsphere.VMInfo, error)) ([]vsphere.VMInfo, error) {
	l.mu.Lock()
	if l.byKey == nil {
		l.byKey = map[string]*markedVMListing{}
	}
	if cur := l.byKey[key]; cur != nil && now.Sub(cur.at) < maxAge {
		l.mu.Unlock()
		select {
		case <-cur.done:
			return cur.vms, cur.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	next := &markedVMListing{at: now, done: make(chan struct{})}
	l.byKey[key] = next
	for k, old := range l.byKey { // the map stays the size of the datacenters scanned lately
		if now.Sub(old.at) >= maxAge && old != next && finished(old) {
			delete(l.byKey, k)
		}
	}
	l.mu.Unlock()

	next.vms, next.err = read(ctx)
	close(next.done)
	if next.err != nil {
		l.mu.Lock()
		if l.byKey[key] == next {
			delete(l.byKey, key)
		}
		l.mu.Unlock()
	}
	return next.vms, next.err
}

func finished(l *markedVMListing) bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// orphanListingMaxAge is how old a shared listing an orphan scan accepts: a tenth of the scan interval
// (a minute at the default ten), so pools that came up together share one listing per round while a scan
// never works from a listing older than the VsphereAgents it compares against by more than that.
func orphanListingMaxAge(scanInterval time.Duration) time.Duration {
	return scanInterval / 10
}

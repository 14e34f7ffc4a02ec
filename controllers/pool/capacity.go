package pool

import (
	"context"
	"time"

	"github.com/containeroo/agent-forge-operator/internal/redact"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// capacityReading is vCenter's last reading of one placement (a resource pool and a datastore or
// datastore cluster of one vCenter), shared by every pool placing VMs there: fifty pools on one cluster
// read it once per capacityCheckInterval, not fifty times (three retrievals each; issue #39's full-size
// bench spent 4.6 vSphere calls per VM on them), and the VMs any of them creates after the reading count
// against every pool's headroom, as they do in vCenter.
type capacityReading struct {
	at   time.Time
	capa vsphere.Capacity
	err  string
	// since are the VMs created here after the reading, by any pool (Capacity.Less).
	since []vsphere.VMNeed
	// refreshing is set while one pass reads again; the others use this reading meanwhile.
	refreshing bool
}

// placedAs is where a pool's failure domain places its VMs (a placement key) and what one VM needs.
type placedAs struct {
	placement string
	need      vsphere.VMNeed
}

// domainReading is a reading as one pool's domain sees it.
type domainReading struct {
	// headroom is how many VMs of the pool's template still fit, the VMs created since the reading taken off.
	headroom int
	// short says, with vCenter's numbers, why none fits at the reading itself (empty when the reading had
	// room that the VMs created since used).
	short []string
	err   string
}

// placementKey names a placement across pools: the vCenter and the objects the VMs land in. Pools that
// reach one vCenter with different credentials share the reading: capacity is vCenter's, not a user's.
func placementKey(server string, spec vsphere.CapacitySpec) string {
	return server + "\x00" + spec.Datacenter + "\x00" + spec.ResourcePool + "\x00" + spec.DatastoreCluster
}

// reading returns the capacity of the placement of the pool's domain (key: pool key/domain) for one VM of
// need, reading vCenter again when the shared reading is older than capacityCheckInterval.
func (t *domainTracker) reading(ctx context.Context, key, server string, vs vsphere.Client, spec vsphere.CapacitySpec, need vsphere.VMNeed, now time.Time) domainReading {
	pk := placementKey(server, spec)
	t.mu.Lock()
	if t.placed == nil {
		t.placed = map[string]placedAs{}
	}
	t.placed[key] = placedAs{placement: pk, need: need}
	c := t.capacity[pk]
	stale := c == nil || now.Sub(c.at) >= capacityCheckInterval
	if stale && c != nil && c.refreshing {
		stale = false // another pass is reading it; this one uses the last reading
	}
	if !stale {
		out := c.forDomain(need)
		t.mu.Unlock()
		return out
	}
	if c != nil {
		c.refreshing = true
	}
	t.mu.Unlock()

	fresh := &capacityReading{at: now}
	if capa, err := vs.ReadCapacity(ctx, spec); err != nil {
		fresh.err = redact.String(err.Error())
	} else {
		fresh.capa = *capa
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.capacity == nil {
		t.capacity = map[string]*capacityReading{}
	}
	t.capacity[pk] = fresh
	t.forgetOldReadings(now)
	return fresh.forDomain(need)
}

// forDomain is the reading for one VM of need. Called with the tracker's lock held.
func (c *capacityReading) forDomain(need vsphere.VMNeed) domainReading {
	if c.err != "" {
		return domainReading{err: c.err}
	}
	at := vsphere.HeadroomFor(c.capa, need)
	if at.VMs == 0 {
		return domainReading{short: at.Short}
	}
	left := c.capa
	for _, n := range c.since {
		left = left.Less(n)
	}
	return domainReading{headroom: vsphere.HeadroomFor(left, need).VMs}
}

// reserve counts one VM just created by the pool's domain (key: pool key/domain) against its placement's
// reading. Called with the tracker's lock held.
func (t *domainTracker) reserve(key string) {
	p, ok := t.placed[key]
	if !ok {
		return
	}
	if c := t.capacity[p.placement]; c != nil && c.err == "" {
		c.since = append(c.since, p.need)
	}
}

// forgetOldReadings drops the readings no pass asked for in ten intervals (a placement no pool uses any
// longer), so the shared map stays the size of the placements in use. Called with the lock held.
func (t *domainTracker) forgetOldReadings(now time.Time) {
	for k, c := range t.capacity {
		if now.Sub(c.at) > 10*capacityCheckInterval && !c.refreshing {
			delete(t.capacity, k)
		}
	}
}

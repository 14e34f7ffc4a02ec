package pool

import (
	"context"
	"fmt"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/redact"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// deviceCheckInterval is how often the PCI devices of a placement's hosts are read again while pools with
// spec.template.hardware.pciDevices place VMs there: devices change only when hosts are reconfigured,
// enter or leave maintenance mode, or join the cluster.
const deviceCheckInterval = 5 * time.Minute

// deviceRecheckInterval is how soon a reading is taken again while a pool placing VMs there finds none of
// its hosts fit (a fixed host is seen within a minute, not five).
const deviceRecheckInterval = time.Minute

// deviceReading is vCenter's last reading of the PCI devices of one placement's hosts (its resource pool's
// cluster or standalone host), shared by every pool placing VMs there, like capacityReading: a vCenter
// call per host per deviceCheckInterval, not one per pass per pool.
type deviceReading struct {
	at      time.Time
	devices vsphere.HostDevices
	err     string
	// refreshing is set while one pass reads again; the others use this reading meanwhile.
	refreshing bool
}

// devicesKey names the hosts a placement's VMs can land on, across pools: the vCenter, datacenter and
// resource pool (the datastore plays no part).
func devicesKey(server string, spec vsphere.HostDevicesSpec) string {
	return server + "\x00" + spec.Datacenter + "\x00" + spec.ResourcePool
}

// deviceFit is a reading as one pool's domain sees it: shortfall says why no host fits (empty: one does),
// err that the hosts could not be read.
type deviceFit struct {
	shortfall string
	err       string
}

// devicesFit says whether a host of the placement offers every device of want, reading vCenter again when
// the shared reading is older than deviceCheckInterval (deviceRecheckInterval while no host fits).
func (t *domainTracker) devicesFit(ctx context.Context, server string, vs vsphere.Client, spec vsphere.HostDevicesSpec, want []vsphere.PCIDevice, now time.Time) deviceFit {
	dk := devicesKey(server, spec)
	t.mu.Lock()
	c := t.devices[dk]
	if c != nil {
		out := c.fit(want)
		interval := deviceCheckInterval
		if out.shortfall != "" || out.err != "" {
			interval = deviceRecheckInterval
		}
		if now.Sub(c.at) < interval || c.refreshing {
			t.mu.Unlock()
			return out
		}
		c.refreshing = true
	}
	t.mu.Unlock()

	fresh := &deviceReading{at: now}
	if d, err := vs.ReadHostDevices(ctx, spec); err != nil {
		fresh.err = redact.String(err.Error())
	} else {
		fresh.devices = *d
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.devices == nil {
		t.devices = map[string]*deviceReading{}
	}
	t.devices[dk] = fresh
	for k, r := range t.devices { // placements no pass asked about in ten intervals
		if now.Sub(r.at) > 10*deviceCheckInterval && !r.refreshing {
			delete(t.devices, k)
		}
	}
	return fresh.fit(want)
}

// fit is the reading's verdict for want. Called with the tracker's lock held.
func (c *deviceReading) fit(want []vsphere.PCIDevice) deviceFit {
	if c.err != "" {
		return deviceFit{err: c.err}
	}
	return deviceFit{shortfall: vsphere.FitDevices(c.devices, want).Shortfall(c.devices, want)}
}

// devicesOffered checks, for a pool with spec.template.hardware.pciDevices, that a host of the domain's
// placement offers every device. When none does the domain is skipped: FailureDomainsAvailable
// PCIDevicesUnavailable naming what is missing, a rate-limited Warning Event, and it returns false. A
// reading that failed says so in the domain's status (PCIDevicesUnchecked) and holds nothing back:
// vCenter refuses to power on a VM whose device no host has.
func (r *Reconciler) devicesOffered(ctx context.Context, s *poolScope, v *domainView, key, label string, now time.Time) bool {
	p := s.pool
	want := poolspec.PCIDevices(p)
	if len(want) == 0 {
		return true
	}
	f := r.domains.devicesFit(ctx, s.creds.Server, s.vs, vsphere.HostDevicesSpec{Datacenter: p.Spec.VSphere.Datacenter,
		ResourcePool: v.placement.ResourcePool}, want, now)
	switch {
	case f.err != "":
		v.status.Reason, v.status.Message = afv1.ReasonPCIDevicesUnchecked, "the hosts' PCI devices could not be read: "+f.err
		s.requeueAfter(deviceRecheckInterval)
		return true
	case f.shortfall == "":
		r.refusalEvents.Clear(key + "/devices")
		return true
	}
	msg := fmt.Sprintf("%s: %s (spec.template.hardware.pciDevices); no VM is created there, the hosts are read again every %s",
		label, f.shortfall, deviceRecheckInterval)
	v.Skipped = true
	v.status.Available, v.status.Reason, v.status.Message = false, afv1.ReasonPCIDevicesUnavailable, msg
	s.requeueAfter(deviceRecheckInterval)
	if r.refusalEvents.Allow(key+"/devices", f.shortfall, now) {
		r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonPCIDevicesUnavailable, events.ActionPlaceVM, "%s", msg)
	}
	return false
}

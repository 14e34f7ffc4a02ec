package vsphereagent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// vmObserveTimeout bounds one look-up of the VM: a slow vCenter delays the check, not the binding
// phases after it.
const vmObserveTimeout = 30 * time.Second

// vmChecks remembers when each VsphereAgent last looked its VM up, and reads of VMs fetched along with
// another VM's look-up (lost on restart: the first pass of a new process looks again).
type vmChecks struct {
	m       sync.Map
	fetched sync.Map // UID -> fetchedRead
	missing sync.Map // UID -> time.Time: when a look-up first found no VM (goneStep confirms it)
	readAt  sync.Map // UID -> time.Time: when a pool read last read the VM (readPool)
	// poweredOn holds the report of a power-on this process did (UID -> message) until a status saying
	// VMPoweredOn is written: a pass whose write conflicts would otherwise lose it, and the next look-up
	// finds the VM running and reports only that.
	poweredOn sync.Map
	// reads runs one look-up per pool and datacenter at a time: passes whose checks fall due together
	// (a pool's checks align on its shared reads) wait for that one call instead of each making its own.
	reads singleflight.Group
}

// fetchedRead is a VM read by another VsphereAgent's look-up (lookUpVM), waiting for its own pass.
type fetchedRead struct {
	info *vsphere.VMInfo
	at   time.Time
}

// maxPeerLookups bounds how many other VMs one look-up reads along.
const maxPeerLookups = 200

func (c *vmChecks) due(uid types.UID, now time.Time, every time.Duration) (time.Duration, bool) {
	v, ok := c.m.Load(uid)
	if !ok {
		return 0, true
	}
	left := v.(time.Time).Add(every).Sub(now)
	return left, left <= 0
}

func (c *vmChecks) done(uid types.UID, now time.Time) { c.m.Store(uid, now) }

// forget drops what is remembered of a VsphereAgent being deleted (no look-up runs during deletion).
func (c *vmChecks) forget(uid types.UID) {
	c.m.Delete(uid)
	c.fetched.Delete(uid)
	c.missing.Delete(uid)
	c.readAt.Delete(uid)
	c.poweredOn.Delete(uid)
}

// missingSince is when a look-up of this process first found no VM for uid (ok false: none did).
func (c *vmChecks) missingSince(uid types.UID) (time.Time, bool) {
	v, ok := c.missing.Load(uid)
	if !ok {
		return time.Time{}, false
	}
	return v.(time.Time), true
}

// vmGoneConfirmDelay is how long after a look-up found no VM a second look-up, by instance UUID and by
// BIOS UUID, must still find none before the VM is declared gone. A single NotFound is not proof: vCenter
// answers NotFound for a VM that is being unregistered and registered again (HA, a host reconnecting, a
// backup product's restore in place), and a NotFound that makes a discovery VM Failed costs a replacement.
const vmGoneConfirmDelay = time.Minute

// goneStepKind is what observeVM does about a VM a look-up did not find.
type goneStepKind int

const (
	// goneSuspect: the first NotFound: remember when, report VMNotFoundUnconfirmed, look again later.
	goneSuspect goneStepKind = iota
	// goneWait: confirming, but the delay has not passed.
	goneWait
	// goneConfirm: look up again by instance UUID and BIOS UUID; nothing found declares the VM gone.
	goneConfirm
	// goneDeclared: the VM was declared gone before (VMNotFound): it stays so, no new confirmation.
	goneDeclared
)

// goneStep decides the next step for a VM whose last look-up found nothing: declared is VMHealthy's
// reason already VMNotFound, since/suspected when this process first found it missing.
func goneStep(declared bool, since time.Time, suspected bool, now time.Time) (goneStepKind, time.Duration) {
	switch {
	case declared:
		return goneDeclared, 0
	case !suspected:
		return goneSuspect, vmGoneConfirmDelay
	case now.Before(since.Add(vmGoneConfirmDelay)):
		return goneWait, since.Add(vmGoneConfirmDelay).Sub(now)
	}
	return goneConfirm, 0
}

// observeVM looks the created VM up by its instance UUID every VMCheckInterval and reports what someone
// else did to it (SPEC §4: ownership is proven by the instance UUID and the marker, never by the name):
//   - gone: only once a second look-up (by instance UUID and BIOS UUID, vmGoneConfirmDelay later) finds
//     it gone too (VMNotFoundUnconfirmed in between): a VM that never joined a cluster fails (VMNotFound)
//     and the pool replaces it; a VM that backs or backed a Machine only reports it: no duplicate while
//     the Machine references its Agent, the Machine's health check decides;
//   - powered off: a discovery VM (never bound) is powered on again; a bound or installed one is only
//     reported, never touched;
//   - renamed or moved: reported, and still tracked (and destroyed on scale-down) by its instance UUID;
//   - its marker or BIOS UUID changed: reported, nothing is done to it.
func (r *Reconciler) observeVM(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	if va.Status.VM.InstanceUUID == "" || va.Status.VM.Phase == afv1.VMPhaseReleased {
		return true, nil
	}
	now := r.Opts.Clock.Now()
	if since, suspected := r.checks.missingSince(va.UID); suspected {
		return r.confirmGone(ctx, s, since, now)
	}
	if left, due := r.checks.due(va.UID, now, r.Opts.VMCheckInterval); !due {
		s.requeueAfter(left)
		return true, nil
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		return true, nil //nolint:nilerr // the pool reports vCenter unreachable; the binding phases go on
	}
	lookup, cancel := context.WithTimeout(ctx, vmObserveTimeout)
	defer cancel()
	info, at, err := r.lookUpVM(lookup, s, vs, now)
	if err != nil && vsphere.ClassOf(err) != vsphere.ClassNotFound {
		s.log.V(1).Info("VM look-up failed; next try at the next check", "vm", va.Status.VM.Name, "error", err.Error())
		s.requeueAfter(r.Opts.VMCheckInterval)
		return true, nil
	}
	// Paced from the read's time (a read fetched along with another VM's look-up aligns this VM's next
	// look-up with that VM's), and only once the finding is persisted: a pass whose write conflicts looks again.
	s.afterWrite = append(s.afterWrite, func() { r.checks.done(va.UID, at) })
	s.requeueAfter(r.Opts.VMCheckInterval - now.Sub(at))
	if err != nil {
		return r.vmNotFound(s, now), nil
	}
	return true, r.observeFound(ctx, s, vs, info)
}

// vmNotFound handles a look-up that found no VM: the first one only makes the VM suspect (goneStep);
// a VM declared gone before stays gone.
func (r *Reconciler) vmNotFound(s *vmScope, now time.Time) bool {
	va := s.va
	c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionVMHealthy)
	step, wait := goneStep(c != nil && c.Reason == afv1.ReasonVMNotFound, time.Time{}, false, now)
	if step == goneDeclared {
		return r.vmGone(s)
	}
	// Suspected only once VMNotFoundUnconfirmed is persisted: a pass whose write conflicts looks again
	// (and reports again) instead of waiting out the delay behind a condition that still says otherwise.
	s.afterWrite = append(s.afterWrite, func() { r.checks.missing.Store(va.UID, now) })
	r.reportVM(s, false, afv1.ReasonVMNotFoundUnconfirmed, "Normal", fmt.Sprintf("VM %s (instance UUID %s) was not found in vCenter; it is looked up again by instance UUID and BIOS UUID in %s "+
		"and declared gone only if it is still not found", va.Status.VM.Name, va.Status.VM.InstanceUUID, wait))
	s.requeueAfter(wait)
	return true
}

// confirmGone is the look-up that confirms a VM not found (goneStep): by instance UUID, then by BIOS
// UUID. Nothing found declares the VM gone (vmGone); a VM found again is observed as usual.
func (r *Reconciler) confirmGone(ctx context.Context, s *vmScope, since, now time.Time) (bool, error) {
	va := s.va
	step, wait := goneStep(false, since, true, now)
	if step == goneWait {
		s.requeueAfter(wait)
		return true, nil
	}
	var info *vsphere.VMInfo
	if v, ok := r.checks.fetched.LoadAndDelete(va.UID); ok && now.Sub(v.(fetchedRead).at) < vmGoneConfirmDelay {
		info = v.(fetchedRead).info // a peer's look-up found it meanwhile
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		s.requeueAfter(r.Opts.VMCheckInterval)
		return true, nil //nolint:nilerr // the pool reports vCenter unreachable; confirmed at the next try
	}
	if info == nil {
		lookup, cancel := context.WithTimeout(ctx, vmObserveTimeout)
		defer cancel()
		info, err = vs.FindVM(lookup, poolspec.DatacenterOf(va, s.pool), va.Status.VM.InstanceUUID, va.Status.VM.BIOSUUID)
		if err != nil && vsphere.ClassOf(err) != vsphere.ClassNotFound {
			s.log.V(1).Info("confirming look-up failed; next try at the next check", "vm", va.Status.VM.Name, "error", err.Error())
			s.requeueAfter(r.Opts.VMCheckInterval)
			return true, nil
		}
	}
	// The suspicion ends only once the verdict is persisted: a pass whose write conflicts (a concurrent
	// update of the VsphereAgent) confirms again at once instead of starting the wait over.
	s.afterWrite = append(s.afterWrite, func() {
		r.checks.missing.Delete(va.UID)
		r.checks.done(va.UID, now)
	})
	s.requeueAfter(r.Opts.VMCheckInterval)
	if err != nil {
		return r.vmGone(s), nil
	}
	return true, r.observeFound(ctx, s, vs, info)
}

// observeFound reports what a look-up found: another identity, powered off, moved, renamed or running.
func (r *Reconciler) observeFound(ctx context.Context, s *vmScope, vs vsphere.Client, info *vsphere.VMInfo) error {
	va := s.va
	if info.InstanceUUID != "" && !strings.EqualFold(info.InstanceUUID, va.Status.VM.InstanceUUID) {
		// Found by BIOS UUID only: a VM carrying this one's BIOS UUID under another instance UUID (a copy,
		// or this VM registered again): not declared gone, and nothing is done to it.
		r.reportVM(s, false, afv1.ReasonVMIdentityChanged, "Warning", fmt.Sprintf("no VM has instance UUID %s any more, but VM %s (instance UUID %s) carries its BIOS UUID %s; "+
			"nothing is done to it, and no replacement is created for it", va.Status.VM.InstanceUUID, info.Name, info.InstanceUUID, va.Status.VM.BIOSUUID))
		return nil
	}
	r.ejector().SawVM(va.UID, s.pool, info) // arms the ejection at Bound without a look-up of its own
	if info.Ownership.OwnerUID != string(va.UID) || !strings.EqualFold(info.BIOSUUID, va.Status.VM.BIOSUUID) {
		r.reportVM(s, false, afv1.ReasonVMIdentityChanged, "Warning", fmt.Sprintf("VM %s (instance UUID %s) no longer carries this VsphereAgent's ownership marker or recorded BIOS UUID; "+
			"nothing is done to it until that is restored", info.Name, va.Status.VM.InstanceUUID))
		return nil
	}
	if !info.PoweredOn {
		return r.vmPoweredOff(ctx, s, vs, info)
	}
	if !info.DiskFirstBoot && info.DiskGiB > 0 && !r.bootDiskFirst(ctx, s, vs, info) {
		return nil
	}
	wantFolder := ""
	if pl, ok := poolspec.DomainOf(s.pool, va.Spec.FailureDomain); ok {
		wantFolder = strings.Trim(pl.Folder, "/")
	}
	switch {
	case wantFolder != "" && info.Folder != wantFolder:
		r.reportVM(s, true, afv1.ReasonVMMoved, "Normal", fmt.Sprintf("VM %s (created as %s) was moved to folder %q (the pool's folder is %q); it is still tracked, and destroyed when released, by its instance UUID %s",
			info.Name, va.Status.VM.Name, info.Folder, wantFolder, va.Status.VM.InstanceUUID))
	case info.Name != va.Status.VM.Name:
		r.reportVM(s, true, afv1.ReasonVMRenamed, "Normal", fmt.Sprintf("VM %s was renamed to %s in vCenter; it is still tracked, and destroyed when released, by its instance UUID %s",
			va.Status.VM.Name, info.Name, va.Status.VM.InstanceUUID))
	default:
		r.reportRunning(s, info)
	}
	return nil
}

// bootDiskFirst handles a VM a check found not booting its disk first: CreateVM starts the reconfigure
// that sets [disk, CD-ROM] without waiting for it (internal/vsphere/bootorder.go), so a failed one, or an
// order someone changed, shows here. Before its installation finished the order is set again (an
// installed worker that boots its CD-ROM stalls at installing-pending-user-action); an installed worker's
// boot options are left alone and only reported. False: reported as VMHealthy=False, nothing else to say.
func (r *Reconciler) bootDiskFirst(ctx context.Context, s *vmScope, vs vsphere.Client, info *vsphere.VMInfo) bool {
	va := s.va
	if s.agent != nil && s.agent.IsInstalled() {
		r.reportVM(s, false, afv1.ReasonBootOrderNotDiskFirst, "Warning", fmt.Sprintf("VM %s does not boot its disk first; its worker is installed, so its boot options are left alone: "+
			"at its next boot it would start the discovery ISO if its CD-ROM still holds one. Put the boot disk first in the VM's boot options", info.Name))
		return false
	}
	changed, err := vs.SetDiskFirstBoot(ctx, poolspec.DatacenterOf(va, s.pool), va.Status.VM.InstanceUUID, va.Status.VM.BIOSUUID, poolspec.Ownership(va, s.pool))
	if err != nil {
		r.reportVM(s, false, afv1.ReasonBootOrderNotDiskFirst, "Warning", fmt.Sprintf("VM %s does not boot its disk first and setting that boot order failed: %v; tried again at the next check "+
			"(installed, it would boot the discovery ISO again)", info.Name, err))
		return false
	}
	if changed {
		s.log.Info("VM did not boot its disk first; set the boot order to disk first", "vm", info.Name)
		msg := fmt.Sprintf("VM %s did not boot its disk first (the reconfigure its creation started failed, or its boot options were changed); set its boot order to [disk, CD-ROM]", info.Name)
		s.afterWrite = append(s.afterWrite, func() {
			r.Recorder.Eventf(va, nil, "Normal", afv1.ReasonBootOrderSet, events.ActionObserveVM, "%s", msg)
		})
	}
	return true
}

// reportRunning reports a VM found running where it belongs, or, while the report of a power-on this
// process did is not written yet (its pass's write conflicted), that power-on.
func (r *Reconciler) reportRunning(s *vmScope, info *vsphere.VMInfo) {
	if msg, ok := r.checks.poweredOn.Load(s.va.UID); ok {
		r.reportPoweredOn(s, msg.(string))
		return
	}
	r.reportVM(s, true, afv1.ReasonVMRunning, "", runningMessage(info.Name, info.Folder))
}

// reportPoweredOn reports a power-on this process did, and keeps the report until a status saying so
// is written.
func (r *Reconciler) reportPoweredOn(s *vmScope, msg string) {
	uid := s.va.UID
	r.checks.poweredOn.Store(uid, msg)
	r.reportVM(s, true, afv1.ReasonVMPoweredOn, "Warning", msg)
	s.afterWrite = append(s.afterWrite, func() { r.checks.poweredOn.Delete(uid) })
}

// lookUpVM reads the VM for observeVM and returns when it was read. A read fetched along with another
// VM's look-up is used while younger than VMCheckInterval. Otherwise one call reads every VM of the same
// pool and datacenter (LookupVMs: one retrieval for the VMs the session knows), the ones not due yet
// included: each of them reports from that read when its own check falls due and is paced from the
// read's time, so a pool's checks align on one call per interval, whenever its VMs were created.
// Passes due at the same moment share the call in flight (checks.reads). A VM the shared read leaves
// out (reference not known, gone, instance UUID changed) is looked up alone by instance UUID only: a
// clone may carry the BIOS UUID, never our instance UUID and marker.
func (r *Reconciler) lookUpVM(ctx context.Context, s *vmScope, vs vsphere.Client, now time.Time) (*vsphere.VMInfo, time.Time, error) {
	va := s.va
	if info, at, ok := r.takeFetched(va.UID, now); ok {
		return info, at, nil
	}
	dc := poolspec.DatacenterOf(va, s.pool)
	key := s.pool.Namespace + "/" + s.pool.Name + "@" + dc
	_, _, _ = r.checks.reads.Do(key, func() (any, error) {
		r.readPool(ctx, s, vs, dc, now)
		return nil, nil
	})
	if info, at, ok := r.takeFetched(va.UID, now); ok {
		return info, at, nil
	}
	info, err := vs.FindVM(ctx, dc, va.Status.VM.InstanceUUID, "")
	return info, now, err
}

// takeFetched takes the read of uid's VM a pool read left waiting, while younger than VMCheckInterval.
func (r *Reconciler) takeFetched(uid types.UID, now time.Time) (*vsphere.VMInfo, time.Time, bool) {
	v, ok := r.checks.fetched.LoadAndDelete(uid)
	if !ok {
		return nil, time.Time{}, false
	}
	f := v.(fetchedRead)
	if now.Sub(f.at) >= r.Opts.VMCheckInterval {
		return nil, time.Time{}, false
	}
	return f.info, f.at, true
}

// readPool reads, in one call, the VM of s and those of the other VsphereAgents of its pool in
// datacenter dc, and leaves each read waiting for its VsphereAgent's check (checks.fetched). A failed
// read leaves nothing: each check then looks its VM up alone. With no peer to read along (all read
// recently) it reads nothing, and s's VM is looked up alone.
func (r *Reconciler) readPool(ctx context.Context, s *vmScope, vs vsphere.Client, dc string, now time.Time) {
	peers := r.poolPeers(ctx, s, dc, now)
	if len(peers) == 0 {
		return
	}
	peers[s.va.UID] = s.va.Status.VM.InstanceUUID
	uuids := make([]string, 0, len(peers))
	for _, uuid := range peers {
		uuids = append(uuids, uuid)
	}
	got, err := vs.LookupVMs(ctx, dc, uuids)
	if err != nil {
		return
	}
	for uid, uuid := range peers {
		if info, ok := got[strings.ToLower(uuid)]; ok {
			r.checks.fetched.Store(uid, fetchedRead{info: info, at: now})
			r.checks.readAt.Store(uid, now)
		}
	}
}

// poolPeers lists, by UID, the instance UUIDs of the other VMs of s's pool in datacenter dc that are
// checked (created, not released, failed or being deleted), have no fetched read waiting and were not
// read by a pool read in the last half interval (a VM that was never read is always taken along: that is
// what aligns a pool's checks whatever its VMs' creation times).
func (r *Reconciler) poolPeers(ctx context.Context, s *vmScope, dc string, now time.Time) map[types.UID]string {
	out := map[types.UID]string{}
	list := &afv1.VsphereAgentList{}
	if err := r.List(ctx, list, client.InNamespace(s.va.Namespace), client.MatchingFields{watch.IndexPoolRef: s.pool.Name}); err != nil {
		return out
	}
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case len(out) >= maxPeerLookups:
			return out
		case p.UID == s.va.UID, p.Status.VM.InstanceUUID == "", !p.DeletionTimestamp.IsZero(), poolspec.DatacenterOf(p, s.pool) != dc:
			continue
		case p.Status.VM.Phase == afv1.VMPhaseReleased, p.Status.VM.Phase == afv1.VMPhaseFailed:
			continue
		}
		if _, waiting := r.checks.fetched.Load(p.UID); waiting {
			continue
		}
		if at, ok := r.checks.readAt.Load(p.UID); ok && now.Sub(at.(time.Time)) < r.Opts.VMCheckInterval/2 {
			continue
		}
		out[p.UID] = p.Status.VM.InstanceUUID
	}
	return out
}

// runningMessage is VMHealthy's message for a VM found running where it belongs. ensureVM sets it when
// it created the VM, so the first look-up that finds nothing changed writes no status.
func runningMessage(name, folder string) string {
	return fmt.Sprintf("VM %s is powered on in folder %q", name, folder)
}

// neverJoined reports whether the VM is still discovery capacity: no Machine ever referenced it and
// its Agent (if any) is not reserved or bound.
func neverJoined(s *vmScope) bool {
	vm := s.va.Status.VM
	if vm.MachineName != "" || (s.agent != nil && (s.agent.IsBound() || s.agent.IsUnbinding())) {
		return false
	}
	return vm.Phase == afv1.VMPhaseProvisioning || vm.Phase == afv1.VMPhaseAvailable
}

// vmGone handles a VM that no longer exists in vCenter; false ends the pass (the VM failed).
func (r *Reconciler) vmGone(s *vmScope) bool {
	va := s.va
	if !neverJoined(s) {
		r.reportVM(s, false, afv1.ReasonVMNotFound, "Warning", fmt.Sprintf("VM %s (instance UUID %s) no longer exists in vCenter; it backs (or backed) Machine %q with Agent %s: "+
			"no replacement is created while a Machine references the Agent, the Machine's health check decides", va.Status.VM.Name, va.Status.VM.InstanceUUID, va.Status.VM.MachineName, va.Status.VM.AgentName))
		return true
	}
	r.reportVM(s, false, afv1.ReasonVMNotFound, "Warning", fmt.Sprintf("VM %s (instance UUID %s) no longer exists in vCenter; it had not joined a cluster: the pool replaces it",
		va.Status.VM.Name, va.Status.VM.InstanceUUID))
	r.setPhase(va, afv1.VMPhaseFailed, afv1.ReasonVMNotFound)
	return false
}

// vmPoweredOff powers a discovery VM on again and only reports any other.
func (r *Reconciler) vmPoweredOff(ctx context.Context, s *vmScope, vs vsphere.Client, info *vsphere.VMInfo) error {
	va := s.va
	if !neverJoined(s) {
		r.reportVM(s, false, afv1.ReasonVMPoweredOff, "Warning", fmt.Sprintf("VM %s was powered off outside the operator; it backs (or backed) Machine %q, so it is left off: power it on in vCenter, or let the Machine's health check replace it",
			info.Name, va.Status.VM.MachineName))
		return nil
	}
	if err := vs.PowerOnVM(ctx, poolspec.DatacenterOf(va, s.pool), va.Status.VM.InstanceUUID, poolspec.Ownership(va, s.pool)); err != nil {
		r.reportVM(s, false, afv1.ReasonVMPoweredOff, "Warning", fmt.Sprintf("VM %s was powered off outside the operator; powering it on again failed: %v", info.Name, err))
		return err
	}
	r.reportPoweredOn(s, fmt.Sprintf("VM %s was powered off outside the operator; it had not joined a cluster, so it was powered on again", info.Name))
	return nil
}

// reportVM sets VMHealthy and, when its reason changes and eventType is set, announces it once the
// status saying so is written (a stale pass that repeats the finding writes nothing new).
func (r *Reconciler) reportVM(s *vmScope, healthy bool, reason, eventType, msg string) {
	va := s.va
	prevReason := "" // copied: SetCondition changes the condition FindStatusCondition points at
	if prev := meta.FindStatusCondition(va.Status.Conditions, afv1.ConditionVMHealthy); prev != nil {
		prevReason = prev.Reason
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMHealthy, healthy, reason, msg, va.Generation)
	if eventType == "" || prevReason == reason {
		return
	}
	switch eventType {
	case "Warning":
		s.afterWrite = append(s.afterWrite, func() {
			r.Recorder.Eventf(va, nil, "Warning", reason, events.ActionObserveVM, "%s", msg)
		})
	default:
		s.afterWrite = append(s.afterWrite, func() {
			r.Recorder.Eventf(va, nil, "Normal", reason, events.ActionObserveVM, "%s", msg)
		})
	}
}

package shared

import (
	"fmt"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/eventbatch"
	"github.com/containeroo/agent-forge-operator/internal/iso"
)

// Event actions (events.k8s.io/v1 `action`): what the operator did, or tried to do, about the regarding
// object when it wrote the Event. The reason says what happened; several reasons share one action.
const (
	ActionPreflight      = "Preflight"          // pool refusals: credentials, vCenter, placement, privileges, selector, static IPs
	ActionClaimNodePool  = "ClaimNodePool"      // NodePoolAlreadyClaimed
	ActionPlaceVM        = "PlaceVM"            // CreationsFailing, InsufficientCapacity (failure domains)
	ActionRequestVM      = "RequestVM"          // VMRequested, CreateFailed (the pool creating VsphereAgents)
	ActionReplaceVM      = "ReplaceVM"          // OutdatedImage
	ActionReleaseVM      = "ReleaseVM"          // VMReleased, SurplusKept
	ActionCleanUpOrphan  = "CleanUpOrphan"      // OrphanFound, OrphanKept, OrphanDestroyed, OrphanCleanupFailed
	ActionDeletePool     = "DeletePool"         // DeletionPaused, PoolDeleted
	ActionLeaseAddresses = "LeaseAddresses"     // static IP leases: claimed, prepared, held, released, invalid
	ActionRefreshISO     = iso.ActionRefreshISO // ISOUploaded, ISOReused, ISORefreshFailed, ISOTempCleanedUp
	ActionPruneISO       = iso.ActionPruneISO   // ISOPruned, ISOPruneDeferred, ISOPruneFailed
	ActionCreateVM       = "CreateVM"           // VMCreated, VMAdopted, VMCreateFailed, refused creations, NotCreatedByPool
	ActionAwaitAgent     = "AwaitAgent"         // RegistrationTimeout
	ActionObserveVM      = "ObserveVM"          // VMNotFound, VMPoweredOff, VMPoweredOn, VMRenamed, VMMoved, VMIdentityChanged
	ActionUnbindAgent    = "UnbindAgent"        // UnbindingPendingUserAction
	ActionDestroyVM      = "DestroyVM"          // VMDestroyed, VMDestroyFailed, DestroyRefused, cleanup outcomes
	ActionDeleteAgent    = "DeleteAgent"        // AgentDeleted
	ActionEjectISO       = "EjectISO"           // every ISO ejection Event
	ActionStandDown      = "StandDown"          // OtherManagerRunning: another agent-forge manager is active
	ActionAdoptVM        = "AdoptVM"            // AdoptionSucceeded, AdoptionEvidenceMismatch, upstream VsphereAgents left alone
)

// noteLimit is the events.k8s.io/v1 API's limit on a note in bytes; a longer one is refused by the
// API server, and the recorder drops the whole Event without retrying.
const noteLimit = 1024

// Recorder writes the product's Events through the events.k8s.io/v1 API and is the one boundary every
// Event crosses: the note is redacted (RedactText) and cut to the API's limit here, so no call site
// can leak a URL token or lose an Event to a long error text. Rate limits stay with the callers
// (EventLimiter). A VsphereAgent's Event with no related object is related to its pool.
type Recorder struct {
	rec   events.EventRecorder
	batch *eventbatch.Batcher
}

// NewRecorder wraps rec (a controller-runtime manager's GetEventRecorder, or a fake in unit tests).
func NewRecorder(rec events.EventRecorder) *Recorder { return &Recorder{rec: rec} }

// Eventf records an Event about regarding (related may be nil); note is a fmt format for args.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	msg := note
	if len(args) > 0 {
		msg = fmt.Sprintf(note, args...)
	}
	if related == nil {
		if va, ok := regarding.(*afv1.VsphereAgent); ok && va.Spec.PoolRef.Name != "" {
			related = &corev1.ObjectReference{APIVersion: afv1.GroupVersion.String(), Kind: "VsphereAgentPool",
				Namespace: va.Namespace, Name: va.Spec.PoolRef.Name}
		}
	}
	// "%s" keeps a '%' in the redacted text from being read as a verb by the recorder's Sprintf.
	r.rec.Eventf(regarding, related, eventtype, reason, action, "%s", truncateNote(RedactText(msg)))
}

// Batched outcomes: one Event per pool and batch names every VM (see Batch).
const (
	SummaryVMCreated  = "created and powered on %d VM(s)"
	SummaryISOEjected = "ejected the discovery ISO from %d VM(s)"
)

// BatchEvents makes Batch gather its lines per pool and reason into one Event per batch, flushed once
// the batch stood still for idle or is max old on clk, split at the API's note limit. The returned
// Batcher is a manager Runnable: it flushes what it holds when the manager stops.
func (r *Recorder) BatchEvents(clk clock.WithTicker, idle, maxWait time.Duration) *eventbatch.Batcher {
	r.batch = eventbatch.New(eventbatch.Options{Clock: clk, Idle: idle, Max: maxWait, NoteLimit: noteLimit,
		Emit: func(ref *corev1.ObjectReference, reason, action, note string) {
			r.Eventf(ref, nil, corev1.EventTypeNormal, reason, action, "%s", note)
		}})
	return r.batch
}

// Batch records a routine per-VM outcome (VMCreated, ISOEjected) as a line of the pool's batch Event
// (type Normal, regarding the pool; summary is one of the Summary formats), as a ReplicaSet records
// one SuccessfulCreate for its Pods: an Event per VM is an API write per VM. The VM's own record is
// its conditions. Without BatchEvents (unit tests) the line is an Event of its own at once.
func (r *Recorder) Batch(pool *afv1.VsphereAgentPool, reason, action, summary, line string) {
	ref := corev1.ObjectReference{APIVersion: afv1.GroupVersion.String(), Kind: "VsphereAgentPool",
		Namespace: pool.Namespace, Name: pool.Name, UID: pool.UID}
	line = RedactText(line)
	if r.batch == nil {
		r.Eventf(&ref, nil, corev1.EventTypeNormal, reason, action, "%s", eventbatch.Notes(summary, []string{line}, noteLimit)[0])
		return
	}
	r.batch.Add(ref, reason, action, summary, line)
}

// truncateNote cuts msg to noteLimit bytes on a rune boundary, marking the cut.
func truncateNote(msg string) string {
	if len(msg) <= noteLimit {
		return msg
	}
	const mark = "..."
	cut := noteLimit - len(mark)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + mark
}

package events

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/redact"
)

// Event actions (events.k8s.io/v1 `action`): what the operator did, or tried to do, about the regarding
// object when it wrote the Event. The reason says what happened; several reasons share one action.
const (
	ActionPreflight      = "Preflight"          // pool refusals: credentials, vCenter, placement, privileges, selector, static IPs, references
	ActionClaimNodePool  = "ClaimNodePool"      // NodePoolAlreadyClaimed
	ActionPlaceVM        = "PlaceVM"            // CreationsFailing, InsufficientCapacity (failure domains)
	ActionRequestVM      = "RequestVM"          // CreateFailed (the pool creating VsphereAgents)
	ActionReplaceVM      = "ReplaceVM"          // OutdatedImage
	ActionReleaseVM      = "ReleaseVM"          // VMReleased, SurplusKept
	ActionCleanUpOrphan  = "CleanUpOrphan"      // OrphanFound, OrphanKept, OrphanDestroyed, OrphanCleanupFailed, OrphanAgentDeleted
	ActionDeletePool     = "DeletePool"         // DeletionPaused, PoolDeleted
	ActionLeaseAddresses = "LeaseAddresses"     // static IP leases: claimed, prepared, held, released, invalid
	ActionRefreshISO     = iso.ActionRefreshISO // ISOUploaded, ISOReused, ISORefreshFailed, ISOTempCleanedUp
	ActionPruneISO       = iso.ActionPruneISO   // ISOPruned, ISOPruneDeferred, ISOPruneFailed
	ActionCreateVM       = "CreateVM"           // VMCreated, VMAdopted, VMCreateFailed, refused creations, NotCreatedByPool
	ActionAwaitAgent     = "AwaitAgent"         // RegistrationTimeout
	ActionObserveVM      = "ObserveVM"          // VMNotFound, VMPoweredOff, VMPoweredOn, VMRenamed, VMMoved, VMIdentityChanged, InstallingPendingUserAction
	ActionResetVM        = "ResetVM"            // DiscoveryBootReset, DiscoveryBootResetFailed, DiscoveryBootRecovered, DiscoveryBootNotRecovered
	ActionUnbindAgent    = "UnbindAgent"        // UnbindingPendingUserAction
	ActionDestroyVM      = "DestroyVM"          // VMDestroyed, VMDestroyFailed, DestroyRefused, cleanup outcomes
	ActionDeleteAgent    = "DeleteAgent"        // AgentDeleted
	ActionEjectISO       = "EjectISO"           // every ISO ejection Event
	ActionStandDown      = "StandDown"          // OtherManagerRunning / ManagerLeasesUnreadable: another agent-forge manager is active or cannot be ruled out
	ActionAdoptVM        = "AdoptVM"            // AdoptionSucceeded, AdoptionEvidenceMismatch, upstream VsphereAgents left alone
	ActionAntiAffinity   = "AntiAffinity"       // ClusterModuleCreated/Adopted/Deleted/Failed, DRSDisabled, ClusterModulesUnsupported, NoComputeCluster, ClusterModuleJoinFailed
)

// noteLimit is the events.k8s.io/v1 API's limit on a note in bytes; a longer one is refused by the
// API server, and the recorder drops the whole Event without retrying.
const noteLimit = 1024

// Recorder writes the product's Events through the events.k8s.io/v1 API and is the one boundary every
// Event crosses: the note is redacted (redact.String) and cut to the API's limit here, so no call site
// can leak a URL token or lose an Event to a long error text. Rate limits stay with the callers
// (EventLimiter). A VsphereAgent's Event with no related object is related to its pool.
type Recorder struct {
	rec   kevents.EventRecorder
	batch *Batcher
}

// NewRecorder wraps rec (a controller-runtime manager's GetEventRecorder, or a fake in unit tests).
func NewRecorder(rec kevents.EventRecorder) *Recorder { return &Recorder{rec: rec} }

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
	r.rec.Eventf(regarding, related, eventtype, reason, action, "%s", truncateNote(redact.String(msg)))
}

// Batched outcomes: one Event per pool and batch names every VM (see Batch).
const (
	SummaryVMCreated = "created and powered on %d VM(s)"
)

// SummaryISOEjected is the ISOEjected batch's head: the ISO's path is named once per Event, not once per
// VM (a content-addressed path is about 90 bytes; per line it halved how many VMs a 1 kB note names).
func SummaryISOEjected(isoPath string) string {
	return "ejected the discovery ISO " + strings.ReplaceAll(isoPath, "%", "%%") + " from %d VM(s)"
}

// batchEventTimeout bounds one batch Event's create.
const batchEventTimeout = 10 * time.Second

// BatchEvents makes Batch gather its lines per pool and reason into one Event per batch, flushed once
// the batch stood still for idle or is max old on clk, split at the API's note limit. The returned
// Batcher is a manager Runnable: it flushes what it holds when the manager stops.
//
// The batch Events are created through w (each a POST with its own name), not through the recorder:
// the events.k8s.io recorder folds Events with the same object, reason and action within six minutes
// into a series, patching only the first Event's count, so every later batch and every split part
// would lose the VMs its note names.
func (r *Recorder) BatchEvents(w client.Writer, controller string, clk clock.WithTicker, idle, maxWait time.Duration, log logr.Logger) *Batcher {
	host, _ := os.Hostname()
	var seq atomic.Uint32
	r.batch = NewBatcher(BatcherOptions{Clock: clk, Idle: idle, Max: maxWait, NoteLimit: noteLimit,
		Emit: func(ref *corev1.ObjectReference, reason, action, note string) {
			ev := &eventsv1.Event{
				// Named as the recorder names Events (<object>.<time in hex>), with a sequence number for
				// the parts of a split batch written at the same instant.
				ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: fmt.Sprintf("%s.%x%04x", ref.Name, clk.Now().UnixNano(), seq.Add(1)%0x10000)},
				EventTime:  metav1.NewMicroTime(clk.Now()), Type: corev1.EventTypeNormal, Reason: reason, Action: action,
				Regarding: *ref, Note: truncateNote(redact.String(note)),
				ReportingController: controller, ReportingInstance: controller + "-" + host,
			}
			ctx, cancel := context.WithTimeout(context.Background(), batchEventTimeout)
			defer cancel()
			if err := w.Create(ctx, ev); err != nil {
				log.Error(err, "writing a batch Event failed; the VMs' conditions still record it", "namespace", ref.Namespace, "pool", ref.Name, "reason", reason)
			}
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
	line = redact.String(line)
	if r.batch == nil {
		r.Eventf(&ref, nil, corev1.EventTypeNormal, reason, action, "%s", Notes(summary, []string{line}, noteLimit)[0])
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

// Package crashpoint names the operator's crash points: the boundaries where it has changed the world
// (vCenter, the API server, the datastore) but not yet recorded it, or the reverse. A test seam
// (controllers.Options.CrashPoint) is called at each; a seam that blocks until its context ends
// simulates the operator dying there. Only a manager built with the tag crashpoints (test/chaos's) sets a
// seam, when a crash campaign names its socket in AGENT_FORGE_CRASHPOINT_SOCKET (cmd/app: the
// point is announced there and waits for a SIGKILL or an answer). The shipped binary has no code that
// sets one, so Hit is always a no-op there.
//
// The seam travels in the context (With), so the vSphere layer and the ISO cache reach it without a
// parameter on every call.
package crashpoint

import "context"

// The crash points, in the order a VM's life meets them. docs/reliability.md lists where each sits.
const (
	VsphereAgentCreated    = "vsphereagent-created"     // pool: VsphereAgent created, expectation and status not yet written
	VMCreateTaskStarted    = "vm-create-task-started"   // vSphere: CreateVM_Task accepted, not yet awaited
	VMCreated              = "vm-created"               // vSphere: VM exists (task done), not powered on, status not written
	VMPoweredOn            = "vm-powered-on"            // VM powered on and identity read, status not written
	AgentPatched           = "agent-patched"            // Agent labelled/approved, condition not written
	ISOTempUploaded        = "iso-temp-uploaded"        // ISO bytes under the temporary name, not yet moved
	ISOMoved               = "iso-moved"                // ISO moved to its final name, status.iso not written
	EjectionRecordWritten  = "ejection-record-written"  // status.isoEjection persisted, nothing started
	ReconfigureStarted     = "reconfigure-started"      // eject reconfigure started, its task not checkpointed
	QuestionIDCheckpointed = "question-id-checkpointed" // lock question ID persisted, not yet answered
	AnswerSent             = "answer-sent"              // lock question answered, not yet recorded
	VMDestroyed            = "vm-destroyed"             // VM destroyed (confirmed gone), its Agent not yet deleted
	AgentDeleted           = "agent-deleted"            // Agent deleted, the VsphereAgent's finalizer not yet removed
	PoolStatusWritten      = "pool-status-written"      // pool status persisted, the pass's result not yet returned
)

// All lists every crash point.
var All = []string{
	VsphereAgentCreated, VMCreateTaskStarted, VMCreated, VMPoweredOn, AgentPatched, ISOTempUploaded, ISOMoved,
	EjectionRecordWritten, ReconfigureStarted, QuestionIDCheckpointed, AnswerSent, VMDestroyed, AgentDeleted,
	PoolStatusWritten,
}

// Func is a seam bound to one object: it is called with the point reached.
type Func func(ctx context.Context, point string)

type key struct{}

// With returns ctx carrying f (nil f: ctx unchanged).
func With(ctx context.Context, f Func) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, f)
}

// Hit calls the seam ctx carries, if any, and returns ctx.Err(): after a simulated crash the caller
// returns at once, touching nothing else.
func Hit(ctx context.Context, point string) error {
	f, _ := ctx.Value(key{}).(Func)
	if f == nil {
		return nil
	}
	f(ctx, point)
	return ctx.Err()
}

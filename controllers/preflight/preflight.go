package preflight

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Checker runs a pool's preflight. Set Reader, Recorder, Clock and Events; it remembers each pool's
// last placement and privilege verdicts itself.
type Checker struct {
	// Reader reads the NodePool (the manager's cached client).
	Reader client.Reader
	// Recorder records the refusal Events on the pool.
	Recorder *events.Recorder
	// Clock times the rechecks (Options.Clock).
	Clock clock.PassiveClock
	// Events rate-limits the refusal Events (shared with the pool's other refusals).
	Events *events.EventLimiter

	placement placementChecks
}

// Input is what a pool pass hands the preflight.
type Input struct {
	Pool *afv1.VsphereAgentPool
	// VS is the pool's vSphere client (nil: not connected; only the selector is checked).
	VS vsphere.Client
	// User is the vCenter account the credentials name (privilege verdicts are kept per account).
	User string
}

// Result is the preflight's verdict: Block is the reason of the check that failed ("" when creation
// may go ahead), RequeueAfter when to check again (0: no need).
type Result struct {
	Block        string
	RequeueAfter time.Duration
}

// Run checks, in order, the spec values this operator cannot honour as written, the template against
// assisted-service's default hardware minimum (a warning, HardwareSufficient, never a block), the NodePool's
// agentLabelSelector against the labels the pool's Agents get, that every object named in spec.vsphere
// resolves in vCenter, and that the credentials hold the privileges the operator uses there. Each
// check sets its pool condition (SpecHonoured, AgentLabelsMatch, PlacementValid,
// PrivilegesSufficient) and a rate-limited Warning Event on a refusal. An error is a read that failed
// (the pass is retried).
func (c *Checker) Run(ctx context.Context, in Input) (Result, error) {
	s := &pass{pool: in.Pool, vs: in.VS, user: in.User}
	c.checkSpec(s)
	c.checkHardware(s)
	if err := c.checkSelector(ctx, s); err != nil {
		return s.result(), err
	}
	err := c.checkPlacement(ctx, s)
	return s.result(), err
}

// pass is one Run's view.
type pass struct {
	pool *afv1.VsphereAgentPool
	vs   vsphere.Client
	user string
	// preflightBlock is the reason of the last check that failed.
	preflightBlock string
	requeue        time.Duration
}

func (s *pass) requeueAfter(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

func (s *pass) result() Result { return Result{Block: s.preflightBlock, RequeueAfter: s.requeue} }

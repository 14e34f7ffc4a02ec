package ejection

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Ejector runs the ISO ejection of the VsphereAgent controller's VMs. The zero value with Reader,
// Recorder, Clock and Guard set is ready; it keeps, per VsphereAgent, a reconfigure task seen once and
// not yet written into the ejection record.
type Ejector struct {
	// Reader reads the VM's Machine (the manager's cached client).
	Reader client.Reader
	// Recorder records the ejection's Events on the VsphereAgent.
	Recorder *events.Recorder
	// Clock times backoffs and the deletion grace (Options.Clock).
	Clock clock.PassiveClock
	// Guard refuses ejections while the served CRD would prune the recovery record.
	Guard *Guard

	// tasks remembers, by VsphereAgent UID, a reconfigure seen once and not yet recorded (stepEjection).
	tasks sync.Map
	// media remembers, by VsphereAgent UID, the CD-ROMs its VM had when created (Created, arm).
	media sync.Map
}

// Pass is what one VsphereAgent pass hands the ejection: the objects it read and its hooks. The
// ejection changes VA's status (its ISOEjected condition and status.isoEjection record) in place; the
// pass writes it.
type Pass struct {
	// VA is the VsphereAgent; Pool its pool (nil when gone, on deletion only); Agent its registered
	// Agent (nil: none yet).
	VA    *afv1.VsphereAgent
	Pool  *afv1.VsphereAgentPool
	Agent *agents.Agent
	// Client returns the pass's vSphere client (logged in on first use).
	Client func(ctx context.Context) (vsphere.Client, error)
	// RequeueAfter asks for the next pass within d (nil: no requeue).
	RequeueAfter func(d time.Duration)
	// AfterWrite runs f once the pass's status is persisted (nil: at once).
	AfterWrite func(f func())
}

func (p *Pass) requeueAfter(d time.Duration) {
	if p.RequeueAfter != nil {
		p.RequeueAfter(d)
	}
}

func (p *Pass) afterWrite(f func()) {
	if p.AfterWrite == nil {
		f()
		return
	}
	p.AfterWrite(f)
}

package pool

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// TestSnapshotCopiesFacts checks the pool's gatherer: what the pass observed lands in the planner's
// Snapshot as it was seen, and the planner names the reasons the VsphereAgent controller shows too.
func TestSnapshotCopiesFacts(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	r := &Reconciler{Opts: config.Options{Services: config.Services{Clock: clk}, Settings: config.Settings{RegistrationFailureThreshold: 3, FailedRetention: time.Hour}},
		expectations: newExpectations(clk), debounce: newDebouncer(clk, time.Second, 10*time.Second)}
	pool := &afv1.VsphereAgentPool{}
	pool.Namespace, pool.Name = "ns", "pool"
	pool.Spec.CleanupPolicy = afv1.CleanupPolicyRetain
	maxVMs := int32(7)
	pool.Spec.Limits = &afv1.LimitsSpec{MaxVMs: &maxVMs}
	created := listedVA("with-vm", afv1.VMPhaseAvailable)
	created.Spec.FailureDomain = "z1"
	created.Status.VM.InstanceUUID = "uuid-1"
	created.Status.VM.ISOPath = "[ds] iso/aaaa.iso"
	created.Status.StaticIP = &afv1.StaticIPStatus{Lease: "pool-ip-0"}
	waiting := listedVA("without-vm", afv1.VMPhasePending)
	waiting.Spec.FailureDomain = "z9"
	s := &poolScope{pool: pool, waiting: 4, preflightBlock: "InvalidPlacement",
		vas: []afv1.VsphereAgent{created, waiting},
		matching: []agents.Agent{
			{Name: "foreign", Labels: map[string]string{}},
			{Name: "ours", Labels: map[string]string{afv1.LabelVsphereAgent: "with-vm"}},
		},
		ourAgents: sets.New("ours"),
		domains:   []domainView{{Domain: planner.Domain{Name: "z1", VMs: 1, Failing: true, Skipped: true}}},
	}
	r.debounce.remember("ns/pool", &planner.Burst{Value: 2, First: now.Add(-time.Second), LastChange: now})

	snap := r.snapshot(s)
	if snap.Waiting != 4 || !snap.Now.Equal(now) || snap.RemoveSurplus || snap.MaxVMs == nil || *snap.MaxVMs != 7 ||
		snap.MaxConcurrentProvisioning == nil || *snap.MaxConcurrentProvisioning != poolspec.DefaultMaxConcurrentProvisioning {
		t.Errorf("demand, policy or limits not copied: %+v", snap)
	}
	if snap.Blocks != (planner.Blocks{Preflight: "InvalidPlacement", NoSession: true, NoISO: true}) {
		t.Errorf("blocks %+v", snap.Blocks)
	}
	if len(snap.VMs) != 2 || snap.VMs[0].Name != "with-vm" || snap.VMs[0].Domain != "z1" || !snap.VMs[0].HasVM ||
		snap.VMs[0].Image.SHA256 != "aaaa" || !snap.VMs[0].StaticIPLease || snap.VMs[1].HasVM || snap.VMs[1].Domain != "z9" {
		t.Errorf("VMs %+v", snap.VMs)
	}
	if len(snap.Domains) != 1 || !snap.Domains[0].Failing || snap.Domains[0].VMs != 1 {
		t.Errorf("domains %+v", snap.Domains)
	}
	if snap.Burst == nil || snap.Burst.Value != 2 || snap.Debounce != (planner.Debounce{Idle: time.Second, Max: 10 * time.Second}) {
		t.Errorf("burst window %+v %+v", snap.Debounce, snap.Burst)
	}
	if snap.RegistrationFailureThreshold != 3 || snap.FailedRetention != time.Hour || !snap.ReplaceOutdated || snap.CurrentImage != (planner.Image{}) {
		t.Errorf("breaker, retention or images %+v", snap)
	}
	// The suitability of Agents is the agents package's reading; an unlabelled Agent without inventory
	// is not suitable, so none is foreign supply here.
	if snap.ForeignAvailable != 0 {
		t.Errorf("foreign Agents %d", snap.ForeignAvailable)
	}

}

func listedVA(name string, phase afv1.VMPhase) afv1.VsphereAgent {
	v := afv1.VsphereAgent{}
	v.Name, v.CreationTimestamp = name, metav1.Now()
	v.Status.VM.Phase = phase
	return v
}

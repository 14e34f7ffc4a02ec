package vsphereagent

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/testenv"
	"github.com/containeroo/agent-forge-operator/test/vspherefake"
)

// The VsphereAgent lifecycle as stepped-clock table tests: Reconciler.Reconcile is called
// directly (no controller runs; a manager only serves the indexed cache) against a real API server, with
// the in-memory vSphere client injected through Options.Sessions and a fake clock stepped between passes.
// Each step asserts phase, reason, conditions (and that every condition time is the injected clock's
// time), the Events of that pass and the vSphere calls so far. The Ginkgo scenarios on the simulator
// remain the integration layer.

const lifecycleRegistrationTimeout = 10 * time.Minute

// lcStep is one pass: advance the clock, change the world, reconcile, check.
type lcStep struct {
	name    string
	advance time.Duration
	world   func(t *testing.T, h *lcHarness, row *lcRow)
	// want* are the VsphereAgent's state after the pass.
	wantPhase  afv1.VMPhase
	wantReason string
	// wantConditions maps a condition type to "Status/Reason".
	wantConditions map[string]string
	// wantTransitioned lists conditions (and "Phase") whose time must be this pass's clock time.
	wantTransitioned []string
	// wantEvents are "Type Reason" of the Events this pass recorded (exactly, in order).
	wantEvents []string
	// wantCalls are the fake vCenter's call counts after the pass (only the methods named).
	wantCalls map[vspherefake.Method]int
	// wantRequeueAfter, when set, is the pass's requeue.
	wantRequeueAfter time.Duration
	wantErr          bool
}

type lcRow struct {
	name  string
	setup func(t *testing.T, h *lcHarness, row *lcRow)
	steps []lcStep

	// Filled in by the harness.
	ns    string
	pool  *afv1.VsphereAgentPool
	va    *afv1.VsphereAgent
	fake  *vspherefake.Fake
	clock *clocktesting.FakeClock
	rec   *kevents.FakeRecorder
	r     *Reconciler
}

type lcHarness struct {
	ctx    context.Context
	admin  client.Client
	cached client.Client
	reader client.Reader
	n      int // rows so far (each gets its own namespace)
}

func TestVsphereAgentLifecycleSteps(t *testing.T) {
	h := startLifecycleHarness(t)
	vmCreated := "True/" + afv1.ReasonVMCreated
	rows := []lcRow{
		{
			name: "create, register, bind",
			steps: []lcStep{
				{name: "VM created and powered on: Provisioning", advance: time.Minute,
					wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration,
					wantConditions: map[string]string{
						afv1.ConditionVMCreated: vmCreated, afv1.ConditionAgentRegistered: "False/" + afv1.ReasonAwaitingRegistration,
						afv1.ConditionReady: "False/" + afv1.ReasonAwaitingRegistration,
						// What the first look-up would find, written with the creation (no write of its own).
						afv1.ConditionVMHealthy: "True/" + afv1.ReasonVMRunning,
					},
					wantTransitioned: []string{"Phase", afv1.ConditionVMCreated, afv1.ConditionAgentRegistered, afv1.ConditionReady, afv1.ConditionVMHealthy},
					wantEvents:       []string{"Normal VMCreated"},
					wantCalls:        map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 0},
					wantRequeueAfter: lifecycleRegistrationTimeout},
				{name: "Agent registers: prepared, the Available write held for the status batch interval", advance: 3 * time.Minute, world: registerAgent,
					wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration,
					wantConditions: map[string]string{
						afv1.ConditionVMCreated: vmCreated, afv1.ConditionAgentRegistered: "False/" + afv1.ReasonAwaitingRegistration,
						afv1.ConditionReady: "False/" + afv1.ReasonAwaitingRegistration,
					},
					wantRequeueAfter: 2 * time.Second},
				{name: "one second later: still held", advance: time.Second,
					wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration, wantRequeueAfter: time.Second},
				{name: "it stood for the interval unbound (a standby VM): Available", advance: time.Second,
					wantPhase: afv1.VMPhaseAvailable, wantReason: afv1.ReasonAgentPrepared,
					wantConditions: map[string]string{
						afv1.ConditionVMCreated: vmCreated, afv1.ConditionAgentRegistered: "True/" + afv1.ReasonAgentRegistered,
						afv1.ConditionAgentPrepared: "True/" + afv1.ReasonAgentPrepared, afv1.ConditionReady: "True/" + string(afv1.VMPhaseAvailable),
					},
					wantTransitioned: []string{"Phase", afv1.ConditionAgentRegistered, afv1.ConditionAgentPrepared, afv1.ConditionReady},
					wantEvents:       nil, // registration and preparation are conditions, not Events (one API write per VM each)
					wantCalls:        map[vspherefake.Method]int{vspherefake.CreateVM: 1}},
				{name: "the provider reserves the Agent: Bound", advance: time.Minute, world: bindAgent,
					wantPhase: afv1.VMPhaseBound, wantReason: afv1.ReasonAgentBound,
					wantConditions: map[string]string{
						afv1.ConditionAgentRegistered: "True/" + afv1.ReasonAgentRegistered, afv1.ConditionReady: "True/" + string(afv1.VMPhaseBound),
					},
					wantTransitioned: []string{"Phase"},
					wantCalls:        map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 0}},
				{name: "registration timeout no longer applies once registered", advance: 2 * lifecycleRegistrationTimeout,
					wantPhase: afv1.VMPhaseBound, wantReason: afv1.ReasonAgentBound,
					wantCalls: map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 0}},
			},
		},
		{
			name: "bound, then unbound after installation and not reclaimed: Released, UnbindingPendingUserAction",
			steps: []lcStep{
				{name: "VM created", advance: time.Minute, wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration,
					wantEvents: []string{"Normal VMCreated"}, wantRequeueAfter: lifecycleRegistrationTimeout},
				{name: "Agent registers: Available held", advance: time.Minute, world: registerAgent, wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration},
				{name: "the provider reserves the Agent within the interval: Provisioning -> Bound in one write", advance: time.Second, world: bindAgent,
					wantPhase: afv1.VMPhaseBound, wantReason: afv1.ReasonAgentBound,
					wantConditions: map[string]string{
						afv1.ConditionAgentRegistered: "True/" + afv1.ReasonAgentRegistered, afv1.ConditionAgentPrepared: "True/" + afv1.ReasonAgentPrepared,
						afv1.ConditionReady: "True/" + string(afv1.VMPhaseBound),
					},
					wantTransitioned: []string{"Phase", afv1.ConditionAgentRegistered, afv1.ConditionAgentPrepared, afv1.ConditionReady}},
				{name: "unbound on scale-down, the host awaits a reboot into discovery: Released, one Warning Event", advance: time.Hour, world: unbindPendingUserAction,
					wantPhase: afv1.VMPhaseReleased, wantReason: afv1.ReasonUnbindingPendingUserAction,
					wantConditions: map[string]string{
						afv1.ConditionAgentRegistered: "True/" + afv1.ReasonAgentRegistered, afv1.ConditionReady: "False/" + afv1.ReasonUnbindingPendingUserAction,
					},
					wantTransitioned: []string{"Phase", afv1.ConditionReady},
					wantEvents:       []string{"Warning " + afv1.ReasonUnbindingPendingUserAction},
					wantCalls:        map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 0}},
				{name: "later passes: no second Event; the VsphereAgent never destroys it itself (the pool does, behind its Machine checks)", advance: time.Hour,
					wantPhase: afv1.VMPhaseReleased, wantReason: afv1.ReasonUnbindingPendingUserAction,
					wantConditions: map[string]string{afv1.ConditionReady: "False/" + afv1.ReasonUnbindingPendingUserAction},
					wantCalls:      map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 0}},
			},
		},
		{
			name: "AgentMachines of the pool wait: the Available write held up to the status batch maximum",
			setup: func(t *testing.T, h *lcHarness, row *lcRow) {
				row.pool.Status.WaitingAgentMachines = 1
				if err := h.admin.Status().Update(h.ctx, row.pool); err != nil {
					t.Fatal(err)
				}
				h.waitForCache(t, row.pool)
			},
			steps: []lcStep{
				{name: "VM created", advance: time.Minute, wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration,
					wantEvents: []string{"Normal VMCreated"}, wantRequeueAfter: lifecycleRegistrationTimeout},
				{name: "Agent registers: held for StatusBatchMax, the provider is about to bind", advance: time.Minute, world: registerAgent,
					wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration, wantRequeueAfter: 30 * time.Second},
				{name: "29 s later: still held", advance: 29 * time.Second,
					wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration, wantRequeueAfter: time.Second},
				{name: "nobody bound it within the maximum: Available", advance: time.Second,
					wantPhase: afv1.VMPhaseAvailable, wantReason: afv1.ReasonAgentPrepared,
					wantConditions:   map[string]string{afv1.ConditionAgentPrepared: "True/" + afv1.ReasonAgentPrepared},
					wantTransitioned: []string{"Phase", afv1.ConditionAgentRegistered, afv1.ConditionAgentPrepared, afv1.ConditionReady}},
			},
		},
		{
			name: "no Agent registers: Failed at exactly registrationTimeout after the VM's creation",
			steps: []lcStep{
				{name: "VM created", advance: time.Minute, wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration,
					wantEvents: []string{"Normal VMCreated"}, wantRequeueAfter: lifecycleRegistrationTimeout},
				{name: "one second before the timeout: still waiting", advance: lifecycleRegistrationTimeout - time.Second,
					wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration, wantRequeueAfter: time.Second,
					wantCalls: map[vspherefake.Method]int{vspherefake.DestroyVM: 0}},
				{name: "at the timeout: VM destroyed, Failed", advance: time.Second,
					wantPhase: afv1.VMPhaseFailed, wantReason: afv1.ReasonRegistrationTimeout,
					wantConditions: map[string]string{
						afv1.ConditionVMCreated: vmCreated, afv1.ConditionAgentRegistered: "False/" + afv1.ReasonRegistrationTimeout,
						afv1.ConditionReady: "False/" + afv1.ReasonRegistrationTimeout,
					},
					wantTransitioned: []string{"Phase"},
					wantEvents:       []string{"Warning " + afv1.ReasonRegistrationTimeout},
					wantCalls:        map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 1}},
				{name: "Failed is final: nothing more is done", advance: time.Hour,
					wantPhase: afv1.VMPhaseFailed, wantReason: afv1.ReasonRegistrationTimeout,
					wantCalls: map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 1}},
			},
		},
		{
			name: "transient create errors: retried until registrationTimeout after the VsphereAgent's creation, then Failed",
			setup: func(_ *testing.T, _ *lcHarness, row *lcRow) {
				row.fake.FailAlways(vspherefake.CreateVM, vspherefake.Transient("CreateVM"))
			},
			steps: []lcStep{
				{name: "first attempt fails: Pending, retried", advance: time.Minute, wantErr: true,
					wantPhase: afv1.VMPhasePending, wantReason: afv1.ReasonVMCreateFailed,
					wantConditions: map[string]string{
						afv1.ConditionVMCreated: "False/" + string(vsphere.ClassTransient), afv1.ConditionReady: "False/" + afv1.ReasonVMCreateFailed,
					},
					wantTransitioned: []string{"Phase", afv1.ConditionVMCreated, afv1.ConditionReady},
					wantEvents:       []string{"Warning " + afv1.ReasonVMCreateFailed},
					wantCalls:        map[vspherefake.Method]int{vspherefake.CreateVM: 1}},
				{name: "one second before the timeout: still retried", advance: lifecycleRegistrationTimeout - time.Minute - time.Second, wantErr: true,
					wantPhase: afv1.VMPhasePending, wantReason: afv1.ReasonVMCreateFailed,
					wantEvents: []string{"Warning " + afv1.ReasonVMCreateFailed},
					wantCalls:  map[vspherefake.Method]int{vspherefake.CreateVM: 2, vspherefake.DestroyVM: 0}},
				{name: "at the timeout: a VM a timed-out task may have left is destroyed, Failed", advance: time.Second,
					wantPhase: afv1.VMPhaseFailed, wantReason: afv1.ReasonRegistrationTimeout,
					wantConditions: map[string]string{
						afv1.ConditionVMCreated: "False/" + afv1.ReasonRegistrationTimeout, afv1.ConditionAgentRegistered: "False/" + afv1.ReasonRegistrationTimeout,
						afv1.ConditionReady: "False/" + afv1.ReasonRegistrationTimeout,
					},
					wantTransitioned: []string{"Phase", afv1.ConditionAgentRegistered},
					wantEvents:       []string{"Warning " + afv1.ReasonRegistrationTimeout},
					wantCalls:        map[vspherefake.Method]int{vspherefake.CreateVM: 3, vspherefake.DestroyVM: 1}},
			},
		},
		{
			name: "a transient create error, then success",
			setup: func(_ *testing.T, _ *lcHarness, row *lcRow) {
				row.fake.FailNext(vspherefake.CreateVM, vspherefake.Transient("CreateVM"))
			},
			steps: []lcStep{
				{name: "fails: Pending", advance: time.Minute, wantErr: true, wantPhase: afv1.VMPhasePending, wantReason: afv1.ReasonVMCreateFailed,
					wantEvents: []string{"Warning " + afv1.ReasonVMCreateFailed}, wantCalls: map[vspherefake.Method]int{vspherefake.CreateVM: 1}},
				{name: "retried: Provisioning", advance: 30 * time.Second, wantPhase: afv1.VMPhaseProvisioning, wantReason: afv1.ReasonAwaitingRegistration,
					wantConditions:   map[string]string{afv1.ConditionVMCreated: vmCreated},
					wantTransitioned: []string{"Phase", afv1.ConditionVMCreated},
					wantEvents:       []string{"Normal VMCreated"}, wantCalls: map[vspherefake.Method]int{vspherefake.CreateVM: 2}},
			},
		},
		{
			name: "a foreign VM holds the name: DuplicateName, Failed at once, the name never retried",
			setup: func(_ *testing.T, _ *lcHarness, row *lcRow) {
				row.fake.AddVM(vspherefake.VM{Name: row.va.Name, Datacenter: row.pool.Spec.VSphere.Datacenter, Folder: row.pool.Spec.VSphere.Folder})
			},
			steps: []lcStep{
				{name: "refused: Failed", advance: time.Minute, wantPhase: afv1.VMPhaseFailed, wantReason: afv1.ReasonDuplicateName,
					wantConditions: map[string]string{
						afv1.ConditionVMCreated: "False/" + afv1.ReasonDuplicateName, afv1.ConditionReady: "False/" + afv1.ReasonDuplicateName,
					},
					wantTransitioned: []string{"Phase", afv1.ConditionVMCreated, afv1.ConditionReady},
					wantEvents:       []string{"Warning " + afv1.ReasonDuplicateName},
					wantCalls:        map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 0}},
				{name: "later passes do nothing", advance: time.Hour, wantPhase: afv1.VMPhaseFailed, wantReason: afv1.ReasonDuplicateName,
					wantCalls: map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 0}},
			},
		},
		{
			name: "a VM with our instance UUID but no ownership marker: refused, Failed, never touched",
			setup: func(_ *testing.T, _ *lcHarness, row *lcRow) {
				row.fake.AddVM(vspherefake.VM{Name: "someone-elses", Datacenter: row.pool.Spec.VSphere.Datacenter, InstanceUUID: string(row.va.UID)})
			},
			steps: []lcStep{
				{name: "refused: Failed", advance: time.Minute, wantPhase: afv1.VMPhaseFailed, wantReason: afv1.ReasonOwnershipMismatch,
					wantConditions: map[string]string{
						afv1.ConditionVMCreated: "False/" + afv1.ReasonOwnershipMismatch, afv1.ConditionReady: "False/" + afv1.ReasonOwnershipMismatch,
					},
					wantTransitioned: []string{"Phase", afv1.ConditionVMCreated, afv1.ConditionReady},
					wantEvents:       []string{"Warning " + afv1.ReasonOwnershipMismatch},
					wantCalls:        map[vspherefake.Method]int{vspherefake.CreateVM: 1, vspherefake.DestroyVM: 0}},
			},
		},
	}
	for i := range rows {
		row := &rows[i]
		t.Run(row.name, func(t *testing.T) {
			h.newRow(t, row)
			if row.setup != nil {
				row.setup(t, h, row)
			}
			var passTimes []time.Time
			for _, st := range row.steps {
				row.clock.Step(st.advance)
				if st.world != nil {
					st.world(t, h, row)
				}
				now := row.clock.Now()
				passTimes = append(passTimes, now)
				h.waitForCache(t, row.va)
				res, err := row.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(row.va)})
				if (err != nil) != st.wantErr {
					t.Fatalf("%s: Reconcile error %v, want error %t", st.name, err, st.wantErr)
				}
				if st.wantRequeueAfter != 0 && res.RequeueAfter != st.wantRequeueAfter {
					t.Errorf("%s: requeue after %s, want %s", st.name, res.RequeueAfter, st.wantRequeueAfter)
				}
				va := &afv1.VsphereAgent{}
				if err := h.reader.Get(h.ctx, client.ObjectKeyFromObject(row.va), va); err != nil {
					t.Fatal(err)
				}
				checkLifecycleStep(t, st, row, va, now, passTimes)
				row.va = va
			}
		})
	}
}

func checkLifecycleStep(t *testing.T, st lcStep, row *lcRow, va *afv1.VsphereAgent, now time.Time, passTimes []time.Time) {
	t.Helper()
	if va.Status.VM.Phase != st.wantPhase || va.Status.VM.Reason != st.wantReason {
		t.Errorf("%s: phase %s/%s, want %s/%s", st.name, va.Status.VM.Phase, va.Status.VM.Reason, st.wantPhase, st.wantReason)
	}
	for typ, want := range st.wantConditions {
		c := conditions.FindCondition(va.Status.Conditions, typ)
		if c == nil {
			t.Errorf("%s: no condition %s", st.name, typ)
			continue
		}
		if got := string(c.Status) + "/" + c.Reason; got != want {
			t.Errorf("%s: condition %s = %s (%s), want %s", st.name, typ, got, c.Message, want)
		}
	}
	// Every time written comes from the injected clock: each condition's and the phase's time is the
	// time of one of the passes so far (the wall clock is minutes away).
	onPass := func(tm time.Time) bool {
		for _, p := range passTimes {
			if tm.Equal(p.Truncate(time.Second)) {
				return true
			}
		}
		return false
	}
	for _, c := range va.Status.Conditions {
		if !onPass(c.LastTransitionTime.Time) {
			t.Errorf("%s: condition %s lastTransitionTime %s is no pass's clock time %v", st.name, c.Type, c.LastTransitionTime.Time, passTimes)
		}
	}
	if lt := va.Status.VM.LastTransitionTime; lt != nil && !onPass(lt.Time) {
		t.Errorf("%s: phase lastTransitionTime %s is no pass's clock time", st.name, lt.Time)
	}
	for _, typ := range st.wantTransitioned {
		var at time.Time
		if typ == "Phase" {
			at = va.Status.VM.LastTransitionTime.Time
		} else if c := conditions.FindCondition(va.Status.Conditions, typ); c != nil {
			at = c.LastTransitionTime.Time
		}
		if !at.Equal(now.Truncate(time.Second)) {
			t.Errorf("%s: %s changed at %s, want this pass's clock time %s", st.name, typ, at, now)
		}
	}
	var events []string
	for len(row.rec.Events) > 0 {
		e := <-row.rec.Events
		f := strings.SplitN(e, " ", 3)
		events = append(events, f[0]+" "+f[1])
		if strings.Contains(e, "s3cr3t") {
			t.Errorf("%s: Event carries a secret: %s", st.name, e)
		}
	}
	if strings.Join(events, ",") != strings.Join(st.wantEvents, ",") {
		t.Errorf("%s: Events %v, want %v", st.name, events, st.wantEvents)
	}
	for m, want := range st.wantCalls {
		if got := row.fake.Calls(m); got != want {
			t.Errorf("%s: %s called %d time(s), want %d", st.name, m, got, want)
		}
	}
}

// startLifecycleHarness starts an API server with the CRDs and a manager that only serves the cache
// with the controllers' field indexes (no controller is registered, so nothing reconciles by itself).
func startLifecycleHarness(t *testing.T) *lcHarness {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0", Client: config.ClientOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.SetupIndexes(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	admin, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &lcHarness{ctx: ctx, admin: admin, cached: mgr.GetClient(), reader: mgr.GetAPIReader()}
}

// newRow gives the row its own namespace, pool (ISO cached), credentials Secret, VsphereAgent created
// by the pool, fake vCenter, clock and reconciler. The clock starts at the VsphereAgent's creation.
func (h *lcHarness) newRow(t *testing.T, row *lcRow) {
	t.Helper()
	h.n++
	row.ns = fmt.Sprintf("lc%d", h.n)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(world.CreateNamespace(h.ctx, h.admin, row.ns))
	vc := &url.URL{Host: "vcenter.example", User: url.UserPassword("operator", "s3cr3t")}
	must(world.CreateCredentialsSecret(h.ctx, h.admin, types.NamespacedName{Namespace: row.ns, Name: "vsphere"}, vc, true))
	pool := &afv1.VsphereAgentPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: row.ns, Name: "workers"},
		Spec: afv1.VsphereAgentPoolSpec{
			HostedClusterRef: afv1.HostedClusterReference{Name: "hc"}, NodePoolRef: afv1.NodePoolReference{Name: "np"},
			InfraEnvRef: afv1.InfraEnvReference{Name: "ie"}, ControlPlaneNamespace: row.ns + "-hc",
			VSphere: afv1.VSphereSpec{
				CredentialsSecretRef: afv1.SecretReference{Name: "vsphere"}, Datacenter: "DC0", DatastoreCluster: "ds",
				ISODatastore: "ds", ResourcePool: "pool", Network: "net", Folder: "agent-forge/" + row.ns,
			},
			Template:            afv1.VMTemplateSpec{NumCPUs: 2, MemoryMiB: 4096, DiskGiB: 20},
			Agent:               afv1.AgentBindingSpec{Labels: map[string]afv1.LabelValue{"example.com/pool": afv1.LabelValue(row.ns)}},
			RegistrationTimeout: &metav1.Duration{Duration: lifecycleRegistrationTimeout},
		},
	}
	must(h.admin.Create(h.ctx, pool))
	pool.Status.ISO = &afv1.ISOStatus{Path: "[ds] agent-forge/iso/discovery.iso"}
	must(h.admin.Status().Update(h.ctx, pool))
	va := &afv1.VsphereAgent{ObjectMeta: metav1.ObjectMeta{Namespace: row.ns, Name: "hc-worker-" + row.ns, Labels: map[string]string{afv1.LabelPool: pool.Name}}}
	va.Spec.PoolRef.Name = pool.Name
	must(controllerutil.SetControllerReference(pool, va, h.admin.Scheme()))
	must(h.admin.Create(h.ctx, va))
	row.pool, row.va = pool, va

	row.fake = vspherefake.New(nil)
	row.clock = clocktesting.NewFakeClock(va.CreationTimestamp.Time)
	row.rec = kevents.NewFakeRecorder(100)
	// VM look-ups (observeVM) are paced past every row's horizon: these rows follow one lifecycle; what
	// someone else does to a VM is specified against the simulator (controllers/external_interruptions_test.go).
	opts := config.Options{Services: config.Services{Clock: row.clock, BatchClock: row.clock, Sessions: vspherefake.NewSessions(row.fake)}, Settings: config.Settings{VMCheckInterval: 24 * time.Hour}}
	opts.Defaults()
	row.r = &Reconciler{Client: h.cached, APIReader: h.reader, Recorder: events.NewRecorder(row.rec), Opts: opts}
	h.waitForCache(t, pool)
}

// waitForCache waits until the cache serves obj at the version the API server has now (a pass reads
// its objects from the cache, as in production; the wait is for the watch, not for the operator).
func (h *lcHarness) waitForCache(t *testing.T, obj client.Object) {
	t.Helper()
	live := obj.DeepCopyObject().(client.Object)
	if err := h.reader.Get(h.ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		t.Fatal(err)
	}
	cached := obj.DeepCopyObject().(client.Object)
	for i := 0; i < 2000; i++ {
		if err := h.cached.Get(h.ctx, client.ObjectKeyFromObject(obj), cached); err == nil && cached.GetResourceVersion() == live.GetResourceVersion() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the cache never caught up with %s %s", obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj))
}

// registerAgent plays assisted-service: the VM boots the discovery ISO and registers an Agent reporting
// its NIC MAC and its BIOS UUID as serial number.
func registerAgent(t *testing.T, h *lcHarness, row *lcRow) {
	t.Helper()
	vm, ok := row.fake.VM(string(row.va.UID))
	if !ok {
		t.Fatal("no VM to register")
	}
	a := agents.New(agents.AgentGVK)
	a.SetNamespace(row.ns)
	a.SetName("agent-" + row.ns)
	if err := h.admin.Create(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	status := map[string]any{
		"inventory": map[string]any{
			"interfaces":   []any{map[string]any{"macAddress": vm.MACAddress, "flags": []any{"up"}, "ipV4Addresses": []any{}, "ipV6Addresses": []any{}}},
			"systemVendor": map[string]any{"serialNumber": world.SerialFromBIOSUUID(vm.BIOSUUID)},
		},
		"conditions": []any{map[string]any{"type": "Bound", "status": "False", "reason": "Unbound", "lastTransitionTime": row.clock.Now().UTC().Format(time.RFC3339)}},
	}
	if err := unstructured.SetNestedField(a.Object, status, "status"); err != nil {
		t.Fatal(err)
	}
	if err := h.admin.Status().Update(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	h.waitForCache(t, a)
}

// bindAgent plays the Agent CAPI provider: it reserves the Agent for an AgentMachine (label).
func bindAgent(t *testing.T, h *lcHarness, row *lcRow) {
	t.Helper()
	a := agents.New(agents.AgentGVK)
	if err := h.admin.Get(h.ctx, types.NamespacedName{Namespace: row.ns, Name: "agent-" + row.ns}, a); err != nil {
		t.Fatal(err)
	}
	labels := a.GetLabels()
	labels[agents.LabelAgentMachineRef] = "am-1"
	a.SetLabels(labels)
	if err := h.admin.Update(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	h.waitForCache(t, a)
}

// unbindPendingUserAction plays the provider's unbind on scale-down (label, namespace annotation and
// clusterDeploymentName removed) and assisted-service leaving the installed host waiting for a reboot
// into discovery: unbinding-pending-user-action, Bound=False/UnbindingPendingUserAction,
// Validated=False/Unbinding.
func unbindPendingUserAction(t *testing.T, h *lcHarness, row *lcRow) {
	t.Helper()
	a := agents.New(agents.AgentGVK)
	if err := h.admin.Get(h.ctx, types.NamespacedName{Namespace: row.ns, Name: "agent-" + row.ns}, a); err != nil {
		t.Fatal(err)
	}
	labels := a.GetLabels()
	delete(labels, agents.LabelAgentMachineRef)
	a.SetLabels(labels)
	if err := h.admin.Update(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	now := row.clock.Now().UTC().Format(time.RFC3339)
	conds := []any{
		map[string]any{"type": "Bound", "status": "False", "reason": "UnbindingPendingUserAction", "message": "The agent is currently unbinding; Pending host reboot from infraenv image", "lastTransitionTime": now},
		map[string]any{"type": "Validated", "status": "False", "reason": "Unbinding", "message": "The agent is currently unbinding from a cluster deployment", "lastTransitionTime": now},
		map[string]any{"type": "Installed", "status": "True", "reason": "InstallationCompleted", "message": "The installation has completed: Done", "lastTransitionTime": now},
	}
	if err := unstructured.SetNestedSlice(a.Object, conds, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(a.Object, agents.StateUnbindingPendingUserAction, "status", "debugInfo", "state"); err != nil {
		t.Fatal(err)
	}
	if err := h.admin.Status().Update(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	h.waitForCache(t, a)
}

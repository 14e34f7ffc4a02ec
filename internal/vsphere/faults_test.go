package vsphere_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

func faultRule(method string, fault types.BaseMethodFault, times int) *simulator.FaultInjectionRule {
	return &simulator.FaultInjectionRule{MethodName: method, ObjectType: "*", ObjectName: "*", Probability: 1,
		FaultType: simulator.FaultTypeCustom, Fault: fault, MaxCount: times, Enabled: true}
}

func TestFailedPowerOnIsNotClaimedDoneAndRetrySucceeds(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	spec := h.env.VMSpec("power-fails", owner)
	spec.ISOPath = isoPath

	failedBefore := counterValue(t, "create", string(vsphere.ClassFault))
	h.env.Service().AddFaultRule(faultRule("PowerOnVM_Task", &types.InsufficientResourcesFault{}, 1))
	info, err := h.client.CreateVM(ctx, spec)
	if info != nil {
		t.Fatalf("CreateVM returned a VM although power-on failed: %+v", info)
	}
	wantClass(t, err, vsphere.ClassFault)
	var ve *vsphere.Error
	if !errors.As(err, &ve) || ve.FaultType != "InsufficientResourcesFault" {
		t.Fatalf("fault type = %+v", ve)
	}

	if got := counterValue(t, "create", string(vsphere.ClassFault)); got != failedBefore+1 {
		t.Fatalf("create/Fault counter %v -> %v", failedBefore, got)
	}
	var h2 dto.Metric
	if err := metrics.VsphereCallDuration.WithLabelValues("PowerOnVM_Task").(prometheus.Histogram).Write(&h2); err != nil ||
		h2.GetHistogram().GetSampleCount() == 0 {
		t.Fatalf("no PowerOnVM_Task latency observed (%v)", err)
	}

	info, err = h.client.CreateVM(ctx, spec)
	if err != nil || !info.PoweredOn || info.InstanceUUID != owner.OwnerUID {
		t.Fatalf("retry: %+v, %v", info, err)
	}
	if n := h.env.CountVMsNamed("power-fails"); n != 1 {
		t.Fatalf("%d VMs after the retry, want 1", n)
	}
}

func TestFaultClassification(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	info := h.createVM(t, "classified", owner)
	// A client of another session: it does not know the VM's reference yet, so FindVM searches by UUID
	// (FindByUuid), where the faults are injected; the creating session would read its known reference.
	sessions := vsphere.NewSessions(vsphere.SessionOptions{TaskPollInterval: pollInterval})
	t.Cleanup(func() { sessions.Close(context.Background()) })
	searcher, err := sessions.Get(ctx, h.env.Credentials)
	if err != nil {
		t.Fatalf("login: %v", err)
	}

	cases := []struct {
		name  string
		fault types.BaseMethodFault
		class vsphere.ErrorClass
	}{
		{"permission", &types.NoPermission{PrivilegeId: "VirtualMachine.Inventory.Delete"}, vsphere.ClassPermission},
		{"not found", &types.ManagedObjectNotFound{}, vsphere.ClassNotFound},
		{"transient", &types.TaskInProgress{}, vsphere.ClassTransient},
		{"fault", &types.InvalidState{}, vsphere.ClassFault},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.env.Service().AddFaultRule(faultRule("FindByUuid", tc.fault, 1))
			defer h.env.Service().ClearFaultRules()
			_, err := searcher.FindVM(ctx, vcsim.Datacenter, info.InstanceUUID, "")
			wantClass(t, err, tc.class)
		})
	}
	// NotAuthenticated twice in a row (re-login does not help): an auth error, not a loop.
	h.env.Service().AddFaultRule(faultRule("FindByUuid", &types.NotAuthenticated{}, 2))
	_, err = searcher.FindVM(ctx, vcsim.Datacenter, info.InstanceUUID, "")
	wantClass(t, err, vsphere.ClassAuth)
	h.env.Service().ClearFaultRules()
}

func TestFailedReconfigureAndFailedTasks(t *testing.T) {
	f := newEjectFixture(t)
	ctx := testContext(t)

	// The reconfigure call itself fails: no task, nothing claimed.
	f.h.env.Service().AddFaultRule(faultRule("ReconfigVM_Task", &types.InvalidDeviceSpec{}, 1))
	_, err := f.h.client.EjectISO(ctx, f.req)
	wantClass(t, err, vsphere.ClassFault)
	f.h.env.Service().ClearFaultRules()

	// The reconfigure task starts, then ends in error: the resumed step reports the task's fault.
	f.vm.FailNextTask("ReconfigVM_Task", &types.GenericVmConfigFault{Reason: "device busy"})
	started := f.eject(t, f.req)
	req := f.req
	req.TaskRef = started.TaskRef
	var res *vsphere.EjectResult
	for range 200 {
		if res, err = f.h.client.EjectISO(ctx, req); err != nil || res.State != vsphere.EjectInProgress {
			break
		}
	}
	wantClass(t, err, vsphere.ClassFault)
	if cd := f.cdrom(t); cd.ISOPath != isoPath || !cd.Connected {
		t.Fatalf("device changed by a failed task: %+v", cd)
	}

	// Destroy whose power-off task ends in error: the VM stays, and a retry destroys it.
	f.vm.FailNextTask("PowerOffVM_Task", &types.InvalidState{})
	err = f.h.client.DestroyVM(ctx, vcsim.Datacenter, f.owner.OwnerUID, f.owner)
	wantClass(t, err, vsphere.ClassFault)
	if n := f.h.env.CountVMsNamed("eject-me"); n != 1 {
		t.Fatalf("VM count %d after a failed destroy", n)
	}
	if err := f.h.client.DestroyVM(ctx, vcsim.Datacenter, f.owner.OwnerUID, f.owner); err != nil {
		t.Fatalf("retry destroy: %v", err)
	}
	if n := f.h.env.CountVMsNamed("eject-me"); n != 0 {
		t.Fatalf("VM count %d after destroy", n)
	}
}

func counterValue(t *testing.T, op, result string) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.VsphereVMOperations.WithLabelValues(op, result).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

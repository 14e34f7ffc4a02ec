package vsphereagent

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	kevents "k8s.io/client-go/tools/events"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vspherefake"
)

// TestBootDiskFirst: CreateVM starts the boot-order reconfigure without waiting, so the VM checks are
// what finds a VM not booting its disk first. Before installation the order is set again (Event after
// the write); a failure and an installed worker (whose boot options are left alone) are reported as
// VMHealthy=False with a Warning Event; a VM that already boots its disk first is not touched.
func TestBootDiskFirst(t *testing.T) {
	installed := &agents.Agent{Name: "a", Conditions: []agents.Condition{{Type: "Installed", Status: "True"}}}
	installing := &agents.Agent{Name: "a", Conditions: []agents.Condition{{Type: "Installed", Status: "False"}}}
	tests := []struct {
		name        string
		cdromFirst  bool
		agent       *agents.Agent
		fail        error
		wantGoOn    bool
		wantCalls   int
		wantReason  string // VMHealthy's reason after the step ("": not set)
		wantEvent   string // the Event's reason after the write ("": none)
		wantCDFirst bool   // the VM's order afterwards
	}{
		{name: "CD-ROM first before installation: set again", cdromFirst: true, agent: installing, wantGoOn: true, wantCalls: 1, wantEvent: afv1.ReasonBootOrderSet},
		{name: "CD-ROM first, no Agent yet: set again", cdromFirst: true, wantGoOn: true, wantCalls: 1, wantEvent: afv1.ReasonBootOrderSet},
		{name: "already disk first (a read older than the reconfigure): no change, no Event", wantGoOn: true, wantCalls: 1},
		{name: "setting it fails: reported, tried at the next check", cdromFirst: true, fail: vsphere.NewError(vsphere.ClassTransient, "ReconfigVM", "TaskInProgress"),
			wantCalls: 1, wantReason: afv1.ReasonBootOrderNotDiskFirst, wantEvent: afv1.ReasonBootOrderNotDiskFirst, wantCDFirst: true},
		{name: "installed worker: left alone and reported", cdromFirst: true, agent: installed,
			wantReason: afv1.ReasonBootOrderNotDiskFirst, wantEvent: afv1.ReasonBootOrderNotDiskFirst, wantCDFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := vspherefake.New(nil)
			pool := &afv1.VsphereAgentPool{}
			pool.Name, pool.Namespace, pool.UID = "workers", "ns", "pool-1"
			va := &afv1.VsphereAgent{}
			va.Name, va.Namespace, va.UID = "hc-worker-a", "ns", "va-1"
			vm := fake.AddVM(vspherefake.VM{Name: "hc-worker-a", Datacenter: "dc", InstanceUUID: "5000-va-1", PoweredOn: true,
				Ownership: vsphere.Ownership{OwnerUID: "va-1", OwnerName: "ns/hc-worker-a", PoolUID: "pool-1", PoolName: "ns/workers"},
				Spec:      vsphere.VMSpec{DiskGiB: 120}, BootsCDROMFirst: tt.cdromFirst})
			va.Status.VM.Datacenter, va.Status.VM.InstanceUUID, va.Status.VM.BIOSUUID = "dc", vm.InstanceUUID, vm.BIOSUUID
			if tt.fail != nil {
				fake.FailNext(vspherefake.SetDiskFirstBoot, tt.fail)
			}
			rec := kevents.NewFakeRecorder(4)
			r := &Reconciler{Recorder: events.NewRecorder(rec)}
			s := &vmScope{va: va, pool: pool, agent: tt.agent}
			info, err := fake.FindVM(context.Background(), "dc", vm.InstanceUUID, "")
			if err != nil {
				t.Fatal(err)
			}

			if goOn := r.bootDiskFirst(context.Background(), s, fake, info); goOn != tt.wantGoOn {
				t.Errorf("bootDiskFirst = %v, want %v", goOn, tt.wantGoOn)
			}
			if n := fake.Calls(vspherefake.SetDiskFirstBoot); n != tt.wantCalls {
				t.Errorf("%d SetDiskFirstBoot calls, want %d", n, tt.wantCalls)
			}
			c := meta.FindStatusCondition(va.Status.Conditions, afv1.ConditionVMHealthy)
			switch {
			case tt.wantReason == "" && c != nil:
				t.Errorf("VMHealthy set to %+v, want it untouched", c)
			case tt.wantReason != "" && (c == nil || c.Reason != tt.wantReason || c.Status != "False"):
				t.Errorf("VMHealthy = %+v, want False/%s", c, tt.wantReason)
			}
			if len(rec.Events) != 0 {
				t.Fatal("an Event before the status was written")
			}
			for _, f := range s.afterWrite {
				f()
			}
			var got string
			select {
			case e := <-rec.Events:
				got = e
			default:
			}
			if tt.wantEvent == "" && got != "" || tt.wantEvent != "" && !strings.Contains(got, " "+tt.wantEvent+" ") {
				t.Errorf("Event %q, want reason %q", got, tt.wantEvent)
			}
			after, _ := fake.VM(vm.InstanceUUID)
			if after.BootsCDROMFirst != tt.wantCDFirst {
				t.Errorf("CD-ROM first afterwards: %v, want %v", after.BootsCDROMFirst, tt.wantCDFirst)
			}
		})
	}
}

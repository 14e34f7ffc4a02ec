package vcsim

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/mo"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// TestOnVMCallOutOfProcess: the simulator process reports a create (with the ownership marker from the
// spec) and a destroy (with the VM's identity read at the call) to the test process, before running them.
func TestOnVMCallOutOfProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs hack/vcsim")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := StartProcess(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var mu sync.Mutex
	var calls []VMCall
	env.OnVMCall(func(c VMCall) {
		// The call waits for us: the VM being destroyed still exists now.
		if c.Method == MethodDestroyVM && env.VMByInstanceUUID(c.InstanceUUID) == nil {
			t.Errorf("destroy of %s reported after the VM was gone", c.Name)
		}
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
	})
	sessions := vsphere.NewSessions(vsphere.SessionOptions{})
	defer sessions.Close(ctx)
	vc, err := sessions.Get(ctx, env.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	owner := vsphere.Ownership{OwnerUID: "6f1c0d0e-0000-4000-8000-000000000001", PoolUID: "pool-uid-1"}
	info, err := vc.CreateVM(ctx, env.VMSpec("hooked-vm", owner))
	if err != nil {
		t.Fatal(err)
	}
	if err := vc.DestroyVM(ctx, Datacenter, info.InstanceUUID, owner); err != nil {
		t.Fatal(err)
	}
	// A foreign VM: no marker.
	c, err := env.Login(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Logout(ctx) }()
	finder := find.NewFinder(c.Client, true)
	dc, err := finder.Datacenter(ctx, Datacenter)
	if err != nil {
		t.Fatal(err)
	}
	finder.SetDatacenter(dc)
	foreign, err := finder.VirtualMachine(ctx, "DC0_C0_RP0_VM1")
	if err != nil {
		t.Fatal(err)
	}
	var props mo.VirtualMachine
	if err := foreign.Properties(ctx, foreign.Reference(), []string{"config.instanceUuid"}, &props); err != nil {
		t.Fatal(err)
	}
	off, err := foreign.PowerOff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := off.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	task, err := foreign.Destroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, c := range calls {
		got = append(got, c.Method+" "+c.Name)
	}
	// The create's boot-order reconfigure (internal/vsphere/bootorder.go) is reported too; drop it here.
	if len(calls) == 4 && calls[1].Method == MethodReconfigVM && strings.EqualFold(calls[1].InstanceUUID, info.InstanceUUID) {
		calls = append(calls[:1:1], calls[2:]...)
	}
	if len(calls) != 3 {
		t.Fatalf("calls %v, want a create, its boot-order reconfigure and two destroys", got)
	}
	if c := calls[0]; c.Method != MethodCreateVM || !strings.EqualFold(c.OwnerUID, owner.OwnerUID) || c.PoolUID != owner.PoolUID {
		t.Fatalf("create reported as %+v", c)
	}
	if c := calls[1]; c.Method != MethodDestroyVM || !strings.EqualFold(c.InstanceUUID, info.InstanceUUID) || c.BIOSUUID == "" ||
		!strings.EqualFold(c.OwnerUID, owner.OwnerUID) || c.Ref == "" {
		t.Fatalf("destroy reported as %+v (VM %+v)", c, info)
	}
	if c := calls[2]; c.Method != MethodDestroyVM || c.InstanceUUID != props.Config.InstanceUuid || c.OwnerUID != "" {
		t.Fatalf("foreign destroy reported as %+v", c)
	}
	env.OnVMCall(nil)
}

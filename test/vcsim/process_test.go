package vcsim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func TestFaultWireRoundTrip(t *testing.T) {
	for _, f := range []types.BaseMethodFault{
		&types.DuplicateName{Name: "vm-1", Object: types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-42"}},
		&types.GenericVmConfigFault{Reason: "device busy"},
		&types.NoPermission{PrivilegeId: "VirtualMachine.Config.Settings"},
		nil,
	} {
		raw, err := encodeFault(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeFault(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if f == nil {
			if got != nil {
				t.Fatalf("nil fault decoded as %#v", got)
			}
			continue
		}
		if g, w := fmt.Sprintf("%T", got), fmt.Sprintf("%T", f); g != w {
			t.Fatalf("%s decoded as %s", w, g)
		}
	}
	if d, _ := decodeFault(mustEncode(t, &types.DuplicateName{Name: "vm-1"})); d.(*types.DuplicateName).Name != "vm-1" {
		t.Fatal("DuplicateName.Name lost")
	}
}

func mustEncode(t *testing.T, f types.BaseMethodFault) []byte {
	t.Helper()
	raw, err := encodeFault(f)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestStartProcess drives every knob of an out-of-process simulator over its control endpoint and
// checks that Close leaves no process behind.
func TestStartProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs hack/vcsim")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := StartProcess(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid := env.proc.cmd.Process.Pid
	defer env.Close()

	// The operator's path: our session layer, trusting the child's certificate through CABundle.
	sessions := vsphere.NewSessions(vsphere.SessionOptions{})
	defer sessions.Close(ctx)
	if _, err := sessions.Get(ctx, env.Credentials); err != nil {
		t.Fatalf("session over the socket: %v", err)
	}
	if err := env.EnsureFolder(ctx, "agent-forge/proc"); err != nil {
		t.Fatal(err)
	}

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
	vmObj, err := finder.VirtualMachine(ctx, "DC0_C0_RP0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	var props mo.VirtualMachine
	if err := vmObj.Properties(ctx, vmObj.Reference(), []string{"config.instanceUuid", "name"}, &props); err != nil {
		t.Fatal(err)
	}
	uuid := props.Config.InstanceUuid

	if got := env.VMByInstanceUUID(uuid); got == nil || got.Self != vmObj.Reference() || got.Name != props.Name {
		t.Fatalf("VMByInstanceUUID = %+v, want %v", got, vmObj.Reference())
	}
	if env.VMByInstanceUUID("no-such-uuid") != nil {
		t.Fatal("found a VM for an unknown UUID")
	}
	if n := env.CountVMsNamed(props.Name); n != 1 {
		t.Fatalf("CountVMsNamed = %d", n)
	}
	if _, err := env.WrapVM("no-such-uuid"); err == nil {
		t.Fatal("wrapped an unknown UUID")
	}
	vm, err := env.WrapVM(uuid)
	if err != nil {
		t.Fatal(err)
	}
	vm.SetDoorLocked(false)
	vm.SetLockQuestionChoices(RealLockChoices)
	if vm.Reconfigures() != 0 || len(vm.Answers()) != 0 || env.QuestionPending(vm) != "" {
		t.Fatal("a fresh wrapped VM has counters")
	}

	// A question raised in the child is visible over SOAP and answered through the wrapped VM.
	id := env.RaiseQuestion(vm, "msg.hbacommon.outofspace", "There is no more space for virtual disk. Retry?")
	if env.QuestionPending(vm) != id {
		t.Fatalf("pending question is not %s", id)
	}
	if err := vmObj.Answer(ctx, id, "0"); err != nil {
		t.Fatal(err)
	}
	if a := vm.Answers(); len(a) != 1 || a[0].QuestionID != id || a[0].ChoiceKey != "0" {
		t.Fatalf("answers = %+v", a)
	}

	// A one-shot task fault: the task is accepted and ends in error with the fault's type.
	vm.FailNextTask("PowerOffVM_Task", &types.InvalidState{})
	if err := waitTask(ctx, vmObj.PowerOff); !isFault[*types.InvalidState](err) {
		t.Fatalf("power off = %v, want InvalidState", err)
	}
	// A fault rule: the call itself fails, once.
	env.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "PowerOffVM_Task", ObjectType: "VirtualMachine",
		ObjectName: props.Name, Probability: 1, MaxCount: 1, FaultType: simulator.FaultTypeCustom, Enabled: true,
		Fault: &types.NoPermission{PrivilegeId: "VirtualMachine.Interact.PowerOff"}})
	if _, err := vmObj.PowerOff(ctx); !isFault[*types.NoPermission](err) {
		t.Fatalf("power off = %v, want NoPermission", err)
	}
	env.Service().ClearFaultRules()
	if err := waitTask(ctx, vmObj.PowerOff); err != nil {
		t.Fatalf("power off after the faults: %v", err)
	}
	// MaxCount is exact under concurrent calls; a filter callback runs here, on a RemoteObject.
	si := object.NewSearchIndex(c.Client)
	findByUUID := func() error { _, err := si.FindByUuid(ctx, dc, uuid, true, types.NewBool(true)); return err }
	env.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "FindByUuid", ObjectType: "*", ObjectName: "*",
		Probability: 1, MaxCount: 3, FaultType: simulator.FaultTypeCustom, Enabled: true, Fault: &types.NoPermission{}})
	errs := make(chan error, 20)
	for range 20 {
		go func() { errs <- findByUUID() }()
	}
	faults := 0
	for range 20 {
		if err := <-errs; isFault[*types.NoPermission](err) {
			faults++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if faults != 3 {
		t.Fatalf("MaxCount 3 fired %d times", faults)
	}
	env.Service().ClearFaultRules()
	var seen atomic.Value
	var fired atomic.Bool
	env.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "FindByUuid", ObjectType: "*", ObjectName: "*",
		Probability: 1, FaultType: simulator.FaultTypeCustom, Enabled: true, Fault: &types.NotAuthenticated{},
		InclusionPropertyFilter: func(obj mo.Reference) bool {
			seen.Store(obj.Reference().Type)
			return fired.CompareAndSwap(false, true)
		}})
	if err := findByUUID(); !isFault[*types.NotAuthenticated](err) {
		t.Fatalf("first FindByUuid = %v, want NotAuthenticated", err)
	}
	if err := findByUUID(); err != nil {
		t.Fatalf("second FindByUuid = %v, want no fault (the callback fired once)", err)
	}
	if seen.Load() != "SearchIndex" {
		t.Fatalf("the callback saw %v", seen.Load())
	}
	env.Service().ClearFaultRules()

	if err := env.SetCDROMISO(vm, 99999, "[LocalDS_0] x.iso"); err == nil {
		t.Fatal("SetCDROMISO of a missing CD-ROM succeeded")
	}

	env.Close()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("simulator process %d still exists after Close: %v", pid, err)
	}
}

func waitTask(ctx context.Context, start func(context.Context) (*object.Task, error)) error {
	t, err := start(ctx)
	if err != nil {
		return err
	}
	return t.Wait(ctx)
}

func isFault[F types.BaseMethodFault](err error) bool {
	if err == nil {
		return false
	}
	found := false
	fault.In(err, func(mf types.BaseMethodFault, _ string, _ []types.LocalizableMessage) bool {
		_, found = mf.(F)
		return true
	})
	return found
}

// TestChildDiesWithParent: a parent that exits without Close leaves no simulator behind.
func TestChildDiesWithParent(t *testing.T) {
	if os.Getenv("VCSIM_TEST_PARENT") == "1" { // the parent: start a simulator, announce its PID, vanish
		env, err := StartProcess(context.Background(), Options{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		fmt.Printf("child-pid %d\n", env.proc.cmd.Process.Pid)
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("builds and runs hack/vcsim")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildDiesWithParent$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VCSIM_TEST_PARENT=1", BinaryEnv+"="+bin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parent: %v\n%s", err, out)
	}
	var pid int
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "child-pid %d", &pid); err == nil {
			break
		}
	}
	if pid == 0 {
		t.Fatalf("parent announced no child: %s", out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("simulator %d outlived its parent by 15s", pid)
		}
		time.Sleep(50 * time.Millisecond) // polling a PID: nothing to wait on across processes
	}
}

// alive: the process exists and is not a zombie (a reparented child may wait for a reaper).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: kill(0) succeeded
	}
	fields := strings.Fields(string(status[bytes.LastIndexByte(status, ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}

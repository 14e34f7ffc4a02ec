package vspherefake

import (
	"context"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func spec(name, uid string) vsphere.VMSpec {
	return vsphere.VMSpec{Name: name, Datacenter: "DC0", Folder: "hc", ISOPath: "[ds] iso/a.iso", NumCPUs: 2, MemoryMiB: 4096, DiskGiB: 20,
		Ownership: vsphere.Ownership{OwnerUID: uid, OwnerName: "ns/" + name, PoolUID: "pool-uid", PoolName: "ns/pool"}}
}

func TestFakeVMLifecycle(t *testing.T) {
	ctx := context.Background()
	f := New(nil)
	info, err := f.CreateVM(ctx, spec("vm-a", "uid-a"))
	if err != nil {
		t.Fatal(err)
	}
	if info.InstanceUUID != "uid-a" || info.BIOSUUID == "" || !strings.HasPrefix(info.MACAddress, "00:50:56:") || !info.PoweredOn || info.Adopted {
		t.Fatalf("created VM %+v: want instance UUID = owner UID, a BIOS UUID, a VMware MAC, powered on, not adopted", info)
	}
	again, err := f.CreateVM(ctx, spec("vm-a", "uid-a"))
	if err != nil || !again.Adopted || again.MACAddress != info.MACAddress {
		t.Fatalf("a retry must adopt the same VM: %+v, %v", again, err)
	}
	found, err := f.FindVM(ctx, "DC0", "", info.BIOSUUID)
	if err != nil || found.InstanceUUID != "uid-a" {
		t.Fatalf("FindVM by BIOS UUID: %+v, %v", found, err)
	}
	if list, _ := f.ListPoolVMs(ctx, "DC0", "pool-uid"); len(list) != 1 {
		t.Fatalf("ListPoolVMs = %+v, want the one VM", list)
	}
	if names, _ := f.VMsWithISO(ctx, "DC0", "[ds] iso/a.iso"); len(names) != 1 || names[0] != "vm-a" {
		t.Fatalf("VMsWithISO = %v", names)
	}
	if err := f.DestroyVM(ctx, "DC0", "uid-a", vsphere.Ownership{OwnerUID: "uid-b"}); vsphere.ClassOf(err) != vsphere.ClassOwnership {
		t.Fatalf("destroying with another owner: %v, want an ownership refusal", err)
	}
	if err := f.DestroyVM(ctx, "DC0", "uid-a", spec("vm-a", "uid-a").Ownership); err != nil {
		t.Fatal(err)
	}
	if err := f.DestroyVM(ctx, "DC0", "uid-a", spec("vm-a", "uid-a").Ownership); err != nil {
		t.Fatalf("destroying an absent VM is success: %v", err)
	}
	if _, err := f.FindVM(ctx, "DC0", "uid-a", ""); !vsphere.IsNotFound(err) {
		t.Fatalf("FindVM after destroy: %v, want NotFound", err)
	}
	if got := f.Calls(CreateVM); got != 2 {
		t.Fatalf("CreateVM calls = %d, want 2", got)
	}
	if got := f.Calls(DestroyVM); got != 3 {
		t.Fatalf("DestroyVM calls = %d, want 3", got)
	}
}

func TestFakeRefusesLikeVCenter(t *testing.T) {
	ctx := context.Background()
	f := New(nil)
	f.AddVM(VM{Name: "taken", Datacenter: "DC0", Folder: "hc"})
	if _, err := f.CreateVM(ctx, spec("taken", "uid-a")); vsphere.ClassOf(err) != vsphere.ClassDuplicateName || !vsphere.IsPermanentCreateError(err) {
		t.Fatalf("a foreign VM holding the name: %v, want a permanent DuplicateName", err)
	}
	f.AddVM(VM{Name: "other", Datacenter: "DC0", Folder: "hc", InstanceUUID: "uid-b"})
	if _, err := f.CreateVM(ctx, spec("mine", "uid-b")); vsphere.ClassOf(err) != vsphere.ClassOwnership {
		t.Fatalf("a VM with our instance UUID but no marker: %v, want an ownership refusal", err)
	}
	if _, err := f.CreateVM(ctx, spec("taken", "uid-c")); err == nil {
		t.Fatal("the name is still taken")
	}
	if _, err := f.CreateVM(ctx, vsphere.VMSpec{Name: "x"}); vsphere.ClassOf(err) != vsphere.ClassInvalid {
		t.Fatalf("no owner UID: %v, want InvalidConfiguration", err)
	}
}

func TestFakeScriptedErrors(t *testing.T) {
	ctx := context.Background()
	f := New(nil)
	f.FailNext(CreateVM, Transient("CreateVM"), NoPermission("CreateVM", "VirtualMachine.Inventory.Create"))
	if _, err := f.CreateVM(ctx, spec("vm-a", "uid-a")); vsphere.ClassOf(err) != vsphere.ClassTransient {
		t.Fatalf("first call: %v, want transient", err)
	}
	if _, err := f.CreateVM(ctx, spec("vm-a", "uid-a")); vsphere.ClassOf(err) != vsphere.ClassPermission {
		t.Fatalf("second call: %v, want NoPermission", err)
	}
	if _, err := f.CreateVM(ctx, spec("vm-a", "uid-a")); err != nil {
		t.Fatalf("third call: %v, want success once the queue is empty", err)
	}
	f.FailAlways(StatFile, Transient("StatFile"))
	for i := 0; i < 3; i++ {
		if _, err := f.StatFile(ctx, "DC0", "[ds] a"); vsphere.ClassOf(err) != vsphere.ClassTransient {
			t.Fatalf("StatFile: %v, want the persistent transient error", err)
		}
	}
	f.Recover(StatFile)
	if _, err := f.StatFile(ctx, "DC0", "[ds] a"); !vsphere.IsNotFound(err) {
		t.Fatalf("StatFile after Recover: %v, want NotFound", err)
	}
	if got := f.AllCalls(); got[CreateVM] != 3 || got[StatFile] != 4 {
		t.Fatalf("calls %v", got)
	}

	if c, err := f.ReadCapacity(ctx, vsphere.CapacitySpec{}); err != nil || c.EffectiveCPUMHz == 0 || len(c.Datastores) != 1 {
		t.Fatalf("default capacity: %+v, %v", c, err)
	}
	f.SetCapacity(vsphere.Capacity{Compute: "full"})
	if c, _ := f.ReadCapacity(ctx, vsphere.CapacitySpec{}); c.Compute != "full" || f.Calls(ReadCapacity) != 2 {
		t.Fatalf("scripted capacity: %+v", c)
	}

	s := NewSessions(f)
	s.FailLogin(vsphere.NewError(vsphere.ClassAuth, "Login", "cannot complete login"))
	if _, err := s.Get(ctx, vsphere.Credentials{}); vsphere.ClassOf(err) != vsphere.ClassAuth {
		t.Fatalf("login: %v, want AuthenticationFailed", err)
	}
	s.FailLogin(nil)
	if c, err := s.Get(ctx, vsphere.Credentials{}); err != nil || c != vsphere.Client(f) || s.Gets() != 2 {
		t.Fatalf("login: %v, %v, %d gets", c, err, s.Gets())
	}
}

func TestFakeFiles(t *testing.T) {
	ctx := context.Background()
	f := New(nil)
	if err := f.UploadFile(ctx, "DC0", "[ds] iso/a.tmp", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	if err := f.MoveFile(ctx, "DC0", "[ds] iso/a.tmp", "[ds] iso/a.iso"); err != nil {
		t.Fatal(err)
	}
	fi, err := f.StatFile(ctx, "DC0", "[ds] iso/a.iso")
	if err != nil || fi.SizeBytes != 3 || fi.Name != "a.iso" {
		t.Fatalf("StatFile: %+v, %v", fi, err)
	}
	if list, _ := f.ListFiles(ctx, "DC0", "[ds] iso"); len(list) != 1 || list[0].Path != "[ds] iso/a.iso" {
		t.Fatalf("ListFiles = %+v", list)
	}
	if err := f.UploadISO(ctx, "DC0", "not a path", strings.NewReader(""), 0); vsphere.ClassOf(err) != vsphere.ClassInvalid {
		t.Fatalf("bad path: %v", err)
	}
	if err := f.DeleteFile(ctx, "DC0", "[ds] iso/a.iso"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.StatFile(ctx, "DC0", "[ds] iso/a.iso"); !vsphere.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
}

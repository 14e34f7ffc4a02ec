package vcsim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// TestCloneCopiesExtraConfigLikeVCenter: a clone made with CloneVM_Task carries the source's extraConfig
// (the operator's marker), gets a new instance UUID, BIOS UUID and MAC, lands in the folder asked for,
// and is a template when asked; the source is unchanged. Run in process and in the simulator's process.
func TestCloneCopiesExtraConfigLikeVCenter(t *testing.T) {
	for _, outOfProcess := range []bool{false, true} {
		name := map[bool]string{false: "in process", true: "own process"}[outOfProcess]
		t.Run(name, func(t *testing.T) {
			if outOfProcess && testing.Short() {
				t.Skip("builds and runs hack/vcsim")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var env *Env
			var err error
			if outOfProcess {
				env, err = StartProcess(ctx, Options{})
			} else {
				env, err = Start(Options{})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			sessions := vsphere.NewSessions(vsphere.SessionOptions{})
			defer sessions.Close(ctx)
			vc, err := sessions.Get(ctx, env.Credentials)
			if err != nil {
				t.Fatal(err)
			}
			owner := vsphere.Ownership{OwnerUID: "6f1c0d0e-0000-4000-8000-0000000000c1", OwnerName: "ns/va", PoolUID: "pool-uid-c", PoolName: "ns/pool"}
			src, err := vc.CreateVM(ctx, env.VMSpec("source-vm", owner))
			if err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				opts     CloneOptions
				template bool
				on       bool
			}{
				{opts: CloneOptions{Name: "clone-same-folder", PowerOn: true}, on: true},
				{opts: CloneOptions{Name: "replica-elsewhere", Folder: "backup/replicas"}},
				{opts: CloneOptions{Name: "template-elsewhere", Folder: "templates", Template: true}, template: true},
			}
			c, err := env.Login(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Logout(ctx) }()
			for _, tc := range cases {
				uuid, err := env.CloneVM(ctx, src.InstanceUUID, tc.opts)
				if err != nil {
					t.Fatalf("%s: %v", tc.opts.Name, err)
				}
				copyInfo, err := vc.FindVM(ctx, Datacenter, uuid, "")
				if err != nil {
					t.Fatalf("%s: %v", tc.opts.Name, err)
				}
				if copyInfo.Ownership != owner {
					t.Errorf("%s: marker %+v, want the source's %+v", tc.opts.Name, copyInfo.Ownership, owner)
				}
				if strings.EqualFold(uuid, src.InstanceUUID) || strings.EqualFold(copyInfo.BIOSUUID, src.BIOSUUID) || copyInfo.BIOSUUID == "" {
					t.Errorf("%s: instance UUID %s / BIOS UUID %s, want both new (source %s / %s)", tc.opts.Name, uuid, copyInfo.BIOSUUID, src.InstanceUUID, src.BIOSUUID)
				}
				if copyInfo.MACAddress == "" || strings.EqualFold(copyInfo.MACAddress, src.MACAddress) {
					t.Errorf("%s: MAC %q, want a new one (source %s)", tc.opts.Name, copyInfo.MACAddress, src.MACAddress)
				}
				if copyInfo.Template != tc.template || copyInfo.PoweredOn != tc.on {
					t.Errorf("%s: template %t powered on %t, want %t %t", tc.opts.Name, copyInfo.Template, copyInfo.PoweredOn, tc.template, tc.on)
				}
				wantFolder := tc.opts.Folder
				if wantFolder == "" {
					wantFolder = Folder
				}
				if copyInfo.Folder != wantFolder {
					t.Errorf("%s: folder %q, want %q", tc.opts.Name, copyInfo.Folder, wantFolder)
				}
				if !copyInfo.IsCopy() {
					t.Errorf("%s: not classified as a copy", tc.opts.Name)
				}
				var vm mo.VirtualMachine
				ref := env.VMByInstanceUUID(uuid).Self
				if err := object.NewVirtualMachine(c.Client, ref).Properties(ctx, ref, []string{"config.extraConfig"}, &vm); err != nil {
					t.Fatal(err)
				}
				if !hasOption(vm.Config.ExtraConfig, vsphere.ExtraConfigDiskUUID, "TRUE") {
					t.Errorf("%s: extraConfig %v lacks the source's %s", tc.opts.Name, vm.Config.ExtraConfig, vsphere.ExtraConfigDiskUUID)
				}
			}
			again, err := vc.FindVM(ctx, Datacenter, src.InstanceUUID, "")
			if err != nil || again.MACAddress != src.MACAddress || again.Ownership != owner || again.IsCopy() {
				t.Fatalf("source changed by the clones: %+v, %v", again, err)
			}
		})
	}
}

func hasOption(extra []types.BaseOptionValue, key, value string) bool {
	for _, o := range extra {
		if ov := o.GetOptionValue(); ov.Key == key {
			v, _ := ov.Value.(string)
			return strings.EqualFold(v, value)
		}
	}
	return false
}

// TestMergeOptions: a clone's spec.config extraConfig replaces the source's value of a key and adds new keys.
func TestMergeOptions(t *testing.T) {
	base := []types.BaseOptionValue{&types.OptionValue{Key: "a", Value: "1"}, &types.OptionValue{Key: "b", Value: "2"}}
	over := []types.BaseOptionValue{&types.OptionValue{Key: "b", Value: "3"}, &types.OptionValue{Key: "c", Value: "4"}}
	got := mergeOptions(base, over)
	var s []string
	for _, o := range got {
		ov := o.GetOptionValue()
		s = append(s, ov.Key+"="+ov.Value.(string))
	}
	if strings.Join(s, ",") != "a=1,b=3,c=4" {
		t.Fatalf("mergeOptions = %v", s)
	}
}

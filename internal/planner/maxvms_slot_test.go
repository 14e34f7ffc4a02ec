package planner

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

func TestMaxVMsSlot(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	// va builds a VsphereAgent: name, creation second, and its state: "vm" (status records a VM),
	// "deleting" (with a VM), "failed" (VM destroyed), "pending" (no VM yet).
	va := func(name string, second int, state string) afv1.VsphereAgent {
		o := afv1.VsphereAgent{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(second) * time.Second))}}
		switch state {
		case "vm":
			o.Status.VM.InstanceUUID, o.Status.VM.Phase = string(o.UID), afv1.VMPhaseAvailable
		case "deleting":
			now := metav1.NewTime(t0)
			o.DeletionTimestamp = &now
			o.Status.VM.Phase = afv1.VMPhaseDeleting
		case "failed":
			o.Status.VM.InstanceUUID, o.Status.VM.Phase, o.Status.VM.Reason = string(o.UID), afv1.VMPhaseFailed, afv1.ReasonRegistrationTimeout
		case "pending":
			o.Status.VM.Phase = afv1.VMPhasePending
		}
		return o
	}
	tests := []struct {
		name     string
		vas      []afv1.VsphereAgent
		self     string
		limit    int
		admitted []string
		want     Slot
	}{
		{name: "room left: admitted", vas: []afv1.VsphereAgent{va("a", 0, "vm"), va("b", 1, "pending")}, self: "b", limit: 2, want: Slot{OK: true, Holders: 1}},
		{name: "every slot held: refused", vas: []afv1.VsphereAgent{va("a", 0, "vm"), va("b", 1, "vm"), va("c", 2, "pending")}, self: "c", limit: 2, want: Slot{Holders: 2}},
		{name: "a VM being destroyed still holds its slot", vas: []afv1.VsphereAgent{va("a", 0, "deleting"), va("b", 1, "vm"), va("c", 2, "pending")}, self: "c", limit: 2, want: Slot{Holders: 2}},
		{name: "a failed VsphereAgent whose VM was destroyed frees its slot", vas: []afv1.VsphereAgent{va("a", 0, "failed"), va("b", 1, "vm"), va("c", 2, "pending")}, self: "c", limit: 2, want: Slot{OK: true, Holders: 1}},
		{name: "racing for the last slot: the older one gets it", vas: []afv1.VsphereAgent{va("a", 0, "vm"), va("b", 1, "pending"), va("c", 2, "pending")}, self: "c", limit: 2, want: Slot{Holders: 1, Rank: 1}},
		{name: "racing for the last slot: ... and the older one is admitted", vas: []afv1.VsphereAgent{va("a", 0, "vm"), va("b", 1, "pending"), va("c", 2, "pending")}, self: "b", limit: 2, want: Slot{OK: true, Holders: 1}},
		{name: "same creation second: by name", vas: []afv1.VsphereAgent{va("a", 0, "vm"), va("z", 1, "pending"), va("m", 1, "pending")}, self: "z", limit: 2, want: Slot{Holders: 1, Rank: 1}},
		{name: "one admitted and creating holds its slot even before its status shows the VM", vas: []afv1.VsphereAgent{va("m", 1, "pending"), va("z", 1, "pending")},
			self: "m", limit: 1, admitted: []string{"z"}, want: Slot{Holders: 1}},
		{name: "va missing from the cache list still counts itself", vas: []afv1.VsphereAgent{va("a", 0, "vm")}, self: "b", limit: 1, want: Slot{Holders: 1}},
		{name: "limit 0: nothing is created", vas: nil, self: "b", limit: 0, want: Slot{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self := va(tt.self, 1, "pending")
			for _, o := range tt.vas {
				if o.Name == tt.self {
					self = o
				}
			}
			admitted := map[types.UID]bool{}
			for _, n := range tt.admitted {
				admitted[types.UID("uid-"+n)] = true
			}
			if got := MaxVMsSlot(tt.vas, &self, tt.limit, admitted); got != tt.want {
				t.Errorf("MaxVMsSlot = %+v, want %+v", got, tt.want)
			}
		})
	}
}

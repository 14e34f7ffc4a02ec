package pool

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func mod(id string, poolUIDs ...string) vsphere.ClusterModule {
	m := vsphere.ClusterModule{ID: id, ClusterRef: "domain-c1"}
	for i, uid := range poolUIDs {
		m.Members = append(m.Members, vsphere.ModuleMember{Ref: "vm-" + string(rune('a'+i)), Ownership: vsphere.Ownership{PoolUID: uid}})
	}
	return m
}

func TestChooseModule(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		recorded, remembered string
		listed               []vsphere.ClusterModule
		wantID               string
		want                 moduleChoice
	}{
		{"the recorded module that exists is kept", "m1", "", []vsphere.ClusterModule{mod("m0", "pool"), mod("m1")}, "m1", moduleKeep},
		{"nothing listed: create", "", "", nil, "", moduleCreate},
		{"a recorded module gone from vCenter is replaced", "m1", "", []vsphere.ClusterModule{mod("m2")}, "", moduleCreate},
		{"one this process created is taken back though empty", "", "m2", []vsphere.ClusterModule{mod("m2")}, "m2", moduleRemember},
		{"a remembered module gone is not taken back", "", "m2", nil, "", moduleCreate},
		{"a module of only this pool's VMs is adopted", "", "", []vsphere.ClusterModule{mod("m3", "other"), mod("m4", "pool", "pool")}, "m4", moduleAdopt},
		{"an empty module is never adopted (anyone's)", "", "", []vsphere.ClusterModule{mod("m5")}, "", moduleCreate},
		{"a module mixing another pool's VMs is not adopted", "", "", []vsphere.ClusterModule{mod("m6", "pool", "other")}, "", moduleCreate},
		{"a module of VMs without a marker is not adopted", "", "", []vsphere.ClusterModule{mod("m7", "")}, "", moduleCreate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, got := chooseModule(tc.recorded, tc.listed, tc.remembered, "pool")
			if id != tc.wantID || got != tc.want {
				t.Fatalf("chooseModule = %q, %s; want %q, %s", id, got, tc.wantID, tc.want)
			}
		})
	}
}

func TestAntiAffinityVerdict(t *testing.T) {
	ok, reason, _ := antiAffinityVerdict(nil, 2)
	if !ok || reason != afv1.ReasonClusterModulesReady {
		t.Fatalf("no problem: %v %s", ok, reason)
	}
	ok, reason, msg := antiAffinityVerdict([][2]string{{afv1.ReasonDRSDisabled, "DRS is off on cluster a"}, {afv1.ReasonNoComputeCluster, "h1 is a standalone host"}}, 1)
	if ok || reason != afv1.ReasonDRSDisabled {
		t.Fatalf("problems: %v %s", ok, reason)
	}
	for _, want := range []string{"DRS is off on cluster a", "h1 is a standalone host", "VMs are still created"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// The check runs on the first pass, after a spec change, when a recorded module went missing from status,
// and every antiAffinityRecheck; not on every pass.
func TestModuleMemoryDue(t *testing.T) {
	var m moduleMemory
	key, uid, now := types.NamespacedName{Namespace: "ns", Name: "p"}, types.UID("u1"), time.Unix(1000, 0)
	if !m.due(key, uid, 1, now, false) {
		t.Fatal("first pass not due")
	}
	m.checked(key, uid, 1, now, true)
	if m.due(key, uid, 1, now.Add(time.Minute), true) {
		t.Fatal("due again a minute later with nothing changed")
	}
	if !m.due(key, uid, 2, now.Add(time.Minute), true) {
		t.Fatal("a new generation is not due")
	}
	if !m.due(key, uid, 1, now.Add(time.Minute), false) {
		t.Fatal("a status that lost its module is not due")
	}
	if !m.due(key, uid, 1, now.Add(antiAffinityRecheck), true) {
		t.Fatal("not due after the recheck interval")
	}
	m.checked(key, uid, 1, now, false) // e.g. no cluster-modules API: incomplete, and that is the verdict
	if m.due(key, uid, 1, now.Add(time.Minute), false) {
		t.Fatal("an incomplete verdict is rechecked every pass")
	}
	m.created(key, uid, "domain-c1", "m1")
	if got := m.remembered(key, uid, "domain-c1"); got != "m1" {
		t.Fatalf("remembered %q", got)
	}
	if m.remembered(key, "u2", "domain-c1") != "" {
		t.Fatal("a pool recreated under the name inherits the old one's module")
	}
	m.ForgetPool(key)
	if m.HoldsPool(key) {
		t.Fatal("forgotten pool still held")
	}
}

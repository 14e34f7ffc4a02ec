package vsphereagent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Which pool updates start a pass of the pool's VsphereAgents: what a VM's pass reads, not counters.
func TestPoolChangesForVMs(t *testing.T) {
	base := func() *afv1.VsphereAgentPool {
		p := &afv1.VsphereAgentPool{}
		p.Namespace, p.Name, p.Generation = "ns", "workers", 1
		p.Status.ISO = &afv1.ISOStatus{Path: "[ds] agent-forge/ns/workers/a.iso"}
		p.Status.WaitingAgentMachines, p.Status.VMs = 3, 2
		return p
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(*afv1.VsphereAgentPool)
		want   bool
	}{
		{"counters only", func(p *afv1.VsphereAgentPool) { p.Status.WaitingAgentMachines, p.Status.VMs = 0, 5 }, false},
		{"a condition only", func(p *afv1.VsphereAgentPool) {
			p.Status.Conditions = []metav1.Condition{{Type: afv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
		}, false},
		{"spec (generation)", func(p *afv1.VsphereAgentPool) { p.Generation = 2 }, true},
		{"ISO cached at another path", func(p *afv1.VsphereAgentPool) { p.Status.ISO.Path = "[ds] agent-forge/ns/workers/b.iso" }, true},
		{"ISO no longer cached", func(p *afv1.VsphereAgentPool) { p.Status.ISO = nil }, true},
		{"an annotation", func(p *afv1.VsphereAgentPool) { p.Annotations = map[string]string{"x": "y"} }, true},
		{"a label", func(p *afv1.VsphereAgentPool) { p.Labels = map[string]string{"x": "y"} }, true},
		{"deletion", func(p *afv1.VsphereAgentPool) { p.DeletionTimestamp = &now }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := base(), base()
			tc.change(updated)
			if got := poolChangesForVMs().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tc.want {
				t.Errorf("update passes = %t, want %t", got, tc.want)
			}
		})
	}
	if !poolChangesForVMs().Create(event.CreateEvent{Object: base()}) || !poolChangesForVMs().Delete(event.DeleteEvent{Object: base()}) {
		t.Error("a pool's creation and deletion must start its VMs' passes")
	}
}

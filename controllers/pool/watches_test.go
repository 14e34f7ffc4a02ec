package pool

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// Which Machine updates start a pool pass: existence, deletion and NodePool, not CAPI's status writes.
func TestMachineChangesForPools(t *testing.T) {
	base := func() client.Object {
		m := &unstructured.Unstructured{}
		m.SetGroupVersionKind(agents.MachineGVK())
		m.SetNamespace("ns-hc")
		m.SetName("m1")
		m.SetAnnotations(map[string]string{agents.AnnotationNodePool: "ns/np"})
		return m
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(client.Object)
		want   bool
	}{
		{"status only", func(o client.Object) {
			_ = unstructured.SetNestedField(o.(*unstructured.Unstructured).Object, "Running", "status", "phase")
		}, false},
		{"another label", func(o client.Object) { o.SetLabels(map[string]string{"x": "y"}) }, false},
		{"deletion starts", func(o client.Object) { o.SetDeletionTimestamp(&now) }, true},
		{"another NodePool", func(o client.Object) { o.SetAnnotations(map[string]string{agents.AnnotationNodePool: "ns/other"}) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := base(), base()
			tc.change(updated)
			if got := machineChangesForPools().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tc.want {
				t.Errorf("update passes = %t, want %t", got, tc.want)
			}
		})
	}
	if !machineChangesForPools().Create(event.CreateEvent{Object: base()}) || !machineChangesForPools().Delete(event.DeleteEvent{Object: base()}) {
		t.Error("a Machine's creation and deletion must start a pool pass")
	}
}

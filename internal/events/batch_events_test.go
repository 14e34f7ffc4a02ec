package events

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// Batch Events are written as events.k8s.io/v1 Events of the pool, each under its own name (the split
// parts of one batch too, written at the same instant), with the lines redacted and every note within
// the API's limit. The Events are created on a real API server (envtest), which validates them as it
// validates the operator's (names, the note limit, regarding, reporting fields).
func TestBatchEventsWritesOneEventPerPartAboutThePool(t *testing.T) {
	_, c := testenv.StartForTest(t, testenv.Options{WithoutExternalCRDs: true})
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRecorder(&captureRecorder{})
	b := r.BatchEvents(c, "agent-forge-vm", clk, 2*time.Second, 30*time.Second, logr.Discard())
	pool := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "workers", UID: "pool-uid"}}
	for i := 0; i < 30; i++ {
		r.Batch(pool, "VMCreated", ActionCreateVM, SummaryVMCreated,
			fmt.Sprintf("workers-%02d (VsphereAgent workers-%02d, instance UUID 4203c1de-0000-4000-8000-%012d) https://u:p@x/?token=s3cr3t", i, i, i))
	}
	clk.Step(2 * time.Second)
	b.FlushDue()

	var list eventsv1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) < 2 {
		t.Fatalf("%d Event(s) for 30 lines of ~150 bytes, want the batch split", len(list.Items))
	}
	named := 0
	for _, e := range list.Items {
		if e.Regarding.Kind != "VsphereAgentPool" || e.Regarding.Name != "workers" || e.Regarding.UID != "pool-uid" || e.Regarding.APIVersion != afv1.GroupVersion.String() {
			t.Errorf("%s: regarding %+v, want the pool", e.Name, e.Regarding)
		}
		if e.Type != "Normal" || e.Reason != "VMCreated" || e.Action != ActionCreateVM || e.ReportingController != "agent-forge-vm" ||
			!strings.HasPrefix(e.ReportingInstance, "agent-forge-vm-") || e.EventTime.IsZero() {
			t.Errorf("%s: %s/%s/%s by %s/%s at %s", e.Name, e.Type, e.Reason, e.Action, e.ReportingController, e.ReportingInstance, e.EventTime)
		}
		if len(e.Note) > noteLimit || strings.Contains(e.Note, "s3cr3t") || strings.Contains(e.Note, "u:p@") {
			t.Errorf("%s: note of %d bytes, or not redacted: %q", e.Name, len(e.Note), e.Note)
		}
		named += strings.Count(e.Note, "(VsphereAgent workers-")
	}
	if named != 30 {
		t.Fatalf("the Events name %d VMs, want 30", named)
	}
}

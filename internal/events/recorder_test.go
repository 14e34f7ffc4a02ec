package events

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

type recorded struct {
	regarding, related        runtime.Object
	eventtype, reason, action string
	note                      string
}

type captureRecorder struct{ got []recorded }

func (c *captureRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	c.got = append(c.got, recorded{regarding, related, eventtype, reason, action, fmt.Sprintf(note, args...)})
}

func TestRecorder(t *testing.T) {
	pool := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "workers"}}
	va := &afv1.VsphereAgent{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "workers-abc"},
		Spec: afv1.VsphereAgentSpec{PoolRef: afv1.LocalObjectReference{Name: "workers"}}}
	long := strings.Repeat("é", 600) // 1200 bytes
	tests := []struct {
		name               string
		regarding, related runtime.Object
		note               string
		args               []any
		wantNote           string
		wantRelated        string // "" = none
		never              []string
	}{
		{name: "formats and redacts a URL token", regarding: pool, note: "GET %s: refused",
			args: []any{"https://hub.example.com/images/x?api_key=s3cr3t"}, never: []string{"s3cr3t", "api_key"}},
		{name: "redacts user info in a plain note", regarding: pool, note: `Post "https://admin:hunter2@vc.example.com/sdk": refused`,
			never: []string{"hunter2"}},
		{name: "a percent sign in a plain note stays", regarding: pool, note: "disk 90% full", wantNote: "disk 90% full"},
		{name: "a VsphereAgent's Event is related to its pool", regarding: va, note: "created VM x", wantNote: "created VM x", wantRelated: "VsphereAgentPool/workers"},
		{name: "a given related object is kept", regarding: pool, related: va, note: "releasing VM x", wantNote: "releasing VM x", wantRelated: "VsphereAgent/workers-abc"},
		{name: "cut to the API's limit on a rune boundary", regarding: pool, note: "%s", args: []any{long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &captureRecorder{}
			NewRecorder(c).Eventf(tt.regarding, tt.related, corev1.EventTypeWarning, "Reason", ActionPreflight, tt.note, tt.args...)
			if len(c.got) != 1 {
				t.Fatalf("%d events, want 1", len(c.got))
			}
			e := c.got[0]
			if e.regarding != tt.regarding || e.eventtype != corev1.EventTypeWarning || e.reason != "Reason" || e.action != ActionPreflight {
				t.Fatalf("recorded %+v", e)
			}
			if tt.wantNote != "" && e.note != tt.wantNote {
				t.Errorf("note %q, want %q", e.note, tt.wantNote)
			}
			for _, n := range tt.never {
				if strings.Contains(e.note, n) {
					t.Errorf("note %q contains %q", e.note, n)
				}
			}
			if len(e.note) > noteLimit || !utf8.ValidString(e.note) {
				t.Errorf("note of %d bytes (valid UTF-8: %t)", len(e.note), utf8.ValidString(e.note))
			}
			if tt.note == "%s" && len(tt.args) == 1 && tt.args[0] == long && !strings.HasSuffix(e.note, "...") {
				t.Errorf("a cut note is not marked: %q", e.note[len(e.note)-10:])
			}
			got := ""
			switch r := e.related.(type) {
			case nil:
			case *corev1.ObjectReference:
				if r.Namespace != "ns" || r.APIVersion != afv1.GroupVersion.String() {
					t.Errorf("related %+v", r)
				}
				got = r.Kind + "/" + r.Name
			case *afv1.VsphereAgent:
				got = "VsphereAgent/" + r.Name
			default:
				t.Fatalf("related %T", r)
			}
			if got != tt.wantRelated {
				t.Errorf("related %q, want %q", got, tt.wantRelated)
			}
		})
	}
}

func TestSummaryISOEjectedNamesThePathVerbatim(t *testing.T) {
	if got := fmt.Sprintf(SummaryISOEjected("[ds 100%] agent-forge/iso/a.iso"), 2); got != "ejected the discovery ISO [ds 100%] agent-forge/iso/a.iso from 2 VM(s)" {
		t.Fatalf("summary %q", got)
	}
}

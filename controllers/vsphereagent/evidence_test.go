package vsphereagent

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func TestMarkerMismatches(t *testing.T) {
	const uid, other = "0f1e2d3c-0000-4000-8000-000000000001", "0f1e2d3c-0000-4000-8000-000000000002"
	tests := []struct {
		name, notes, ownerUID string
		want                  []string // substrings, one per mismatch; none: agrees
	}{
		{name: "1.0.x: no Notes"},
		{name: "1.1.0: marker names this VsphereAgent", notes: afv1.UpstreamNotesMarkerPrefix + uid, ownerUID: uid},
		{name: "marker with text a user added around it", notes: "rack 4\n" + afv1.UpstreamNotesMarkerPrefix + uid + "\n", ownerUID: uid},
		{name: "marker names another VsphereAgent", notes: afv1.UpstreamNotesMarkerPrefix + other,
			want: []string{"notes: the VM's upstream marker names VsphereAgent UID " + other}},
		{name: "two markers, one of them foreign", notes: afv1.UpstreamNotesMarkerPrefix + uid + "\n" + afv1.UpstreamNotesMarkerPrefix + other, ownerUID: uid,
			want: []string{"names VsphereAgent UID " + other}},
		// status.vm.ownerUID is the status writer's word: it neither proves nor refuses anything.
		{name: "a status ownerUID of another VsphereAgent is not evidence", notes: afv1.UpstreamNotesMarkerPrefix + uid, ownerUID: other},
		{name: "a status ownerUID without a marker is not evidence", notes: "someone's notes", ownerUID: uid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			va := &afv1.VsphereAgent{}
			va.UID = types.UID(uid)
			va.Status.VM.OwnerUID = tt.ownerUID
			got := markerMismatches(va, &vsphere.AdoptionCandidate{Notes: tt.notes})
			if len(got) != len(tt.want) {
				t.Fatalf("mismatches = %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("mismatch %q lacks %q", got[i], w)
				}
			}
		})
	}
}

func TestDescribeCandidatesNamesEveryVMInAStableOrder(t *testing.T) {
	a := vsphere.AdoptionCandidate{Folder: "agent-forge/ns", Notes: afv1.UpstreamNotesMarkerPrefix + "u1"}
	a.BIOSUUID = "4201"
	b := vsphere.AdoptionCandidate{Folder: "agent-forge/ns-old"}
	b.BIOSUUID = "4202"
	got := describeCandidates([]vsphere.AdoptionCandidate{b, a})
	want := `folder "agent-forge/ns", BIOS UUID 4201, upstream marker u1 and folder "agent-forge/ns-old", BIOS UUID 4202, no upstream marker`
	if got != want {
		t.Fatalf("describeCandidates =\n%s\nwant\n%s", got, want)
	}
	if again := describeCandidates([]vsphere.AdoptionCandidate{a, b}); again != got {
		t.Fatalf("order depends on vCenter's listing: %q vs %q", again, got)
	}
}

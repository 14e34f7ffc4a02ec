package poolmemory

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

func vaAt(uid, rv string, phase afv1.VMPhase) *afv1.VsphereAgent {
	va := &afv1.VsphereAgent{}
	va.Namespace, va.Name, va.UID, va.ResourceVersion = "ns", "vm", types.UID(uid), rv
	va.Status.VM.Phase = phase
	return va
}

func TestOwnWritesReadsItsOwnWriteWhileTheCacheLags(t *testing.T) {
	type write struct {
		replaced string
		written  *afv1.VsphereAgent
	}
	cases := []struct {
		name     string
		writes   []write
		cached   *afv1.VsphereAgent
		wantRV   string
		wantSeen afv1.VMPhase
	}{
		{name: "nothing written: the cache", cached: vaAt("u1", "1", ""), wantRV: "1"},
		{name: "the cache still shows the version the write replaced: the write",
			writes: []write{{"1", vaAt("u1", "2", afv1.VMPhaseProvisioning)}}, cached: vaAt("u1", "1", ""),
			wantRV: "2", wantSeen: afv1.VMPhaseProvisioning},
		{name: "the cache caught up: the cache",
			writes: []write{{"1", vaAt("u1", "2", afv1.VMPhaseProvisioning)}}, cached: vaAt("u1", "2", afv1.VMPhaseProvisioning),
			wantRV: "2", wantSeen: afv1.VMPhaseProvisioning},
		{name: "someone else wrote after us: the cache",
			writes: []write{{"1", vaAt("u1", "2", afv1.VMPhaseProvisioning)}}, cached: vaAt("u1", "3", afv1.VMPhaseFailed),
			wantRV: "3", wantSeen: afv1.VMPhaseFailed},
		{name: "two writes (finalizer, then status), the cache shows the first's original: the last write",
			writes: []write{{"1", vaAt("u1", "2", "")}, {"2", vaAt("u1", "3", afv1.VMPhaseProvisioning)}}, cached: vaAt("u1", "1", ""),
			wantRV: "3", wantSeen: afv1.VMPhaseProvisioning},
		{name: "two writes, the cache shows the first write: the last write",
			writes: []write{{"1", vaAt("u1", "2", "")}, {"2", vaAt("u1", "3", afv1.VMPhaseProvisioning)}}, cached: vaAt("u1", "2", ""),
			wantRV: "3", wantSeen: afv1.VMPhaseProvisioning},
		{name: "an object of the same name created anew: the cache",
			writes: []write{{"1", vaAt("u1", "2", afv1.VMPhaseProvisioning)}}, cached: vaAt("u2", "1", ""),
			wantRV: "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			own := NewOwnWrites[*afv1.VsphereAgent]()
			for _, w := range tc.writes {
				own.Wrote(w.replaced, w.written)
			}
			got := own.Latest(tc.cached)
			if got.ResourceVersion != tc.wantRV || got.Status.VM.Phase != tc.wantSeen {
				t.Errorf("latest = version %s phase %q, want version %s phase %q", got.ResourceVersion, got.Status.VM.Phase, tc.wantRV, tc.wantSeen)
			}
		})
	}
}

func TestOwnWritesHandsOutCopiesAndForgets(t *testing.T) {
	own := NewOwnWrites[*afv1.VsphereAgent]()
	written := vaAt("u1", "2", afv1.VMPhaseProvisioning)
	own.Wrote("1", written)
	written.Status.VM.Phase = afv1.VMPhaseFailed // the caller keeps using its object
	first := own.Latest(vaAt("u1", "1", ""))
	first.Status.VM.Phase = afv1.VMPhaseBound // a pass edits what it got
	if again := own.Latest(vaAt("u1", "1", "")); again.Status.VM.Phase != afv1.VMPhaseProvisioning {
		t.Errorf("the remembered write changed with its users: phase %q", again.Status.VM.Phase)
	}
	own.Forget(types.NamespacedName{Namespace: "ns", Name: "vm"})
	if got := own.Latest(vaAt("u1", "1", "")); got.ResourceVersion != "1" {
		t.Errorf("after forget: version %s, want the cache's 1", got.ResourceVersion)
	}
	var none *OwnWrites[*afv1.VsphereAgent]
	none.Wrote("1", written)
	if got := none.Latest(vaAt("u1", "1", "")); got.ResourceVersion != "1" {
		t.Errorf("a nil OwnWrites returned version %s", got.ResourceVersion)
	}
}

package iso

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// The ISOs are small (a few hundred KiB) to keep the suite fast; the 1 GiB run is make bench-iso.
const testISOSize = 600 << 10

// scenarios run identically on every backend.
var scenarios = []struct {
	name string
	run  func(t *testing.T, b backend)
}{
	{"fresh cache uploads once under the content address", scenarioFreshCache},
	{"identical bytes under a new URL are reused", scenarioReuseNewURL},
	{"interval revalidation: 304 keeps, new bytes upload", scenarioIntervalRevalidation},
	{"revalidation without server validators hashes but does not upload unchanged bytes", scenarioIgnoredValidators},
	{"a 304 to a request without validators is an error", scenarioBogus304},
	{"a cached file gone from the datastore is repaired", scenarioRepairMissing},
	{"force refresh downloads unconditionally", scenarioForceRefresh},
	{"failed downloads promote nothing and stay visible", scenarioFailedDownloads},
	{"non-ISO bytes are refused", scenarioNotAnISO},
	{"pruning waits for VMs to detach the ISO", scenarioPruneInUse},
	{"a failed delete is retried", scenarioPruneDeleteFails},
	{"stale temporary uploads are cleaned up", scenarioStaleTemps},
	{"upstream history is converted or dropped, its stale detached .partial uploads cleaned", scenarioUpstreamLeftovers},
	{"an image above maxSize is refused, announced or chunked, and nothing of it is kept", scenarioTooLarge},
}

func TestScenariosInMemory(t *testing.T) {
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { s.run(t, memBackend(t)) })
	}
}

func scenarioFreshCache(t *testing.T, b backend) {
	iso := makeISO(testISOSize, 1)
	h := newHarness(t, b, iso)
	need, rr := h.pass()
	if need.Why != NeedNothingCached {
		t.Fatalf("need %+v", need)
	}
	h.expectOutcome(rr, OutcomeUploaded)
	st := h.status()
	digest := sha(iso)
	want := CachedISOPath(b.datastore, "agent-forge/"+h.pool.Namespace+"/pool", digest)
	if st.Path != want || st.SHA256 != digest || st.SizeBytes != int64(len(iso)) || st.CheckedAt == nil || st.UploadedAt == nil {
		t.Fatalf("status %+v", st)
	}
	if st.URL != h.server.URL+"/images/infraenv/minimal.iso" || st.URLHash != URLHash(h.url) || st.ETag == "" {
		t.Fatalf("status url fields %q %q %q", st.URL, st.URLHash, st.ETag)
	}
	if len(st.History) != 1 || st.History[0].Path != want {
		t.Fatalf("history %+v", st.History)
	}
	if got, ok := b.read(t, want); !ok || !bytes.Equal(got, iso) {
		t.Fatal("cached bytes differ from the source")
	}
	h.expectOnly(digest + ".iso")
	if h.cond.Status != "True" || h.cond.Reason != afv1.ReasonCached {
		t.Fatalf("condition %+v", h.cond)
	}
	if !contains(h.eventReasons(), afv1.ReasonISOUploaded) {
		t.Fatalf("events %v", h.eventReasons())
	}
	// Nothing to do until the interval elapses.
	if need, rr := h.pass(); need.Needed || rr != nil || need.RequeueAfter != time.Hour {
		t.Fatalf("second pass %+v", need)
	}
}

func scenarioReuseNewURL(t *testing.T, b backend) {
	iso := makeISO(testISOSize, 2)
	h := newHarness(t, b, iso)
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	first := h.status()
	// The InfraEnv was regenerated (new createdTime) into identical bytes.
	h.renewToken("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyb3RhdGVkIn0.bmV3c2lnbmF0dXJlMQ")
	h.created = metav1.NewTime(h.created.Add(time.Hour))
	h.clock.Step(time.Minute)
	need, rr := h.pass()
	if need.Why != NeedURLChanged || need.Conditional {
		t.Fatalf("need %+v", need)
	}
	h.expectOutcome(rr, OutcomeReused)
	st := h.status()
	if st.Path != first.Path || st.URLHash == first.URLHash || len(st.History) != 1 || !st.UploadedAt.Equal(first.UploadedAt) {
		t.Fatalf("status %+v", st)
	}
	if !contains(h.eventReasons(), afv1.ReasonISOReused) {
		t.Fatalf("events %v", h.eventReasons())
	}
	h.expectOnly(sha(iso) + ".iso")
}

func scenarioIntervalRevalidation(t *testing.T, b backend) {
	v1, v2 := makeISO(testISOSize, 3), makeISO(testISOSize, 4)
	h := newHarness(t, b, v1)
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeUploaded)

	h.clock.Step(61 * time.Minute)
	need, rr := h.pass()
	if !need.Needed || !need.Conditional {
		t.Fatalf("need %+v", need)
	}
	h.expectOutcome(rr, OutcomeUnchanged)
	if h.server.condReqs != 1 || !h.status().CheckedAt.Time.Equal(h.clock.Now()) {
		t.Fatalf("conditional requests %d, checkedAt %v", h.server.condReqs, h.status().CheckedAt)
	}

	h.server.set(v2, "")
	h.clock.Step(61 * time.Minute)
	_, rr = h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	st := h.status()
	if st.SHA256 != sha(v2) || len(st.History) != 1 {
		// retainVersions=1: the old version is pruned right away (no VM uses it)
		t.Fatalf("status %+v", st)
	}
	h.expectOnly(sha(v2) + ".iso")
	if !contains(h.eventReasons(), afv1.ReasonISOPruned) {
		t.Fatalf("events %v", h.eventReasons())
	}

	// A different length is known to be new content from the headers: one request streams it.
	v3 := makeISO(testISOSize+4096, 5)
	h.server.set(v3, "")
	h.clock.Step(61 * time.Minute)
	before := h.server.requests
	_, rr = h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	if h.server.requests != before+1 || h.status().SHA256 != sha(v3) {
		t.Fatalf("requests +%d, sha %s", h.server.requests-before, h.status().SHA256)
	}
}

func scenarioIgnoredValidators(t *testing.T, b backend) {
	iso := makeISO(testISOSize, 5)
	h := newHarness(t, b, iso)
	h.pool.Spec.ISO.RetainVersions = 3
	h.server.set(nil, "ignoreValidators")
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	before := h.server.requests
	h.clock.Step(2 * time.Hour)
	_, rr = h.pass()
	h.expectOutcome(rr, OutcomeUnchanged)
	if h.server.requests != before+1 {
		t.Fatalf("unchanged bytes took %d requests", h.server.requests-before)
	}
	// Changed bytes of the same size: hashed once, then downloaded again into the upload.
	v2 := makeISO(testISOSize, 6)
	h.server.set(v2, "ignoreValidators")
	h.clock.Step(2 * time.Hour)
	_, rr = h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	if st := h.status(); st.SHA256 != sha(v2) || len(st.History) != 2 || st.History[1].SHA256 != sha(iso) {
		t.Fatalf("status %+v", st)
	}
}

func scenarioBogus304(t *testing.T, b backend) {
	h := newHarness(t, b, makeISO(testISOSize, 7))
	h.server.set(nil, "noValidators")
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	if st := h.status(); st.ETag != "" || st.LastModified != "" {
		t.Fatalf("validators recorded: %+v", st)
	}
	h.server.set(nil, "bogus304")
	h.clock.Step(2 * time.Hour)
	_, rr = h.pass()
	h.expectOutcome(rr, OutcomeFailed)
	if h.cond.Reason != afv1.ReasonDownloadFailed || !strings.Contains(rr.Err.Error(), "304") {
		t.Fatalf("condition %+v err %v", h.cond, rr.Err)
	}
}

func scenarioRepairMissing(t *testing.T, b backend) {
	iso := makeISO(testISOSize, 8)
	h := newHarness(t, b, iso)
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	if err := b.client.DeleteFile(t.Context(), b.datacenter, h.status().Path); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(2 * time.Hour)
	_, rr = h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	if h.server.condReqs != 0 {
		t.Fatal("a missing file must be fetched unconditionally")
	}
	h.expectOnly(sha(iso) + ".iso")
}

func scenarioForceRefresh(t *testing.T, b backend) {
	iso := makeISO(testISOSize, 9)
	h := newHarness(t, b, iso)
	h.pass()
	h.pool.Annotations = map[string]string{afv1.AnnotationForceISORefresh: "now-please"}
	need, rr := h.pass()
	if need.Why != NeedForceRefresh || need.Conditional {
		t.Fatalf("need %+v", need)
	}
	h.expectOutcome(rr, OutcomeReused)
	if h.status().ForceRefreshToken != "now-please" || h.server.condReqs != 0 {
		t.Fatalf("token %q condReqs %d", h.status().ForceRefreshToken, h.server.condReqs)
	}
	if need, _ := h.pass(); need.Needed {
		t.Fatalf("handled token still triggers: %+v", need)
	}
}

func scenarioFailedDownloads(t *testing.T, b backend) {
	v1, v2 := makeISO(testISOSize, 10), makeISO(testISOSize, 11)
	h := newHarness(t, b, v1)
	h.pass()
	cached := h.status()
	for _, mode := range []string{"404", "500", "slow", "truncate"} {
		h.server.set(v2, mode)
		h.pool.Annotations = map[string]string{afv1.AnnotationForceISORefresh: mode}
		// Only the stalled download waits for the idle timeout; a short one elsewhere would fail a
		// healthy download on a busy machine.
		h.cache.idle = 30 * time.Second
		if mode == "slow" {
			h.cache.idle = 300 * time.Millisecond
		}
		_, rr := h.pass()
		h.expectOutcome(rr, OutcomeFailed)
		if h.cond.Status != "False" || h.cond.Reason != afv1.ReasonDownloadFailed {
			t.Fatalf("%s: condition %+v", mode, h.cond)
		}
		st := h.status()
		if st.Path != cached.Path || st.SHA256 != cached.SHA256 || st.ForceRefreshToken != "" || !strings.Contains(st.LastError, "DownloadFailed") {
			t.Fatalf("%s: status changed on failure: %+v", mode, st)
		}
		if !strings.Contains(h.cond.Message, cached.Path) {
			t.Fatalf("%s: message should say the cached ISO is still used: %s", mode, h.cond.Message)
		}
		// Nothing promoted. The simulator may finish writing an aborted upload's temporary file after
		// the client deleted it; Prune removes such leftovers once stale (checked below).
		h.expectCached(sha(v1) + ".iso")
		if h.events[len(h.events)-1].Reason != afv1.ReasonISORefreshFailed || h.events[len(h.events)-1].Type != "Warning" {
			t.Fatalf("%s: events %v", mode, h.eventReasons())
		}
	}
	if !strings.Contains(h.errs[2].Error(), "no data received") {
		t.Fatalf("slow download error: %v", h.errs[2])
	}
	// Recovery: the failure stays visible for one successful check, then clears.
	h.server.set(v2, "")
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	if h.cond.Reason != afv1.ReasonCached || h.status().LastError == "" || !strings.Contains(h.cond.Message, "previous refresh failed") {
		t.Fatalf("after recovery: %+v %+v", h.cond, h.status().LastError)
	}
	h.clock.Step(2 * time.Hour)
	_, rr = h.pass()
	h.expectOutcome(rr, OutcomeUnchanged)
	if h.status().LastError != "" {
		t.Fatalf("lastError not cleared: %s", h.status().LastError)
	}
	h.clock.Step(7 * time.Hour)
	h.pass()
	h.expectOnly(sha(v2) + ".iso")
}

func scenarioNotAnISO(t *testing.T, b backend) {
	html := bytes.Repeat([]byte("<html>login required</html>\n"), 4000)
	h := newHarness(t, b, html)
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeFailed)
	if h.cond.Reason != afv1.ReasonNotAnISO || h.status().Path != "" {
		t.Fatalf("condition %+v status %+v", h.cond, h.status())
	}
	// Nothing cached. The simulator may finish writing the aborted upload's temporary file after the
	// client deleted it; once the source serves an ISO again, the next check caches it and Prune
	// removes the stale leftover.
	h.expectCached()
	iso := makeISO(testISOSize, 17)
	h.server.set(iso, "")
	h.clock.Step(7 * time.Hour)
	_, rr = h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	h.expectOnly(sha(iso) + ".iso")
}

func scenarioPruneInUse(t *testing.T, b backend) {
	v1, v2 := makeISO(testISOSize, 12), makeISO(testISOSize, 13)
	h := newHarness(t, b, v1)
	h.pass()
	old := h.status().Path
	remove := b.attach(t, old)
	h.server.set(v2, "")
	h.pool.Annotations = map[string]string{afv1.AnnotationForceISORefresh: "1"}
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	st := h.status()
	if len(st.History) != 2 || st.History[1].Path != old || !contains(h.eventReasons(), afv1.ReasonISOPruneDeferred) {
		t.Fatalf("history %+v events %v", st.History, h.eventReasons())
	}
	if need := Decide(h.clock.Now(), h.pool, h.source()); !need.PrunePending {
		t.Fatalf("prune should be pending: %+v", need)
	}
	h.expectOnly(sortedNames(sha(v1)+".iso", sha(v2)+".iso")...)
	remove()
	h.pass() // nothing to refresh; the prune retries
	if st := h.status(); len(st.History) != 1 || st.History[0].SHA256 != sha(v2) || !contains(h.eventReasons(), afv1.ReasonISOPruned) {
		t.Fatalf("history %+v events %v", st.History, h.eventReasons())
	}
	h.expectOnly(sha(v2) + ".iso")
}

func scenarioPruneDeleteFails(t *testing.T, b backend) {
	v1, v2 := makeISO(testISOSize, 14), makeISO(testISOSize, 15)
	h := newHarness(t, b, v1)
	h.pass()
	old := h.status().Path
	h.server.set(v2, "")
	h.pool.Annotations = map[string]string{afv1.AnnotationForceISORefresh: "1"}
	b.failDeletes(t, 1)
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	st := h.status()
	if len(st.History) != 2 || st.History[1].Path != old || st.History[1].PruneError == "" || !contains(h.eventReasons(), afv1.ReasonISOPruneFailed) {
		t.Fatalf("history %+v events %v", st.History, h.eventReasons())
	}
	h.pass()
	if st := h.status(); len(st.History) != 1 || !contains(h.eventReasons(), afv1.ReasonISOPruned) {
		t.Fatalf("history %+v", st.History)
	}
	h.expectOnly(sha(v2) + ".iso")
}

func scenarioStaleTemps(t *testing.T, b backend) {
	iso := makeISO(testISOSize, 16)
	h := newHarness(t, b, iso)
	h.pass()
	prefix := PathPrefix(h.pool)
	stale := DatastorePath(b.datastore, prefix, "incoming-"+strings.Repeat("a", 32)+".iso")
	fresh := DatastorePath(b.datastore, prefix, "incoming-"+strings.Repeat("b", 32)+".iso")
	foreign := DatastorePath(b.datastore, prefix, "notes.txt")
	b.put(t, stale, []byte("partial"), h.clock.Now().Add(-7*time.Hour))
	b.put(t, fresh, []byte("partial"), h.clock.Now())
	b.put(t, foreign, []byte("keep me"), h.clock.Now().Add(-700*time.Hour))
	h.pass()
	h.expectOnly(sortedNames(sha(iso)+".iso", "incoming-"+strings.Repeat("b", 32)+".iso", "notes.txt")...)
}

func sortedNames(names ...string) []string {
	out := append([]string(nil), names...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// scenarioUpstreamLeftovers: a pool taken over from upstream agent-forge-operator carries history entries
// without "[datastore] " and upstream's ".partial" uploads in its folder. Entries naming a file of the
// pool's folder are converted and pruned like ours (after the attachment check); others are dropped from
// history and their files kept; ".partial" files are deleted only when older than the grace period and
// attached to no VM.
func scenarioUpstreamLeftovers(t *testing.T, b backend) {
	iso := makeISO(testISOSize, 17)
	h := newHarness(t, b, iso)
	h.pass()
	prefix := PathPrefix(h.pool)
	old := h.clock.Now().Add(-7 * time.Hour)
	hexOf := func(c string) string { return strings.Repeat(c, 64) }
	upstreamOld := DatastorePath(b.datastore, prefix, hexOf("c")+".iso") // upstream's previous image, detached
	b.put(t, upstreamOld, []byte("upstream image"), old)
	foreignDir := "agent-forge/" + h.pool.Namespace + "-other/pool"
	foreign := DatastorePath(b.datastore, foreignDir, hexOf("d")+".iso")
	b.put(t, foreign, []byte("another pool's image"), old)
	mislabelled := DatastorePath(b.datastore, prefix, hexOf("a")+".iso") // its name does not match its digest
	b.put(t, mislabelled, []byte("keep me"), old)
	stalePartial := hexOf("e") + ".iso.agent-forge-iso-123.partial"
	attachedPartial := hexOf("f") + ".iso.agent-forge-iso-456.partial"
	freshPartial := hexOf("b") + ".iso.agent-forge-iso-789.partial"
	b.put(t, DatastorePath(b.datastore, prefix, stalePartial), []byte("partial"), old)
	b.put(t, DatastorePath(b.datastore, prefix, attachedPartial), []byte("partial"), old)
	b.put(t, DatastorePath(b.datastore, prefix, freshPartial), []byte("partial"), h.clock.Now())
	detach := b.attach(t, DatastorePath(b.datastore, prefix, attachedPartial))
	defer detach()

	st := h.status()
	active := st.Path
	st.History = append(st.History,
		afv1.ISOVersion{Path: prefix + "/" + hexOf("c") + ".iso", SHA256: hexOf("c")},
		afv1.ISOVersion{Path: foreignDir + "/" + hexOf("d") + ".iso", SHA256: hexOf("d")},
		afv1.ISOVersion{Path: prefix + "/" + hexOf("a") + ".iso", SHA256: hexOf("9")},
		afv1.ISOVersion{Path: "/" + prefix + "/../" + prefix + "/" + hexOf("c") + ".iso"})
	h.pool.Status.ISO = &st
	h.pass()

	got := h.status()
	if len(got.History) != 1 || got.History[0].Path != active {
		t.Fatalf("history %+v: want only the active %s (the converted entry pruned, the others dropped)", got.History, active)
	}
	if !contains(h.eventReasons(), afv1.ReasonISOPruned) || !contains(h.eventReasons(), afv1.ReasonISOTempCleanedUp) {
		t.Fatalf("events %v: want the converted entry pruned and the stale partial cleaned", h.eventReasons())
	}
	h.expectOnly(sortedNames(sha(iso)+".iso", hexOf("a")+".iso", attachedPartial, freshPartial)...)
	if _, ok := b.read(t, foreign); !ok {
		t.Fatal("a file outside the pool's folder, named by an upstream history entry, was deleted")
	}
}

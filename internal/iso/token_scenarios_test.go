package iso

import (
	"testing"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Token renewals: assisted-service publishes the same image (same status.createdTime) under a URL
// with a new token. Registered with the other scenarios, so they run in memory and on the simulator.
func init() {
	for _, f := range serverFlavours {
		scenarios = append(scenarios,
			struct {
				name string
				run  func(t *testing.T, b backend)
			}{"token renewal downloads nothing (" + f.name + ")", scenarioTokenRenewal(f)})
	}
	scenarios = append(scenarios, []struct {
		name string
		run  func(t *testing.T, b backend)
	}{
		{"an image changed under the same version is downloaded (ETag)", scenarioChangedSameVersion(serverFlavours[0], 0)},
		{"an image changed under the same version is downloaded (image service)", scenarioChangedSameVersion(serverFlavours[1], 0)},
		{"an image changed under the same version is downloaded (per-request date, new length)", scenarioChangedSameVersion(serverFlavours[2], 4096)},
		{"a renewed URL the server refuses keeps the cache and the old URL", scenarioRenewedURLRefused},
	}...)
}

// serverFlavour is how an image server answers revalidations.
type serverFlavour struct {
	name       string
	validators string // see isoServer.validators
	refuseHEAD bool
}

var serverFlavours = []serverFlavour{
	{name: "ETag and Last-Modified"},
	{name: "image service: Last-Modified only", validators: "imageService"},
	{name: "older image service: Last-Modified is the request time", validators: "perRequest"},
	{name: "image service without HEAD", validators: "imageService", refuseHEAD: true},
	{name: "no usable validator, no HEAD", validators: "perRequest", refuseHEAD: true},
}

const renewedToken = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZW5ld2VkIn0.cmVuZXdlZHNpZ25hdHVyZQ"

func scenarioTokenRenewal(f serverFlavour) func(t *testing.T, b backend) {
	return func(t *testing.T, b backend) {
		iso := makeISO(testISOSize, 30)
		h := newHarness(t, b, iso)
		h.server.setValidators(f.validators, f.refuseHEAD)
		_, rr := h.pass()
		h.expectOutcome(rr, OutcomeUploaded)
		first := h.status()
		bodies, bytes, heads := h.server.counters()
		uploads, moves, events := b.uploads(), b.moves(), len(h.events)

		h.renewToken(renewedToken)
		h.clock.Step(time.Minute)
		need, rr := h.pass()
		if need.Why != NeedURLRenewed || !need.Revalidate || !need.Conditional {
			t.Fatalf("need %+v", need)
		}
		h.expectOutcome(rr, OutcomeUnchanged)
		b2, by2, h2 := h.server.counters()
		if h2-heads != 1 {
			t.Errorf("%d HEAD requests, want 1", h2-heads)
		}
		if f.refuseHEAD {
			// HEAD refused: one GET for the first byte at most.
			if b2-bodies > 1 || by2-bytes > 1 {
				t.Errorf("fallback probe read %d bodies, %d bytes; want at most one byte", b2-bodies, by2-bytes)
			}
		} else if b2 != bodies || by2 != bytes {
			t.Errorf("downloaded %d bodies (%d bytes), want none", b2-bodies, by2-bytes)
		}
		if b.uploads() != uploads || b.moves() != moves {
			t.Errorf("%d uploads, %d moves, want none", b.uploads()-uploads, b.moves()-moves)
		}
		st := h.status()
		if st.URLHash != URLHash(h.url) || st.URLHash == first.URLHash {
			t.Errorf("URL hash not renewed: %s (first %s)", st.URLHash, first.URLHash)
		}
		if st.URL != first.URL || st.Path != first.Path || st.SHA256 != first.SHA256 || !st.UploadedAt.Equal(first.UploadedAt) ||
			len(st.History) != 1 || !st.CheckedAt.Time.Equal(h.clock.Now()) {
			t.Errorf("status %+v, first %+v", st, first)
		}
		if h.cond.Reason != afv1.ReasonCached || len(h.events) != events {
			t.Errorf("condition %+v, new events %v", h.cond, h.eventReasons()[events:])
		}
		h.expectOnly(sha(iso) + ".iso")
		if need, _ := h.pass(); need.Needed {
			t.Errorf("still needed after the renewal was recorded: %+v", need)
		}
	}
}

// scenarioChangedSameVersion: the bytes behind the URL changed (grow bytes longer) although the
// InfraEnv's createdTime did not; the server's validators say so and the new image is downloaded.
func scenarioChangedSameVersion(f serverFlavour, grow int) func(t *testing.T, b backend) {
	return func(t *testing.T, b backend) {
		v1, v2 := makeISO(testISOSize, 33), makeISO(testISOSize+grow, 34)
		h := newHarness(t, b, v1)
		h.pool.Spec.ISO.RetainVersions = 2
		h.server.setValidators(f.validators, f.refuseHEAD)
		_, rr := h.pass()
		h.expectOutcome(rr, OutcomeUploaded)
		bodies, _, _ := h.server.counters()

		h.server.set(v2, "")
		h.renewToken(renewedToken)
		h.clock.Step(time.Minute)
		need, rr := h.pass()
		if need.Why != NeedURLRenewed {
			t.Fatalf("need %+v", need)
		}
		h.expectOutcome(rr, OutcomeUploaded) // expectMoves checked one upload and one move
		if b2, _, _ := h.server.counters(); b2-bodies != 1 {
			t.Errorf("%d downloads, want 1", b2-bodies)
		}
		st := h.status()
		if st.SHA256 != sha(v2) || st.URLHash != URLHash(h.url) || len(st.History) != 2 || st.History[1].SHA256 != sha(v1) {
			t.Errorf("status %+v", st)
		}
		h.expectOnly(sortedNames(sha(v1)+".iso", sha(v2)+".iso")...)
	}
}

// scenarioRenewedURLRefused: the new URL answers 404; nothing is recorded, so the next pass retries.
func scenarioRenewedURLRefused(t *testing.T, b backend) {
	iso := makeISO(testISOSize, 35)
	h := newHarness(t, b, iso)
	h.server.setValidators("imageService", false)
	h.pass()
	first := h.status()
	h.server.set(nil, "404")
	h.renewToken(renewedToken)
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeFailed)
	st := h.status()
	if h.cond.Reason != afv1.ReasonDownloadFailed || st.URLHash != first.URLHash || st.Path != first.Path {
		t.Errorf("condition %+v status %+v", h.cond, st)
	}
	if need := Decide(h.clock.Now(), h.pool, h.source()); need.Why != NeedURLRenewed {
		t.Errorf("the renewal is not retried: %+v", need)
	}
	h.expectOnly(sha(iso) + ".iso")
}

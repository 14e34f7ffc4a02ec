package iso

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

const testToken = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJpbmZyYWVudiJ9.c2VjcmV0c2lnbmF0dXJl"

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"https://user:pw@img.example.com/images/abc/minimal.iso?api_key=" + testToken + "&arch=x86_64#frag": "https://img.example.com/images/abc/minimal.iso",
		"https://img.example.com/byapikey/" + testToken + "/4.16/x86_64/minimal.iso":                        "https://img.example.com/byapikey/REDACTED/4.16/x86_64/minimal.iso",
		"https://img.example.com/bytoken/opaque-token-value/4.16/x86_64/full.iso":                           "https://img.example.com/bytoken/REDACTED/4.16/x86_64/full.iso",
		"https://img.example.com/x/" + testToken + "/full.iso":                                              "https://img.example.com/x/REDACTED/full.iso",
		"http://127.0.0.1:8080/iso": "http://127.0.0.1:8080/iso",
		"not a url":                 "<invalid URL>",
	}
	for in, want := range cases {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestURLHashDistinguishesTokens(t *testing.T) {
	a, b := URLHash("https://h/p?api_key=one"), URLHash("https://h/p?api_key=two")
	if a == b || len(a) != 64 {
		t.Fatalf("hashes %q %q", a, b)
	}
}

func TestRedactorScrubsNetHTTPErrors(t *testing.T) {
	raw := "https://user:hunter22@img.example.com/byapikey/" + testToken + "/minimal.iso?api_key=" + testToken
	r := newRedactor(raw)
	redirect := "https://bucket.example.com/obj?X-Amz-Signature=abcdef0123456789"
	netErr := &url.Error{Op: "Get", URL: redirect, Err: errors.New("dial tcp: connection refused")}
	err := r.wrap("GET "+RedactURL(raw), fmt.Errorf("wrapped: %w", netErr))
	for _, secret := range []string{testToken, "hunter22", "abcdef0123456789", "api_key="} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error leaks %q: %s", secret, err)
		}
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error lost its cause: %s", err)
	}
	if got := r.scrub("failed " + raw); strings.Contains(got, testToken) || !strings.Contains(got, "img.example.com") {
		t.Fatalf("scrub: %s", got)
	}
}

// makeISO returns size deterministic bytes carrying the ISO 9660 magic; seed varies the content.
func makeISO(size int, seed byte) []byte {
	b := make([]byte, size)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	if size >= isoMinSize {
		b[isoMagicOffset-1] = 1
		copy(b[isoMagicOffset:], isoMagic)
	}
	return b
}

func TestSourceReader(t *testing.T) {
	iso := makeISO(200_000, 1)
	t.Run("valid ISO in tiny reads", func(t *testing.T) {
		src := newSourceReader(iotest.OneByteReader(bytes.NewReader(iso[:40_000])), 40_000, nil)
		if _, err := io.Copy(io.Discard, src); err != nil {
			t.Fatal(err)
		}
		if err := src.finish(); err != nil || !src.sniffer.valid() {
			t.Fatalf("finish=%v", err)
		}
	})
	t.Run("digest matches", func(t *testing.T) {
		src := newSourceReader(bytes.NewReader(iso), -1, nil)
		_, _ = io.Copy(io.Discard, src)
		if src.finish() != nil || src.digest() != sha(iso) || src.n != int64(len(iso)) {
			t.Fatal("digest/size mismatch")
		}
	})
	t.Run("not an ISO is refused once the magic position passed", func(t *testing.T) {
		bad := bytes.Repeat([]byte("x"), 100_000)
		src := newSourceReader(bytes.NewReader(bad), -1, nil)
		n, err := io.Copy(io.Discard, src)
		if !errors.Is(err, errNotAnISO) || n > 64<<10 {
			t.Fatalf("n=%d err=%v", n, err)
		}
	})
	t.Run("too short to be an ISO", func(t *testing.T) {
		src := newSourceReader(bytes.NewReader(iso[:1000]), -1, nil)
		if _, err := io.Copy(io.Discard, src); !errors.Is(err, errNotAnISO) {
			t.Fatalf("err=%v", err)
		}
	})
	t.Run("truncated body", func(t *testing.T) {
		src := newSourceReader(bytes.NewReader(iso[:50_000]), int64(len(iso)), nil)
		if _, err := io.Copy(io.Discard, src); !errors.Is(err, io.ErrUnexpectedEOF) || src.srcErr == nil {
			t.Fatalf("err=%v", err)
		}
	})
	t.Run("consumer stopping early is detected", func(t *testing.T) {
		src := newSourceReader(bytes.NewReader(iso), -1, nil)
		_, _ = io.CopyN(io.Discard, src, 100_000)
		if err := src.finish(); !errors.Is(err, errConsumerStopped) {
			t.Fatalf("err=%v", err)
		}
	})
	t.Run("LooksLikeISO", func(t *testing.T) {
		if !LooksLikeISO(iso) || LooksLikeISO(iso[:isoMinSize-1]) || LooksLikeISO(make([]byte, 40_000)) {
			t.Fatal("LooksLikeISO wrong")
		}
	})
}

func TestPaths(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	p := CachedISOPath("iso-ds", "agent-forge/ns/pool", digest)
	if p != "[iso-ds] agent-forge/ns/pool/"+digest+".iso" {
		t.Fatal(p)
	}
	for path, want := range map[string]bool{
		p: true,
		"[other] agent-forge/ns/pool/" + digest + ".iso":                   false,
		"[iso-ds] agent-forge/ns/pool2/" + digest + ".iso":                 false,
		"[iso-ds] agent-forge/ns/pool/sub/" + digest + ".iso":              false,
		"[iso-ds] agent-forge/ns/pool/" + digest[:63] + ".iso":             false,
		"[iso-ds] agent-forge/ns/pool/rhcos.iso":                           false,
		"[iso-ds] agent-forge/ns/pool/" + strings.ToUpper(digest) + ".iso": false,
	} {
		if got := IsCachedISOPath(path, "iso-ds", "agent-forge/ns/pool"); got != want {
			t.Errorf("IsCachedISOPath(%q)=%v", path, got)
		}
	}
	tmp, err := newTempPath("iso-ds", "agent-forge/ns/pool")
	if err != nil || !isTempPath(tmp, "iso-ds", "agent-forge/ns/pool") || IsCachedISOPath(tmp, "iso-ds", "agent-forge/ns/pool") {
		t.Fatalf("temp path %q", tmp)
	}
	pool := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool"}}
	if PathPrefix(pool) != "agent-forge/ns/pool" {
		t.Fatal(PathPrefix(pool))
	}
	pool.Spec.ISO.PathPrefix = "isos/shared/"
	if PathPrefix(pool) != "isos/shared" {
		t.Fatal(PathPrefix(pool))
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	url := "https://img.example.com/images/x/minimal.iso?api_key=" + testToken
	created := metav1.NewTime(now.Add(-48 * time.Hour))
	digest := strings.Repeat("0", 64)
	cached := func() *afv1.VsphereAgentPool {
		p := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool"}}
		p.Spec.VSphere.ISODatastore = "iso-ds"
		p.Spec.ISO.CheckInterval = &metav1.Duration{Duration: time.Hour}
		checked := metav1.NewTime(now.Add(-20 * time.Minute))
		p.Status.ISO = &afv1.ISOStatus{URLHash: URLHash(url), URL: RedactURL(url), Path: CachedISOPath("iso-ds", "agent-forge/ns/pool", digest),
			SHA256: digest, CheckedAt: &checked, SourceCreatedTime: created.DeepCopy()}
		return p
	}
	src := Source{URL: url, CreatedTime: &created}
	cases := []struct {
		name   string
		mutate func(*afv1.VsphereAgentPool, *Source)
		want   RefreshNeed
	}{
		{"infraenv without URL waits", func(_ *afv1.VsphereAgentPool, s *Source) { s.URL = "" }, RefreshNeed{Why: NeedInfraEnvNotReady}},
		{"nothing cached downloads unconditionally", func(p *afv1.VsphereAgentPool, _ *Source) { p.Status.ISO = nil }, RefreshNeed{Needed: true, Why: NeedNothingCached}},
		{"URL change without a recorded redacted URL downloads unconditionally", func(p *afv1.VsphereAgentPool, s *Source) {
			p.Status.ISO.URL = ""
			s.URL += "x"
		}, RefreshNeed{Needed: true, Why: NeedURLChanged}},
		{"token-only change revalidates", func(_ *afv1.VsphereAgentPool, s *Source) { s.URL += "x" },
			RefreshNeed{Needed: true, Conditional: true, Revalidate: true, Why: NeedURLRenewed}},
		{"token-only change in the path revalidates", func(p *afv1.VsphereAgentPool, s *Source) {
			old := "https://img.example.com/byapikey/" + testToken + "/4.20/x86_64/minimal.iso"
			p.Status.ISO.URLHash, p.Status.ISO.URL = URLHash(old), RedactURL(old)
			s.URL = "https://img.example.com/byapikey/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJuZXcifQ.bmV3c2lnbmF0dXJl/4.20/x86_64/minimal.iso"
		}, RefreshNeed{Needed: true, Conditional: true, Revalidate: true, Why: NeedURLRenewed}},
		{"another host or path downloads unconditionally", func(_ *afv1.VsphereAgentPool, s *Source) {
			s.URL = "https://other.example.com/images/x/minimal.iso?api_key=" + testToken
		}, RefreshNeed{Needed: true, Why: NeedURLChanged}},
		{"URL and createdTime change download unconditionally", func(_ *afv1.VsphereAgentPool, s *Source) {
			t := metav1.NewTime(now)
			s.URL, s.CreatedTime = s.URL+"x", &t
		}, RefreshNeed{Needed: true, Why: NeedURLChanged}},
		{"URL change without any createdTime downloads unconditionally", func(p *afv1.VsphereAgentPool, s *Source) {
			p.Status.ISO.SourceCreatedTime, s.CreatedTime = nil, nil
			s.URL += "x"
		}, RefreshNeed{Needed: true, Why: NeedURLChanged}},
		{"force token wins over a token renewal", func(p *afv1.VsphereAgentPool, s *Source) {
			p.Annotations = map[string]string{afv1.AnnotationForceISORefresh: "3"}
			s.URL += "x"
		}, RefreshNeed{Needed: true, Why: NeedForceRefresh}},
		{"createdTime change downloads unconditionally", func(_ *afv1.VsphereAgentPool, s *Source) {
			t := metav1.NewTime(now)
			s.CreatedTime = &t
		}, RefreshNeed{Needed: true, Why: NeedSourceRecreated}},
		{"prefix change downloads unconditionally", func(p *afv1.VsphereAgentPool, _ *Source) { p.Spec.ISO.PathPrefix = "elsewhere" }, RefreshNeed{Needed: true, Why: NeedLocationChanged}},
		{"datastore change downloads unconditionally", func(p *afv1.VsphereAgentPool, _ *Source) { p.Spec.VSphere.ISODatastore = "other" }, RefreshNeed{Needed: true, Why: NeedLocationChanged}},
		{"new force token downloads unconditionally", func(p *afv1.VsphereAgentPool, _ *Source) {
			p.Annotations = map[string]string{afv1.AnnotationForceISORefresh: "2"}
		}, RefreshNeed{Needed: true, Why: NeedForceRefresh}},
		{"handled force token is ignored", func(p *afv1.VsphereAgentPool, _ *Source) {
			p.Annotations = map[string]string{afv1.AnnotationForceISORefresh: "2"}
			p.Status.ISO.ForceRefreshToken = "2"
		}, RefreshNeed{Why: NeedUpToDate, RequeueAfter: 40 * time.Minute}},
		{"interval elapsed revalidates conditionally", func(p *afv1.VsphereAgentPool, _ *Source) {
			t := metav1.NewTime(now.Add(-time.Hour))
			p.Status.ISO.CheckedAt = &t
		}, RefreshNeed{Needed: true, Conditional: true, Why: NeedIntervalElapsed}},
		{"never checked revalidates", func(p *afv1.VsphereAgentPool, _ *Source) { p.Status.ISO.CheckedAt = nil }, RefreshNeed{Needed: true, Conditional: true, Why: NeedIntervalElapsed}},
		{"default interval is one hour", func(p *afv1.VsphereAgentPool, _ *Source) { p.Spec.ISO.CheckInterval = nil }, RefreshNeed{Why: NeedUpToDate, RequeueAfter: 40 * time.Minute}},
		{"up to date requeues at the interval", func(*afv1.VsphereAgentPool, *Source) {}, RefreshNeed{Why: NeedUpToDate, RequeueAfter: 40 * time.Minute}},
		{"history beyond retention is prune-pending", func(p *afv1.VsphereAgentPool, _ *Source) {
			p.Status.ISO.History = make([]afv1.ISOVersion, 3)
		}, RefreshNeed{Why: NeedUpToDate, RequeueAfter: 40 * time.Minute, PrunePending: true}},
		{"failed prune is prune-pending", func(p *afv1.VsphereAgentPool, _ *Source) {
			p.Status.ISO.History = []afv1.ISOVersion{{}, {PruneError: "busy"}}
		}, RefreshNeed{Why: NeedUpToDate, RequeueAfter: 40 * time.Minute, PrunePending: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, s := cached(), src
			tc.mutate(p, &s)
			if got := Decide(now, p, s); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSelectPrunable(t *testing.T) {
	h := []afv1.ISOVersion{{Path: "a"}, {Path: "b"}, {Path: "c"}, {Path: "d"}}
	cases := []struct {
		name   string
		active string
		retain int
		want   []int
	}{
		{"keeps the newest", "a", 2, []int{2, 3}},
		{"never the active one", "d", 2, []int{2}},
		{"nothing beyond retention", "a", 4, nil},
		{"default retention", "a", 0, []int{2, 3}},
		{"retain one", "a", 1, []int{1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SelectPrunable(h, tc.active, tc.retain); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

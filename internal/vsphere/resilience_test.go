package vsphere_test

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"context"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

const hungPassword = "hung-vcenter-pw-5e1f"

// slack is what a loaded test machine may add to a deadline before a call returns.
const slack = 3 * time.Second

func newFakeClock() *clocktesting.FakePassiveClock {
	return clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func wantIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("want an error that Is %q, got %v", target, err)
	}
	if strings.Contains(err.Error(), hungPassword) {
		t.Fatalf("error leaks the password: %v", err)
	}
}

func circuitGauge(t *testing.T, server string) float64 {
	t.Helper()
	host := strings.TrimSuffix(strings.TrimPrefix(server, "https://"), "/sdk")
	return testutil.ToFloat64(metrics.VCenterCircuitOpen.WithLabelValues(host))
}

// TestHungVCenterEndsWithinDeadlineAndOpensItsBreaker: logins to a vCenter that never answers end within
// their deadline with ErrTimeout; after Threshold of them the vCenter's breaker opens and calls fail fast
// with ErrCircuitOpen without reaching it; after the cool-down one probe goes through (and re-opens the
// breaker when it fails too). A working vCenter behind the same session cache is not affected.
func TestHungVCenterEndsWithinDeadlineAndOpensItsBreaker(t *testing.T) {
	healthy := startSim(t)
	muted, requests := mutedTLS(t)
	silent, accepted := silentTCP(t)
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: muted.Certificate().Raw})

	for _, tc := range []struct {
		name    string
		server  string
		reached *atomic.Int32 // connections or requests the hung server saw
	}{
		{"TLS handshake never completes", "https://" + silent + "/sdk", accepted},
		{"handshake completes, no response ever", muted.URL + "/sdk", requests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			const threshold = 3
			sessions := vsphere.NewSessions(vsphere.SessionOptions{
				TLSHandshakeTimeout: 300 * time.Millisecond, ResponseHeaderTimeout: 300 * time.Millisecond,
				// A login deadline far beyond the transport's bounds: each login must end by those.
				LoginTimeout: 20 * time.Second, Clock: clk,
				Breaker: vsphere.BreakerOptions{Threshold: threshold, CoolDown: 30 * time.Second},
			})
			t.Cleanup(func() { sessions.Close(context.Background()) })
			creds := vsphere.Credentials{Server: tc.server, Username: "u", Password: hungPassword, CABundle: bundle}
			ctx := testContext(t)

			for i := range threshold {
				start := time.Now()
				_, err := sessions.Get(ctx, creds)
				if took := time.Since(start); took > 300*time.Millisecond+slack {
					t.Fatalf("login %d took %v", i, took)
				}
				wantIs(t, err, vsphere.ErrTimeout)
				if r := vsphere.Reason(err); r != afv1.ReasonVCenterTimeout {
					t.Fatalf("reason %q, want %q", r, afv1.ReasonVCenterTimeout)
				}
			}
			if st := sessions.BreakerState(creds.Server); st != vsphere.BreakerOpen || circuitGauge(t, creds.Server) != 1 {
				t.Fatalf("after %d timeouts: breaker %s, gauge %v; want Open, 1", threshold, st, circuitGauge(t, creds.Server))
			}

			before := tc.reached.Load()
			start := time.Now()
			_, err := sessions.Get(ctx, creds)
			wantIs(t, err, vsphere.ErrCircuitOpen)
			if took := time.Since(start); took > slack {
				t.Fatalf("an open breaker took %v to refuse", took)
			}
			if vsphere.Reason(err) != afv1.ReasonVCenterCircuitOpen || tc.reached.Load() != before {
				t.Fatalf("reason %q, server reached %d more times; want %q, 0", vsphere.Reason(err), tc.reached.Load()-before, afv1.ReasonVCenterCircuitOpen)
			}

			// The working vCenter is served meanwhile.
			c, err := sessions.Get(ctx, healthy.Credentials)
			if err != nil {
				t.Fatalf("login to the healthy vCenter while the other's breaker is open: %v", err)
			}
			if _, err := c.FindVM(ctx, vcsim.Datacenter, uuid.NewString(), ""); !vsphere.IsNotFound(err) {
				t.Fatalf("FindVM on the healthy vCenter: %v", err)
			}
			if st := sessions.BreakerState(healthy.Credentials.Server); st != vsphere.BreakerClosed {
				t.Fatalf("healthy vCenter's breaker: %s", st)
			}

			// After the cool-down one probe reaches the hung server, fails, and the breaker opens again.
			clk.SetTime(clk.Now().Add(30 * time.Second))
			if st := sessions.BreakerState(creds.Server); st != vsphere.BreakerHalfOpen {
				t.Fatalf("after the cool-down: %s, want HalfOpen", st)
			}
			_, err = sessions.Get(ctx, creds)
			wantIs(t, err, vsphere.ErrTimeout)
			if tc.reached.Load() == before {
				t.Fatal("the half-open probe did not reach the server")
			}
			if st := sessions.BreakerState(creds.Server); st != vsphere.BreakerOpen {
				t.Fatalf("after a failed probe: %s, want Open", st)
			}
		})
	}
}

// TestLoginRunsOnItsOwnDeadline: a caller whose context ends first returns then; the login goes on for
// the other callers, bounded by LoginTimeout, not by the response header timeout or a caller.
func TestLoginRunsOnItsOwnDeadline(t *testing.T) {
	muted, _ := mutedTLS(t)
	sessions := vsphere.NewSessions(vsphere.SessionOptions{ResponseHeaderTimeout: time.Minute, LoginTimeout: time.Second, Clock: newFakeClock()})
	t.Cleanup(func() { sessions.Close(context.Background()) })
	creds := vsphere.Credentials{Server: muted.URL, Username: "u", Password: hungPassword, Insecure: true}

	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	patient := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := sessions.Get(testContext(t), creds)
		patient <- err
	}()
	_, err := sessions.Get(short, creds)
	wantIs(t, err, vsphere.ErrTimeout)
	if took := time.Since(start); took > 100*time.Millisecond+slack {
		t.Fatalf("the short caller returned after %v", took)
	}
	err = <-patient
	wantIs(t, err, vsphere.ErrTimeout)
	if took := time.Since(start); took < time.Second || took > time.Second+slack {
		t.Fatalf("the shared login ended after %v, want its own 1 s deadline", took)
	}
}

// TestDarkVCenterMidSessionTimesOutAndRecovers: a logged-in vCenter stops answering (its traffic is held
// by a relay): calls end within the response header timeout with ErrTimeout, the breaker opens, calls
// fail fast; once it answers again the probe after the cool-down closes the breaker.
func TestDarkVCenterMidSessionTimesOutAndRecovers(t *testing.T) {
	env := startSim(t)
	r := newRelay(t, env.URL.Host)
	creds := env.Credentials
	creds.Server = "https://" + r.addr() + "/sdk"
	clk := newFakeClock()
	const threshold = 3
	sessions := vsphere.NewSessions(vsphere.SessionOptions{
		TLSHandshakeTimeout: 300 * time.Millisecond, ResponseHeaderTimeout: 300 * time.Millisecond, Clock: clk,
		Breaker: vsphere.BreakerOptions{Threshold: threshold, CoolDown: 30 * time.Second},
	})
	t.Cleanup(func() { sessions.Close(context.Background()) })
	ctx := testContext(t)
	c, err := sessions.Get(ctx, creds)
	if err != nil {
		t.Fatal(err)
	}
	find := func() error {
		_, err := c.FindVM(ctx, vcsim.Datacenter, uuid.NewString(), "")
		return err
	}
	if err := find(); !vsphere.IsNotFound(err) {
		t.Fatalf("FindVM before the outage: %v", err)
	}

	r.freeze()
	timeouts := 0
	for {
		start := time.Now()
		err := find()
		if errors.Is(err, vsphere.ErrCircuitOpen) {
			if took := time.Since(start); took > slack {
				t.Fatalf("an open breaker took %v to refuse", took)
			}
			break
		}
		wantIs(t, err, vsphere.ErrTimeout)
		if took := time.Since(start); took > 300*time.Millisecond+slack {
			t.Fatalf("a call to a dark vCenter took %v", took)
		}
		if timeouts++; timeouts > threshold {
			t.Fatalf("%d timeouts and the breaker is still closed", timeouts)
		}
	}
	if timeouts != threshold || circuitGauge(t, creds.Server) != 1 {
		t.Fatalf("breaker opened after %d timeouts (gauge %v), want %d (1)", timeouts, circuitGauge(t, creds.Server), threshold)
	}

	r.thaw()
	if err := find(); !errors.Is(err, vsphere.ErrCircuitOpen) {
		t.Fatalf("during the cool-down: %v, want ErrCircuitOpen", err)
	}
	clk.SetTime(clk.Now().Add(30 * time.Second))
	if err := find(); !vsphere.IsNotFound(err) {
		t.Fatalf("probe after the outage: %v", err)
	}
	if st := sessions.BreakerState(creds.Server); st != vsphere.BreakerClosed || circuitGauge(t, creds.Server) != 0 {
		t.Fatalf("after a successful probe: %s, gauge %v", st, circuitGauge(t, creds.Server))
	}
}

// gatedLogins counts Login calls and holds each until the gate opens.
type gatedLogins struct {
	gate    chan struct{}
	reached chan struct{}
	logins  atomic.Int32
}

func (g *gatedLogins) wrap(next soap.RoundTripper) soap.RoundTripper {
	return vsphere.RoundTripperFunc(func(ctx context.Context, req, res soap.HasFault) error {
		if vsphere.MethodName(req) == "Login" {
			g.logins.Add(1)
			select {
			case g.reached <- struct{}{}:
			default:
			}
			<-g.gate
		}
		return next.RoundTrip(ctx, req, res)
	})
}

// TestConcurrentLoginsAreOneLogin: callers arriving while a login runs wait for it; the caller that
// started it giving up does not cancel it for the others.
func TestConcurrentLoginsAreOneLogin(t *testing.T) {
	env := startSim(t)
	g := &gatedLogins{gate: make(chan struct{}), reached: make(chan struct{}, 1)}
	sessions := vsphere.NewSessions(vsphere.SessionOptions{WrapRoundTripper: g.wrap})
	t.Cleanup(func() { sessions.Close(context.Background()) })

	first, cancelFirst := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := sessions.Get(first, env.Credentials)
		firstErr <- err
	}()
	select {
	case <-g.reached:
	case <-time.After(30 * time.Second):
		t.Fatal("no login started")
	}
	const callers = 8
	clients := make([]vsphere.Client, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { clients[i], errs[i] = sessions.Get(testContext(t), env.Credentials) })
	}
	cancelFirst()
	select {
	case err := <-firstErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the first caller, cancelled: %v", err)
		}
	case <-time.After(slack):
		t.Fatal("the cancelled first caller still waits for the login")
	}
	close(g.gate)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || clients[i] != clients[0] {
			t.Fatalf("caller %d: %v (same client: %v)", i, errs[i], clients[i] == clients[0])
		}
	}
	if n := g.logins.Load(); n != 1 {
		t.Fatalf("%d logins, want 1", n)
	}
}

// TestConcurrentRenewalsAreOneLogin: when vCenter forgets the session, concurrent calls share one re-login.
func TestConcurrentRenewalsAreOneLogin(t *testing.T) {
	env := startSim(t)
	calls := &callCounter{byMethod: map[string]int{}}
	sessions := vsphere.NewSessions(vsphere.SessionOptions{WrapRoundTripper: calls.wrap})
	t.Cleanup(func() { sessions.Close(context.Background()) })
	ctx := testContext(t)
	c, err := sessions.Get(ctx, env.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindVM(ctx, vcsim.Datacenter, uuid.NewString(), ""); !vsphere.IsNotFound(err) {
		t.Fatal(err)
	}
	admin, err := env.Login(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Logout(context.Background()) }()
	var sm mo.SessionManager
	if err := admin.RetrieveOne(ctx, *admin.ServiceContent.SessionManager, []string{"sessionList", "currentSession"}, &sm); err != nil {
		t.Fatal(err)
	}
	var victims []string
	for _, s := range sm.SessionList {
		if s.Key != sm.CurrentSession.Key {
			victims = append(victims, s.Key)
		}
	}
	if err := admin.SessionManager.TerminateSession(ctx, victims); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = c.FindVM(ctx, vcsim.Datacenter, uuid.NewString(), "") })
	}
	wg.Wait()
	for i, err := range errs {
		if !vsphere.IsNotFound(err) {
			t.Fatalf("call %d after the session was lost: %v", i, err)
		}
	}
	if _, byMethod := calls.snapshot(); byMethod["Login"] != 2 {
		t.Fatalf("logins = %d, want 2 (initial + one shared renewal)", byMethod["Login"])
	}
}

// TestCallWithoutDeadlineGetsTheDefault: a caller whose context has no deadline still gets an answer
// from a vCenter that went dark, after CallTimeout.
func TestCallWithoutDeadlineGetsTheDefault(t *testing.T) {
	env := startSim(t)
	r := newRelay(t, env.URL.Host)
	creds := env.Credentials
	creds.Server = "https://" + r.addr() + "/sdk"
	sessions := vsphere.NewSessions(vsphere.SessionOptions{ResponseHeaderTimeout: time.Hour, CallTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { sessions.Close(context.Background()) })
	c, err := sessions.Get(testContext(t), creds)
	if err != nil {
		t.Fatal(err)
	}
	r.freeze()
	start := time.Now()
	_, err = c.FindVM(context.Background(), vcsim.Datacenter, uuid.NewString(), "")
	wantIs(t, err, vsphere.ErrTimeout)
	if took := time.Since(start); took > 300*time.Millisecond+slack {
		t.Fatalf("took %v", took)
	}
}

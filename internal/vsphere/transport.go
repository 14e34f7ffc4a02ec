package vsphere

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

// MethodName returns the SOAP method of a request body, e.g. "CreateVM_Task" for *methods.CreateVM_TaskBody.
func MethodName(req soap.HasFault) string {
	t := reflect.TypeOf(req)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.TrimSuffix(t.Name(), "Body")
}

// RoundTripperFunc adapts a function to soap.RoundTripper.
type RoundTripperFunc func(ctx context.Context, req, res soap.HasFault) error

// RoundTrip implements soap.RoundTripper.
func (f RoundTripperFunc) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	return f(ctx, req, res)
}

// timedRoundTripper observes the latency of every SOAP call per method.
func timedRoundTripper(next soap.RoundTripper) soap.RoundTripper {
	return RoundTripperFunc(func(ctx context.Context, req, res soap.HasFault) error {
		start := time.Now()
		err := next.RoundTrip(ctx, req, res)
		metrics.VsphereCallDuration.WithLabelValues(MethodName(req)).Observe(time.Since(start).Seconds())
		return err
	})
}

// reloginRoundTripper logs in again when vCenter answers NotAuthenticated (expired or terminated session)
// and retries the call once. vCenter rejects such a call before doing anything, so the retry is safe.
// Concurrent callers share one re-login: a generation counter tells a caller whether someone else already
// renewed the session after its call was sent, and a re-login in flight is joined, not repeated. The
// re-login runs on none of the callers' contexts and is bounded by timeout; each caller waits for it
// only as long as its own ctx allows.
type reloginRoundTripper struct {
	next    soap.RoundTripper
	login   func(ctx context.Context) error
	timeout time.Duration

	mu         sync.Mutex
	generation uint64
	inflight   *loginCall
}

// loginCall is one shared re-login; err is set before done is closed.
type loginCall struct {
	done chan struct{}
	err  error
}

func (r *reloginRoundTripper) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	switch req.(type) {
	case *methods.LoginBody, *methods.LogoutBody, *methods.RetrieveServiceContentBody:
		return r.next.RoundTrip(ctx, req, res)
	}
	r.mu.Lock()
	seen := r.generation
	r.mu.Unlock()

	err := r.next.RoundTrip(ctx, req, res)
	if err == nil || !isNotAuthenticated(err) {
		return err
	}
	if lerr := r.renew(ctx, seen); lerr != nil {
		return lerr
	}
	// The failed attempt left its fault in res; the SOAP client would report it again.
	resetBody(res)
	return r.next.RoundTrip(ctx, req, res)
}

// renew logs in unless another caller already did since generation seen, joining a re-login in flight.
func (r *reloginRoundTripper) renew(ctx context.Context, seen uint64) error {
	r.mu.Lock()
	if r.generation != seen {
		r.mu.Unlock()
		return nil
	}
	call := r.inflight
	if call == nil {
		call = &loginCall{done: make(chan struct{})}
		r.inflight = call
		go r.run(context.WithoutCancel(ctx), call)
	}
	r.mu.Unlock()
	select {
	case <-call.done:
		return call.err
	case <-ctx.Done():
		return classify("Login", ctx.Err())
	}
}

func (r *reloginRoundTripper) run(ctx context.Context, call *loginCall) {
	timeout := r.timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := r.login(ctx)
	r.mu.Lock()
	if err == nil {
		r.generation++
	}
	r.inflight = nil
	r.mu.Unlock()
	call.err = err
	close(call.done)
}

// resetBody zeroes a response body (its Res and Fault_ fields) before a retry.
func resetBody(res soap.HasFault) {
	v := reflect.ValueOf(res)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().Set(reflect.Zero(v.Elem().Type()))
	}
}

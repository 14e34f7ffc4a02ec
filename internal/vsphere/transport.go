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
// renewed the session after its call was sent.
type reloginRoundTripper struct {
	next  soap.RoundTripper
	login func(ctx context.Context) error

	mu         sync.Mutex
	generation uint64
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

// renew logs in unless another caller already did since generation seen.
func (r *reloginRoundTripper) renew(ctx context.Context, seen uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.generation != seen {
		return nil
	}
	if err := r.login(ctx); err != nil {
		return err
	}
	r.generation++
	return nil
}

// resetBody zeroes a response body (its Res and Fault_ fields) before a retry.
func resetBody(res soap.HasFault) {
	v := reflect.ValueOf(res)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().Set(reflect.Zero(v.Elem().Type()))
	}
}

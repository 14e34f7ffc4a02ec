package vsphere

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Sentinel errors, matched with errors.Is on any error of this package. The controllers map them to
// condition reasons (see Reason).
var (
	// ErrTimeout: vCenter did not answer within the call's deadline (dial, TLS handshake, response
	// header, login or the caller's own deadline).
	ErrTimeout = errors.New("vCenter did not answer in time")
	// ErrCircuitOpen: the vCenter's circuit breaker is open after repeated timeouts or connection
	// failures; the call failed fast without contacting vCenter (see CircuitOpenError).
	ErrCircuitOpen = errors.New("vCenter circuit breaker is open")
	// ErrProxy: the HTTPS proxy refused or failed the tunnel to vCenter (see ProxyError).
	ErrProxy = errors.New("the HTTPS proxy did not connect to vCenter")
)

// Reason is the condition reason for err: afv1.ReasonVCenterCircuitOpen, afv1.ReasonVCenterProxyError, afv1.ReasonVCenterTimeout or
// afv1.ReasonVCenterCertificateRejected when err is one of those, otherwise its ErrorClass ("" for nil).
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrCircuitOpen):
		return afv1.ReasonVCenterCircuitOpen
	case errors.Is(err, ErrProxy):
		return afv1.ReasonVCenterProxyError
	case errors.Is(err, ErrTimeout):
		return afv1.ReasonVCenterTimeout
	case IsCertificateError(err):
		return afv1.ReasonVCenterCertificateRejected
	}
	return string(ClassOf(err))
}

// CircuitOpenError is returned, without contacting vCenter, while the vCenter's breaker is open.
type CircuitOpenError struct {
	// VCenter is the endpoint's host:port (never user info).
	VCenter string
	// Failures is the number of consecutive timeouts or connection failures that opened the breaker.
	Failures int
	// RetryAt is when the breaker lets one probe call through.
	RetryAt time.Time
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("vCenter %s: circuit breaker open after %d consecutive timeouts or connection failures; next attempt at %s",
		e.VCenter, e.Failures, e.RetryAt.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrCircuitOpen) true.
func (e *CircuitOpenError) Is(target error) bool { return target == ErrCircuitOpen }

// ProxyError reports an HTTPS proxy that refused the CONNECT tunnel (Status set) or could not be
// reached (Err set). Proxy is host:port only: a proxy URL's credentials are never kept.
type ProxyError struct {
	Proxy      string
	Target     string
	Status     string
	StatusCode int
	Err        error
}

func (e *ProxyError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("HTTPS proxy %s could not be reached: %v", e.Proxy, e.Err)
	}
	return fmt.Sprintf("HTTPS proxy %s refused the tunnel to vCenter %s: %s (check HTTPS_PROXY and NO_PROXY)",
		e.Proxy, e.Target, e.Status)
}

// Is makes errors.Is(err, ErrProxy) true.
func (e *ProxyError) Is(target error) bool { return target == ErrProxy }

// Unwrap returns the connection error, if any. (A slice: an Unwrap that returns a nil error would make
// govmomi's fault.In panic.)
func (e *ProxyError) Unwrap() []error {
	if e.Err == nil {
		return nil
	}
	return []error{e.Err}
}

// IsTimeout reports whether err is a deadline or network timeout (errors.Is(err, ErrTimeout) is the
// same on this package's errors).
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// unreachable reports a connection that could not be made or was cut: refused, reset, no route, DNS,
// a proxy that is down or answers the tunnel with a gateway error.
func unreachable(err error) bool {
	var pe *ProxyError
	if errors.As(err, &pe) {
		return pe.Err != nil || pe.StatusCode == http.StatusBadGateway ||
			pe.StatusCode == http.StatusServiceUnavailable || pe.StatusCode == http.StatusGatewayTimeout
	}
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// outcome is what one request tells the breaker about the vCenter.
type outcome int

const (
	// outcomeNeutral: nothing learned (the caller cancelled, a certificate was refused, ...).
	outcomeNeutral outcome = iota
	// outcomeSuccess: vCenter answered (any HTTP status).
	outcomeSuccess
	// outcomeFailure: a timeout or connection failure.
	outcomeFailure
)

func outcomeOf(err error) outcome {
	switch {
	case err == nil:
		return outcomeSuccess
	case errors.Is(err, context.Canceled):
		return outcomeNeutral
	case IsTimeout(err), unreachable(err):
		return outcomeFailure
	}
	return outcomeNeutral
}

// guard is the http.RoundTripper under every request of a session (SOAP, file transfers, SPBM, vAPI):
// it fails fast while the vCenter's breaker is open, gives a request without a deadline the default
// one, reports each outcome to the breaker and types proxy failures.
type guard struct {
	next        http.RoundTripper
	breaker     *breaker
	callTimeout time.Duration
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	probe, err := g.breaker.admit()
	if err != nil {
		closeBody(req)
		return nil, err
	}
	cancel := context.CancelFunc(func() {})
	if _, ok := req.Context().Deadline(); !ok && g.callTimeout > 0 {
		var ctx context.Context
		ctx, cancel = context.WithTimeout(req.Context(), g.callTimeout)
		req = req.WithContext(ctx)
	}
	res, err := g.next.RoundTrip(req)
	if err != nil {
		cancel()
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "proxyconnect" {
			proxy := "(from the environment)"
			if p, perr := proxyFromEnvironment(req); perr == nil && p != nil {
				proxy = p.Host // host:port only, never the proxy URL's user info
			}
			err = &ProxyError{Proxy: proxy, Target: req.URL.Host, Err: err}
		}
		g.breaker.done(probe, outcomeOf(err))
		return nil, err
	}
	g.breaker.done(probe, outcomeSuccess)
	res.Body = &cancelOnClose{ReadCloser: res.Body, cancel: cancel}
	return res, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// cancelOnClose releases a request's own deadline once its response body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

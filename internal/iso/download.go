package iso

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// download is one in-flight GET with its idle-read watchdog.
type download struct {
	resp   *http.Response
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration

	mu        sync.Mutex
	timer     *time.Timer
	streaming bool // response headers received
}

// errIdle is the cancellation cause when the server stops sending.
type errIdle struct{ d time.Duration }

func (e errIdle) Error() string { return fmt.Sprintf("no data received for %s", e.d) }

// errHeaders is the cancellation cause when a request got no response headers in time.
type errHeaders struct{ d time.Duration }

func (e errHeaders) Error() string { return fmt.Sprintf("no response within %s", e.d) }

// get sends the GET. A conditional GET carries the recorded validators; a 304 to a request without
// validators is an error (the server contradicts itself). Any status but 200/304 is an error. The
// request has a deadline until its headers arrive (Cache.headerLimit: dial, proxy CONNECT, TLS, the
// server's answer); from then on the idle-read watchdog bounds it.
func (run *refreshRun) get(ctx context.Context, conditional bool) (*download, error) {
	redURL := RedactURL(run.req.Source.URL)
	dctx, cancel := context.WithCancelCause(ctx)
	dl := &download{ctx: dctx, cancel: cancel, idle: run.c.idle}
	dl.timer = time.AfterFunc(run.c.headerLimit, func() {
		dl.mu.Lock()
		streaming := dl.streaming
		dl.mu.Unlock()
		if streaming {
			cancel(errIdle{dl.idle})
		} else {
			cancel(errHeaders{run.c.headerLimit})
		}
	})
	tctx, trace := withTrace(dctx)
	req, err := http.NewRequestWithContext(tctx, http.MethodGet, run.req.Source.URL, nil)
	if err != nil {
		dl.close()
		return nil, fail(afv1.ReasonDownloadFailed, run.red.wrap("GET "+redURL, err))
	}
	sentValidator := false
	if conditional {
		if etag := run.req.Status.ETag; etag != "" {
			req.Header.Set("If-None-Match", etag)
			sentValidator = true
		}
		if lm := run.req.Status.LastModified; lm != "" {
			req.Header.Set("If-Modified-Since", lm)
			sentValidator = true
		}
	}
	resp, err := run.http.Do(req)
	if err != nil {
		shown := dl.explain(err)
		dl.close()
		metricsDownloadFailed()
		return nil, run.requestFailed("GET "+redURL, shown, err, trace, req.URL)
	}
	dl.resp = resp
	dl.mu.Lock()
	dl.streaming = true // headers arrived: from now on the idle-read timeout applies
	dl.mu.Unlock()
	dl.progress()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotModified && sentValidator:
		if etag := resp.Header.Get("ETag"); etag != "" {
			run.etag = etag
		}
		if lm := resp.Header.Get("Last-Modified"); lm != "" {
			run.lastModified = lm
		}
	case resp.StatusCode == http.StatusNotModified:
		dl.close()
		metricsDownloadFailed()
		return nil, fail(afv1.ReasonDownloadFailed, run.red.errorf("GET "+redURL+": server answered 304 Not Modified to a request without validators"))
	default:
		dl.close()
		metricsDownloadFailed()
		return nil, run.statusFailed("GET "+redURL, resp)
	}
	if resp.StatusCode == http.StatusOK && resp.ContentLength > run.req.maxSize() {
		// Refused before a byte of the body is read: closing drops the connection.
		dl.close()
		metricsDownloadFailed()
		return nil, run.tooLarge(resp.ContentLength, true)
	}
	return dl, nil
}

// requestFailed is the failure of a request that got no response: its reason from the raw error
// (trust, proxy or else DownloadFailed), its message scrubbed of URL secrets with a hint at the fix.
func (run *refreshRun) requestFailed(prefix string, shown, raw error, trace *requestTrace, target *url.URL) error {
	reason, detail := classify(raw, trace, target)
	err := run.red.wrap(prefix, shown)
	if extra := detail + hint(reason); extra != "" {
		err = &safeError{msg: err.Error() + extra, cause: err}
	}
	return fail(reason, err)
}

// statusFailed is the failure of a request answered with an unexpected status; a 407 is the proxy's.
func (run *refreshRun) statusFailed(prefix string, resp *http.Response) error {
	reason := afv1.ReasonDownloadFailed
	msg := fmt.Sprintf("%s: %s answered HTTP %s", prefix, resp.Request.Method, resp.Status)
	if resp.StatusCode == http.StatusProxyAuthRequired {
		reason = afv1.ReasonProxyRefused
		msg += hint(reason)
	}
	return fail(reason, run.red.errorf(msg))
}

// progress re-arms the idle-read watchdog; called on every read that delivered bytes.
func (d *download) progress() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Reset(d.idle)
	}
}

// explain replaces a bare "context canceled" by the watchdog's reason.
func (d *download) explain(err error) error {
	if cause := context.Cause(d.ctx); cause != nil && !errors.Is(err, cause) {
		var idle errIdle
		var headers errHeaders
		// Only the watchdog's cause is wrapped, err's text is kept: wrapping err too would let
		// redactor.wrap find the *url.Error inside it and report that instead of the watchdog's reason.
		switch {
		case errors.As(cause, &idle):
			return fmt.Errorf("%w (%s)", idle, err.Error())
		case errors.As(cause, &headers):
			return fmt.Errorf("%w (%s)", headers, err.Error())
		}
	}
	return err
}

// close stops the watchdog and releases the connection. Idempotent.
func (d *download) close() {
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.mu.Unlock()
	// No draining: the remainder may be a gigabyte or a stalled server; closing drops the connection.
	d.cancel(nil)
	if d.resp != nil {
		_ = d.resp.Body.Close()
	}
}

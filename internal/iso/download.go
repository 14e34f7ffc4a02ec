package iso

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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

	mu    sync.Mutex
	timer *time.Timer
}

// errIdle is the cancellation cause when the server stops sending.
type errIdle struct{ d time.Duration }

func (e errIdle) Error() string { return fmt.Sprintf("no data received for %s", e.d) }

// get sends the GET. A conditional GET carries the recorded validators; a 304 to a request without
// validators is an error (the server contradicts itself). Any status but 200/304 is an error.
func (run *refreshRun) get(ctx context.Context, conditional bool) (*download, error) {
	redURL := RedactURL(run.req.Source.URL)
	dctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(dctx, http.MethodGet, run.req.Source.URL, nil)
	if err != nil {
		cancel(nil)
		return nil, fail(afv1.ReasonISODownloadFailed, run.red.wrap("GET "+redURL, err))
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
	resp, err := run.c.http.Do(req)
	if err != nil {
		cancel(nil)
		metricsDownloadFailed()
		return nil, fail(afv1.ReasonISODownloadFailed, run.red.wrap("GET "+redURL, err))
	}
	dl := &download{resp: resp, ctx: dctx, cancel: cancel, idle: run.c.idle}
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
		return nil, fail(afv1.ReasonISODownloadFailed, run.red.errorf("GET "+redURL+": server answered 304 Not Modified to a request without validators"))
	default:
		dl.close()
		metricsDownloadFailed()
		return nil, fail(afv1.ReasonISODownloadFailed, run.red.errorf(fmt.Sprintf("GET %s: HTTP %s", redURL, resp.Status)))
	}
	dl.timer = time.AfterFunc(dl.idle, func() { cancel(errIdle{dl.idle}) })
	return dl, nil
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
		if errors.As(cause, &idle) {
			// Only the idle cause is wrapped, err's text is kept: wrapping err too would let redactor.wrap
			// find the *url.Error inside it and report that instead of the idle reason.
			return fmt.Errorf("%w (%s)", idle, err.Error())
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
	_ = d.resp.Body.Close()
}

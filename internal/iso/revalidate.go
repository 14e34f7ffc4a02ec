package iso

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// What openshift/assisted-image-service answers (internal/handlers/iso.go, read from its public
// sources): the image goes out through net/http's ServeContent, so HEAD is answered with
// Content-Length and no body, Range and If-Modified-Since are honoured, and no ETag is ever sent.
// Last-Modified is the Last-Modified that assisted-service returns for the InfraEnv's discovery
// ignition (the image's generation time); releases before that change, and a failed parse, stamp
// time.Now() instead, a date that changes on every request and says nothing about the image.
//
// A token renewal (assisted-service's GetInfraEnvDownloadURL) rewrites only download_url and
// expires_at; a regenerated image gets a new generated_at, which the InfraEnv controller publishes as
// status.createdTime. So when only the URL changed, probe asks the server with one HEAD whether
// the image changed and Refresh downloads only if it did.

// probe revalidates the cached ISO against the server without downloading it. It reports whether
// the image may have changed and the basis of that verdict (safe to log). Order of evidence:
//  1. 304 to the recorded validators: unchanged.
//  2. an ETag (both recorded and served): equal or not.
//  3. a Last-Modified (both recorded and served) that is not just the response's own date: equal or not.
//  4. the length (HEAD Content-Length, or the total of a 1-byte range): a different length is a
//     different image.
//  5. nothing contradicts the cache: unchanged. The InfraEnv's createdTime, assisted-service's version
//     of the image, is the same, the URL differs only in its token, the cached file is intact and
//     of the served length; downloading the whole ISO to prove it would cost what this avoids. The
//     checkInterval revalidation (which hashes the bytes when the server has no validators) and the
//     force-refresh annotation remain the ways to catch an image that changed behind all of that.
//
// A HEAD refused with 405/501 is retried as a GET for one byte. Any other status (401 for a token
// the server does not accept, 404, 5xx) fails the refresh: the cached ISO stays in use and the new
// URL is not recorded, so the next pass tries again.
func (run *refreshRun) probe(ctx context.Context) (changed bool, basis string, err error) {
	resp, trace, err := run.probeRequest(ctx, http.MethodHead)
	if err == nil && (resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented) {
		resp, trace, err = run.probeRequest(ctx, http.MethodGet)
	}
	redURL := RedactURL(run.req.Source.URL)
	if err != nil {
		metricsDownloadFailed()
		target, _ := url.Parse(run.req.Source.URL)
		return false, "", run.requestFailed("revalidating "+redURL, err, err, trace, target)
	}
	st := run.req.Status
	served := servedValidators(resp)
	switch resp.StatusCode {
	case http.StatusNotModified:
		if st.ETag == "" && st.LastModified == "" {
			metricsDownloadFailed()
			return false, "", fail(afv1.ReasonDownloadFailed, run.red.errorf("revalidating "+redURL+": server answered 304 Not Modified to a request without validators"))
		}
		run.keepValidators(served)
		return false, "not modified", nil
	case http.StatusOK, http.StatusPartialContent:
	default:
		metricsDownloadFailed()
		return false, "", run.statusFailed("revalidating "+redURL, resp)
	}
	switch {
	case st.ETag != "" && served.etag != "":
		if served.etag != st.ETag {
			return true, "ETag changed", nil
		}
		run.keepValidators(served)
		return false, "same ETag", nil
	case st.LastModified != "" && served.lastModified != "" && !served.perRequestDate:
		if !sameHTTPDate(served.lastModified, st.LastModified) {
			return true, "Last-Modified changed", nil
		}
		run.keepValidators(served)
		return false, "same Last-Modified", nil
	case served.size >= 0 && st.SizeBytes > 0 && served.size != st.SizeBytes:
		return true, fmt.Sprintf("length changed (%d bytes, cached %d)", served.size, st.SizeBytes), nil
	case served.size >= 0:
		return false, "same length and image version", nil
	}
	return false, "same image version; the server reported neither validators nor a length", nil
}

// probeRequest sends a HEAD, or a GET of the first byte, with the recorded validators; the body is
// closed before returning (at most one byte of it was asked for). It has a deadline of its own.
func (run *refreshRun) probeRequest(ctx context.Context, method string) (*http.Response, *requestTrace, error) {
	ctx, cancel := context.WithTimeout(ctx, run.c.headerLimit)
	defer cancel()
	ctx, trace := withTrace(ctx)
	req, err := http.NewRequestWithContext(ctx, method, run.req.Source.URL, nil)
	if err != nil {
		return nil, trace, err
	}
	if etag := run.req.Status.ETag; etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if lm := run.req.Status.LastModified; lm != "" {
		req.Header.Set("If-Modified-Since", lm)
	}
	if method == http.MethodGet {
		req.Header.Set("Range", "bytes=0-0")
	}
	resp, err := run.http.Do(req)
	if err != nil {
		return nil, trace, err
	}
	_ = resp.Body.Close()
	return resp, trace, nil
}

// validators is what a probe's response says about the image.
type validators struct {
	etag, lastModified string
	// perRequestDate: Last-Modified equals the response's Date (within a second), the mark of a
	// server that stamps the time of the request (older assisted-image-service releases).
	perRequestDate bool
	// size is the image's length, -1 when unknown.
	size int64
}

func servedValidators(resp *http.Response) validators {
	v := validators{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified"), size: resp.ContentLength}
	if resp.StatusCode == http.StatusPartialContent {
		v.size = rangeTotal(resp.Header.Get("Content-Range"))
	}
	if lm, err := http.ParseTime(v.lastModified); err == nil {
		if date, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
			v.perRequestDate = absDuration(date.Sub(lm)) <= time.Second
		}
	}
	return v
}

// keepValidators records served validators that were just confirmed to describe the cached bytes.
func (run *refreshRun) keepValidators(v validators) {
	if v.etag != "" {
		run.etag = v.etag
	}
	if v.lastModified != "" && !v.perRequestDate {
		run.lastModified = v.lastModified
	}
}

// rangeTotal parses the complete length of "bytes 0-0/<total>"; -1 when absent or "*".
func rangeTotal(contentRange string) int64 {
	_, total, ok := strings.Cut(contentRange, "/")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func sameHTTPDate(a, b string) bool {
	ta, errA := http.ParseTime(a)
	tb, errB := http.ParseTime(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return ta.Equal(tb)
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

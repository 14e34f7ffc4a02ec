package iso

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Options configure a Cache. Zero values take the defaults noted per field.
type Options struct {
	// Clock stamps checkedAt/uploadedAt (default: the real clock).
	Clock clock.PassiveClock
	// HTTPClient, when set, downloads every ISO as it is: TrustedCABundleFile, HTTP and a request's
	// CABundle are then not supported (tests and benchmarks). Default: clients built from HTTP.
	HTTPClient *http.Client
	// HTTP configures the clients the Cache builds (timeouts, proxy, dialer, a static CA bundle).
	HTTP HTTPOptions
	// TrustedCABundleFile is a PEM bundle trusted besides the system roots, read again for every
	// download (the OpenShift-injected trusted CA bundle, mounted from a ConfigMap). A missing file
	// is no bundle; a file without a parsable certificate fails the refresh with InvalidCABundle.
	TrustedCABundleFile string
	// HeaderTimeout bounds every request up to its response headers: dial, proxy CONNECT, TLS and the
	// server's first answer (default 5m; the idle-read timeout takes over after that).
	HeaderTimeout time.Duration
	// Log receives structured logs; URLs are always redacted.
	Log logr.Logger
	// IdleReadTimeout aborts a download that delivers no byte for this long (default 2m).
	IdleReadTimeout time.Duration
	// MaxDuration bounds one whole refresh (default 2h).
	MaxDuration time.Duration
	// TempGracePeriod is how old a leftover temporary upload must be before Prune deletes it (default 6h).
	TempGracePeriod time.Duration
}

// Cache performs refreshes and retention passes. Safe for concurrent use by different pools.
type Cache struct {
	clock       clock.PassiveClock
	http        *http.Client // fixed client (Options.HTTPClient), or nil
	trust       *trustStore
	headerLimit time.Duration
	log         logr.Logger
	idle        time.Duration
	maxDuration time.Duration
	tempGrace   time.Duration
}

// NewCache builds a Cache.
func NewCache(o Options) (*Cache, error) {
	c := &Cache{clock: o.Clock, http: o.HTTPClient, log: o.Log, idle: o.IdleReadTimeout,
		maxDuration: o.MaxDuration, tempGrace: o.TempGracePeriod, headerLimit: o.HeaderTimeout}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.http == nil {
		if len(o.HTTP.CABundle) > 0 {
			// Fail early on a bad static bundle (a bad bundle file fails the refresh, it may be fixed).
			if _, err := NewHTTPClient(o.HTTP); err != nil {
				return nil, err
			}
		}
		c.trust = &trustStore{base: o.HTTP, file: o.TrustedCABundleFile}
	}
	if c.headerLimit <= 0 {
		c.headerLimit = 5 * time.Minute
	}
	if c.idle <= 0 {
		c.idle = 2 * time.Minute
	}
	if c.maxDuration <= 0 {
		c.maxDuration = 2 * time.Hour
	}
	if c.tempGrace <= 0 {
		c.tempGrace = 6 * time.Hour
	}
	return c, nil
}

// RefreshRequest is one refresh of one pool's cached ISO.
type RefreshRequest struct {
	Datacenter string
	// Datastore is spec.vsphere.isoDatastore; Prefix is PathPrefix(pool).
	Datastore, Prefix string
	Source            Source
	// ForceToken is the force-iso-refresh annotation value; recorded on success.
	ForceToken string
	// Conditional revalidates the cached ISO (RefreshNeed.Conditional).
	Conditional bool
	// Revalidate (RefreshNeed.Revalidate): the URL changed but not the image's version; ask the
	// server whether the image changed (HEAD) and download only if it did.
	Revalidate bool
	// Status is the pool's current status.iso (may be zero).
	Status afv1.ISOStatus
	// PreviousReady is the pool's current ISOReady condition, if any: a success right after a failure
	// keeps status.iso.lastError visible for one more check.
	PreviousReady *metav1.Condition
	// CABundle is PEM CA certificates trusted for this request's image host besides the system roots
	// and Options.TrustedCABundleFile (a pool's own CA reference). Without a parsable certificate the
	// refresh fails with InvalidCABundle.
	CABundle []byte
	// CABundleSource names where CABundle came from in messages (e.g. "ConfigMap ns/name key ca.crt");
	// never its content. Empty: "the pool's CA".
	CABundleSource string
	// MaxSize is the largest image accepted, in bytes (spec.iso.maxSize); 0 or less means
	// DefaultMaxSize. A larger Content-Length is refused before reading, a longer body is cut off, and
	// the refresh fails with ISOTooLarge.
	MaxSize int64
	// AllowPlainHTTP is spec.iso.allowPlainHTTP: without it an http:// URL is refused before any
	// request, and so is a redirect to http://.
	AllowPlainHTTP bool
}

// DefaultMaxSize is spec.iso.maxSize's default (8Gi): far above a full discovery ISO (~1.2 GiB), far
// below what fills a datastore by accident.
const DefaultMaxSize int64 = 8 << 30

// maxSize is the request's limit with the default applied.
func (r RefreshRequest) maxSize() int64 {
	if r.MaxSize > 0 {
		return r.MaxSize
	}
	return DefaultMaxSize
}

// Outcome says what a refresh did.
type Outcome string

// The outcomes of a refresh.
const (
	OutcomeUploaded  Outcome = "Uploaded"  // new bytes cached under a new name
	OutcomeReused    Outcome = "Reused"    // the digest was already on the datastore; the temp upload was discarded
	OutcomeUnchanged Outcome = "Unchanged" // 304, or same digest on revalidation: nothing uploaded
	OutcomeFailed    Outcome = "Failed"
)

// RefreshResult is the new state after one refresh. Status replaces the pool's status.iso, Condition
// is its ISOReady condition (set ObservedGeneration yourself), Events are to be emitted on the pool.
type RefreshResult struct {
	Status    afv1.ISOStatus
	Condition metav1.Condition
	Events    []Event
	Outcome   Outcome
	// Err is the failure (message free of URL tokens), nil on success.
	Err error
}

// refreshFailure tags an error with its ISOReady reason.
type refreshFailure struct {
	reason string
	err    error
}

func (f *refreshFailure) Error() string { return f.err.Error() }
func (f *refreshFailure) Unwrap() error { return f.err }

func fail(reason string, err error) error { return &refreshFailure{reason: reason, err: err} }

// refreshRun is the state of one Refresh call.
type refreshRun struct {
	c      *Cache
	client vsphere.Client
	req    RefreshRequest
	red    *redactor
	http   *http.Client
	log    logr.Logger
	now    time.Time
	// validators of the response whose content ends up active
	etag, lastModified string
	// set on success
	entry afv1.ISOVersion
}

// Refresh performs one refresh (see package doc). It never returns a nil result; the error is also
// in RefreshResult.Err.
func (c *Cache) Refresh(ctx context.Context, client vsphere.Client, req RefreshRequest) (RefreshResult, error) {
	run := &refreshRun{c: c, client: client, req: req, red: newRedactor(req.Source.URL), now: c.clock.Now()}
	run.log = c.log.WithValues("isoURL", RedactURL(req.Source.URL), "datastore", req.Datastore, "prefix", req.Prefix)
	run.etag, run.lastModified = req.Status.ETag, req.Status.LastModified
	ctx, cancel := context.WithTimeout(ctx, c.maxDuration)
	defer cancel()
	outcome, err := run.do(WithPlainHTTP(ctx, req.AllowPlainHTTP))
	return run.result(outcome, err), err
}

func (run *refreshRun) do(ctx context.Context) (Outcome, error) {
	st := run.req.Status
	if run.req.Source.URL == "" {
		return OutcomeFailed, fail(afv1.ReasonInfraEnvNotReady, errors.New("the InfraEnv has no isoDownloadURL"))
	}
	if u, err := url.Parse(run.req.Source.URL); err == nil && !strings.EqualFold(u.Scheme, "https") && !run.req.AllowPlainHTTP {
		return OutcomeFailed, fail(afv1.ReasonPlainHTTPRefused, run.red.errorf("GET "+RedactURL(run.req.Source.URL)+": "+(&PlainHTTPError{Scheme: strings.ToLower(u.Scheme)}).Error()))
	}
	hc, err := run.c.clientFor(run.req.CABundle, run.req.CABundleSource)
	if err != nil {
		return OutcomeFailed, fail(afv1.ReasonInvalidCABundle, err)
	}
	run.http = hc
	conditional := (run.req.Conditional || run.req.Revalidate) && st.Path != "" && st.SHA256 != ""
	if conditional {
		intact, err := run.cachedFileIntact(ctx)
		if err != nil {
			return OutcomeFailed, fail(afv1.ReasonUploadFailed, fmt.Errorf("checking cached ISO %s: %w", st.Path, err))
		}
		if !intact {
			run.log.Info("cached ISO missing or wrong size on the datastore; downloading it again", "path", st.Path)
			conditional = false
		}
	}
	if conditional && run.req.Revalidate {
		changed, basis, err := run.probe(ctx)
		if err != nil {
			return OutcomeFailed, err
		}
		if !changed {
			metrics.ObserveISOOperation(metrics.ISOOpDownload, metrics.ResultNotModified)
			run.log.Info("discovery ISO URL renewed; the image is unchanged, nothing downloaded", "basis", basis)
			run.entry = currentEntry(st)
			return OutcomeUnchanged, nil
		}
		run.log.Info("discovery ISO changed under the same image version; downloading it", "basis", basis)
		conditional = false
	}
	dl, err := run.get(ctx, conditional)
	if err != nil {
		return OutcomeFailed, err
	}
	defer func() { dl.close() }()
	if dl.resp.StatusCode == http.StatusNotModified {
		metrics.ObserveISOOperation(metrics.ISOOpDownload, metrics.ResultNotModified)
		run.entry = currentEntry(st)
		return OutcomeUnchanged, nil
	}
	// A revalidation the server answered in full: if the length matches, hash without uploading and
	// upload only when the digest changed (a second, unconditional GET).
	if conditional && (dl.resp.ContentLength < 0 || dl.resp.ContentLength == st.SizeBytes) {
		digest, err := run.hashOnly(dl)
		if err != nil {
			return OutcomeFailed, err
		}
		if digest == st.SHA256 {
			metrics.ObserveISOOperation(metrics.ISOOpDownload, metrics.ResultNotModified)
			run.entry = currentEntry(st)
			return OutcomeUnchanged, nil
		}
		run.log.Info("ISO content changed under the same URL", "sha256", digest)
		dl.close()
		if dl, err = run.get(ctx, false); err != nil {
			return OutcomeFailed, err
		}
	}
	return run.streamUpload(ctx, dl)
}

// cachedFileIntact reports whether the active ISO is still on the datastore with its recorded size.
func (run *refreshRun) cachedFileIntact(ctx context.Context) (bool, error) {
	st := run.req.Status
	fi, err := run.client.StatFile(ctx, run.req.Datacenter, st.Path)
	switch {
	case vsphere.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return st.SizeBytes <= 0 || fi.SizeBytes == st.SizeBytes, nil
}

func currentEntry(st afv1.ISOStatus) afv1.ISOVersion {
	for _, v := range st.History {
		if v.Path == st.Path {
			return v
		}
	}
	return afv1.ISOVersion{Path: st.Path, SHA256: st.SHA256, SizeBytes: st.SizeBytes, UploadedAt: st.UploadedAt}
}

// hashOnly reads the whole body, hashing and validating it, without uploading.
func (run *refreshRun) hashOnly(dl *download) (string, error) {
	src := newSourceReader(dl.resp.Body, dl.resp.ContentLength, dl.progress)
	src.limit = run.req.maxSize()
	n, err := io.Copy(io.Discard, src)
	metrics.AddISOBytes(metrics.DirectionDownload, n)
	if err != nil {
		metrics.ObserveISOOperation(metrics.ISOOpDownload, metrics.ResultFailure)
		if src.tooLarge {
			return "", run.tooLarge(src.n, false)
		}
		if src.notISO {
			return "", fail(afv1.ReasonNotAnISO, run.red.errorf("GET "+RedactURL(run.req.Source.URL)+": "+errNotAnISO.Error()))
		}
		return "", fail(afv1.ReasonDownloadFailed, run.red.wrap("GET "+RedactURL(run.req.Source.URL), dl.explain(err)))
	}
	return src.digest(), nil
}

// streamUpload streams the body into a temporary datastore file while hashing and validating it,
// then promotes it to its content-addressed name (or discards it when that name already exists).
func (run *refreshRun) streamUpload(ctx context.Context, dl *download) (Outcome, error) {
	tmp, err := newTempPath(run.req.Datastore, run.req.Prefix)
	if err != nil {
		return OutcomeFailed, fail(afv1.ReasonUploadFailed, err)
	}
	src := newSourceReader(dl.resp.Body, dl.resp.ContentLength, dl.progress)
	src.limit = run.req.maxSize()
	upErr := run.client.UploadFile(ctx, run.req.Datacenter, tmp, src, dl.resp.ContentLength)
	var finErr error
	if upErr == nil {
		finErr = src.finish()
	}
	metrics.AddISOBytes(metrics.DirectionDownload, src.n)
	redURL := RedactURL(run.req.Source.URL)
	var failure error
	switch {
	case src.tooLarge:
		failure = run.tooLarge(src.n, false)
	case src.notISO:
		failure = fail(afv1.ReasonNotAnISO, run.red.errorf(fmt.Sprintf("GET %s: %s after %d bytes", redURL, errNotAnISO, src.n)))
	case src.srcErr != nil:
		failure = fail(afv1.ReasonDownloadFailed, run.red.wrap("GET "+redURL, dl.explain(src.srcErr)))
	case upErr != nil:
		failure = fail(afv1.ReasonUploadFailed, run.red.wrap("uploading to "+tmp, upErr))
	case finErr != nil:
		failure = fail(afv1.ReasonUploadFailed, run.red.wrap("uploading to "+tmp, finErr))
	}
	if failure != nil {
		result := metrics.ResultFailure
		if src.notISO || src.srcErr != nil || src.tooLarge {
			metrics.ObserveISOOperation(metrics.ISOOpDownload, metrics.ResultFailure)
		} else {
			metrics.ObserveISOOperation(metrics.ISOOpDownload, metrics.ResultSuccess)
		}
		metrics.ObserveISOOperation(metrics.ISOOpUpload, result)
		run.discardTemp(ctx, tmp)
		return OutcomeFailed, failure
	}
	metrics.ObserveISOOperation(metrics.ISOOpDownload, metrics.ResultSuccess)
	// The new bytes' validators replace the old ones; a Last-Modified that is only the response's
	// date (older image services stamp every answer with time.Now()) is no validator.
	v := servedValidators(dl.resp)
	run.etag, run.lastModified = v.etag, ""
	if !v.perRequestDate {
		run.lastModified = v.lastModified
	}
	return run.promote(ctx, tmp, src.digest(), src.n)
}

// promote moves tmp to the content-addressed name, or reuses an existing file with that digest.
func (run *refreshRun) promote(ctx context.Context, tmp, digest string, size int64) (Outcome, error) {
	final := CachedISOPath(run.req.Datastore, run.req.Prefix, digest)
	run.entry = afv1.ISOVersion{Path: final, SHA256: digest, SizeBytes: size, UploadedAt: &metav1.Time{Time: run.now}}
	if run.finalExists(ctx, final, size) {
		return run.reuse(ctx, tmp, final)
	}
	if err := crashpoint.Hit(ctx, crashpoint.ISOTempUploaded); err != nil {
		return OutcomeFailed, err
	}
	if err := run.client.MoveFile(ctx, run.req.Datacenter, tmp, final); err != nil {
		// Another pool sharing the prefix may have promoted the same bytes meanwhile.
		if run.finalExists(ctx, final, size) {
			return run.reuse(ctx, tmp, final)
		}
		run.discardTemp(ctx, tmp)
		metrics.ObserveISOOperation(metrics.ISOOpUpload, metrics.ResultFailure)
		return OutcomeFailed, fail(afv1.ReasonUploadFailed, run.red.wrap(fmt.Sprintf("moving %s to %s", tmp, final), err))
	}
	metrics.ObserveISOOperation(metrics.ISOOpUpload, metrics.ResultSuccess)
	metrics.AddISOBytes(metrics.DirectionUpload, size)
	run.log.Info("cached discovery ISO", "path", final, "sizeBytes", size)
	if err := crashpoint.Hit(ctx, crashpoint.ISOMoved); err != nil {
		return OutcomeFailed, err
	}
	return OutcomeUploaded, nil
}

func (run *refreshRun) finalExists(ctx context.Context, final string, size int64) bool {
	fi, err := run.client.StatFile(ctx, run.req.Datacenter, final)
	return err == nil && fi.SizeBytes == size
}

func (run *refreshRun) reuse(ctx context.Context, tmp, final string) (Outcome, error) {
	for _, v := range run.req.Status.History {
		if v.Path == final && v.UploadedAt != nil {
			run.entry.UploadedAt = v.UploadedAt.DeepCopy()
		}
	}
	run.discardTemp(ctx, tmp)
	metrics.ObserveISOOperation(metrics.ISOOpReuse, metrics.ResultSuccess)
	run.log.Info("discovery ISO already cached; reusing it", "path", final)
	return OutcomeReused, nil
}

// discardTemp deletes a temporary upload even when ctx is already cancelled. A leftover (e.g. written
// by the server after the client gave up) is removed later by Prune once older than the grace period.
func (run *refreshRun) discardTemp(ctx context.Context, tmp string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := run.client.DeleteFile(ctx, run.req.Datacenter, tmp); err != nil {
		run.log.Error(run.red.wrap("", err), "could not delete temporary ISO upload; a later prune retries", "path", tmp)
	}
}

// clientFor returns the client for one refresh: the fixed client, or the one trusting the bundle file
// as it is now plus extraCA.
func (c *Cache) clientFor(extraCA []byte, source string) (*http.Client, error) {
	if c.trust == nil {
		if len(bytes.TrimSpace(extraCA)) > 0 {
			return nil, errors.New("a per-pool CA needs a Cache that builds its own HTTP clients (Options.HTTPClient is set)")
		}
		return c.http, nil
	}
	return c.trust.client(extraCA, source)
}

func metricsDownloadFailed() {
	metrics.ObserveISOOperation(metrics.ISOOpDownload, metrics.ResultFailure)
}

// tooLarge is the ISOTooLarge failure: announced says n is the response's Content-Length, else the
// bytes received when the body passed the limit. The message names the limit and the size, never the
// URL's token.
func (run *refreshRun) tooLarge(n int64, announced bool) error {
	limit := run.req.maxSize()
	what := fmt.Sprintf("more than %s received", formatBytes(limit))
	if announced {
		what = fmt.Sprintf("the server announced %s", formatBytes(n))
	}
	return fail(afv1.ReasonISOTooLarge, run.red.errorf(fmt.Sprintf("GET %s: discovery ISO larger than spec.iso.maxSize %s: %s; nothing of it is kept%s",
		RedactURL(run.req.Source.URL), formatBytes(limit), what, hint(afv1.ReasonISOTooLarge))))
}

// formatBytes shows a size in bytes, and as a binary quantity too where that is exact ("8Gi").
func formatBytes(n int64) string {
	if q := resource.NewQuantity(n, resource.BinarySI).String(); strings.HasSuffix(q, "i") {
		return fmt.Sprintf("%s (%d bytes)", q, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

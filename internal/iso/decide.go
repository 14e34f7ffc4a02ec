package iso

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Defaults of spec.iso (the CRD defaults them too; these cover objects that bypassed defaulting).
const (
	DefaultCheckInterval  = time.Hour
	DefaultRetainVersions = 2
)

// Why a refresh is (not) needed. Machine-readable; safe to log.
const (
	NeedInfraEnvNotReady = "InfraEnvNotReady" // no isoDownloadURL yet: nothing to do
	NeedNothingCached    = "NothingCached"
	NeedURLChanged       = "URLChanged"
	NeedURLRenewed       = "URLRenewed"      // only the URL's token changed: revalidate, download only if the image changed
	NeedSourceRecreated  = "SourceRecreated" // InfraEnv createdTime changed
	NeedLocationChanged  = "LocationChanged" // isoDatastore or pathPrefix changed
	NeedForceRefresh     = "ForceRefresh"
	NeedIntervalElapsed  = "IntervalElapsed"
	NeedUpToDate         = "UpToDate"
)

// RefreshNeed is Decide's verdict.
type RefreshNeed struct {
	// Needed: start a refresh now.
	Needed bool
	// Conditional: only revalidate (If-None-Match/If-Modified-Since, keep the cached file when the
	// content is unchanged). False means download unconditionally.
	Conditional bool
	// Revalidate: the URL changed but neither the image's version (createdTime) nor the rest of the
	// URL did; ask the server (HEAD) whether the image changed and record the new URL without a
	// download when it did not. Conditional is set too.
	Revalidate bool
	// Why is one of the Need* constants: for logs and tests, never a condition or Event reason.
	Why string
	// RequeueAfter is when Decide will next say Needed if nothing else changes (0 when Needed or when
	// waiting on the InfraEnv).
	RequeueAfter time.Duration
	// PrunePending: history holds more than retainVersions entries or a failed prune to retry.
	PrunePending bool
}

// Source is what the InfraEnv says about its discovery ISO.
type Source struct {
	// URL is status.isoDownloadURL, token included. Never log it.
	URL string
	// CreatedTime is status.createdTime (when the ISO was last generated).
	CreatedTime *metav1.Time
}

// Decide says whether the pool's cached ISO must be refreshed. Pure: everything comes from its inputs.
func Decide(now time.Time, pool *afv1.VsphereAgentPool, src Source) RefreshNeed {
	st := isoStatus(pool)
	need := RefreshNeed{PrunePending: prunePending(st, retainVersions(pool))}
	if src.URL == "" {
		need.Why = NeedInfraEnvNotReady
		return need
	}
	unconditional := func(why string) RefreshNeed {
		need.Needed, need.Why = true, why
		return need
	}
	prefix, datastore := PathPrefix(pool), pool.Spec.VSphere.ISODatastore
	force := pool.Annotations[afv1.AnnotationForceISORefresh]
	urlChanged := st.URLHash != URLHash(src.URL)
	switch {
	case st.Path == "" || st.SHA256 == "":
		return unconditional(NeedNothingCached)
	case urlChanged && !tokenRenewal(st, src):
		return unconditional(NeedURLChanged)
	case !sameTime(st.SourceCreatedTime, src.CreatedTime):
		return unconditional(NeedSourceRecreated)
	case !IsCachedISOPath(st.Path, datastore, prefix):
		return unconditional(NeedLocationChanged)
	case force != "" && force != st.ForceRefreshToken:
		return unconditional(NeedForceRefresh)
	case urlChanged:
		need.Needed, need.Conditional, need.Revalidate, need.Why = true, true, true, NeedURLRenewed
		return need
	}
	interval := checkInterval(pool)
	if st.CheckedAt == nil || !now.Before(st.CheckedAt.Add(interval)) {
		need.Needed, need.Conditional, need.Why = true, true, NeedIntervalElapsed
		return need
	}
	need.Why = NeedUpToDate
	need.RequeueAfter = st.CheckedAt.Add(interval).Sub(now)
	return need
}

// tokenRenewal reports whether a changed URL may still name the cached image: the InfraEnv gives the
// same image version (createdTime, set on both sides) and the URL without its secrets (scheme, host,
// path with token segments redacted) is the same. assisted-service renews the token in
// isoDownloadURL without regenerating the image; any regeneration bumps createdTime.
func tokenRenewal(st afv1.ISOStatus, src Source) bool {
	return st.SourceCreatedTime != nil && !st.SourceCreatedTime.IsZero() && sameTime(st.SourceCreatedTime, src.CreatedTime) &&
		st.URL != "" && st.URL == RedactURL(src.URL)
}

func isoStatus(pool *afv1.VsphereAgentPool) afv1.ISOStatus {
	if pool.Status.ISO == nil {
		return afv1.ISOStatus{}
	}
	return *pool.Status.ISO
}

func checkInterval(pool *afv1.VsphereAgentPool) time.Duration {
	if ci := pool.Spec.ISO.CheckInterval; ci != nil && ci.Duration > 0 {
		return ci.Duration
	}
	return DefaultCheckInterval
}

func retainVersions(pool *afv1.VsphereAgentPool) int {
	if r := pool.Spec.ISO.RetainVersions; r > 0 {
		return int(r)
	}
	return DefaultRetainVersions
}

func prunePending(st afv1.ISOStatus, retain int) bool {
	if len(st.History) > retain {
		return true
	}
	for _, v := range st.History {
		if v.PruneError != "" {
			return true
		}
	}
	return false
}

// sameTime compares at second precision (metav1.Time serialises to seconds).
func sameTime(a, b *metav1.Time) bool {
	switch {
	case a == nil || a.IsZero():
		return b == nil || b.IsZero()
	case b == nil || b.IsZero():
		return false
	}
	return a.Unix() == b.Unix()
}

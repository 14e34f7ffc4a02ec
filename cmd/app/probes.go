package app

import (
	"context"
	"errors"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// CachesCheck names the readyz check that passes once the informer caches have synced.
const CachesCheck = "caches"

// cacheSyncWait bounds one readiness probe's look at the caches: below the kubelet's default probe
// timeout (1 s), so a probe reports "not synced" instead of timing out.
const cacheSyncWait = 500 * time.Millisecond

// cachesSynced is ready once every informer of c has synced: before that the controllers read an
// incomplete cluster. It does not follow leadership: a standby replica that never turned ready would
// block a rolling update whose old pod holds the lease.
func cachesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx := context.Background()
		if req != nil {
			ctx = req.Context()
		}
		ctx, cancel := context.WithTimeout(ctx, cacheSyncWait)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("the informer caches have not synced yet")
		}
		return nil
	}
}

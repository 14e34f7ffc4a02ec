package app

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// syncCache is a cache whose sync state the test sets; only WaitForCacheSync is called.
type syncCache struct {
	cache.Cache
	synced   bool
	deadline bool
}

func (c *syncCache) WaitForCacheSync(ctx context.Context) bool {
	_, c.deadline = ctx.Deadline()
	if c.synced {
		return true
	}
	<-ctx.Done() // as controller-runtime: wait until synced or the context ends
	return false
}

func TestCachesSynced(t *testing.T) {
	for _, tc := range []struct {
		name    string
		synced  bool
		wantErr bool
	}{
		{"not synced: not ready", false, true},
		{"synced: ready", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &syncCache{synced: tc.synced}
			err := cachesSynced(c)(nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("check = %v, want error %v", err, tc.wantErr)
			}
			if !c.deadline {
				t.Fatal("the check waited without a deadline: a probe would hang until the caches sync")
			}
		})
	}
}

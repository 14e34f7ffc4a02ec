package credentials

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// DefaultMaxAge is how long a VM pass may use credentials its pool's pass read.
const DefaultMaxAge = 15 * time.Second

// Cache lets the VM passes of a pool use the credentials its pool's pass last read, instead
// of each reading the Secret from the API server (the operator has no Secret watch: only get). The
// pool's pass always reads the Secret itself, so a rotated or deleted Secret is seen by the next pool
// pass at once and by every VM pass within MaxAge; credentials vCenter refused are dropped at once.
// Entries are per Secret, so pools sharing a Secret share one entry.
type Cache struct {
	clock  clock.PassiveClock
	maxAge time.Duration

	mu      sync.Mutex
	entries map[types.NamespacedName]credentialsEntry
}

type credentialsEntry struct {
	creds  vsphere.Credentials
	readAt time.Time
}

// NewCache returns a cache whose entries serve VM passes for maxAge (0: never; every read
// goes to the API server).
func NewCache(c clock.PassiveClock, maxAge time.Duration) *Cache {
	return &Cache{clock: c, maxAge: maxAge, entries: map[types.NamespacedName]credentialsEntry{}}
}

// Read reads the pool's credentials Secret from the API server (the pool's pass) and keeps the result
// for Recent. A failed read drops the entry: the VM passes then read, and fail, for themselves.
func (c *Cache) Read(ctx context.Context, reader client.Reader, pool *afv1.VsphereAgentPool, secretNamespaces []string) (vsphere.Credentials, error) {
	if c == nil { // no cache: every pass reads
		return Load(ctx, reader, pool, secretNamespaces)
	}
	key := credentialsSecretKey(pool)
	at := c.clock.Now()
	creds, err := Load(ctx, reader, pool, secretNamespaces)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.entries, key)
		return creds, err
	}
	if e, ok := c.entries[key]; !ok || !e.readAt.After(at) { // a concurrent later read stays
		c.entries[key] = credentialsEntry{creds: creds, readAt: at}
	}
	return creds, nil
}

// Recent returns the pool's credentials as read within MaxAge, else reads them (Read). The pool's
// cross-namespace rule is checked on every call: the allowlist, not the entry, decides.
func (c *Cache) Recent(ctx context.Context, reader client.Reader, pool *afv1.VsphereAgentPool, secretNamespaces []string) (vsphere.Credentials, error) {
	if c == nil {
		return Load(ctx, reader, pool, secretNamespaces)
	}
	key := credentialsSecretKey(pool)
	if key.Namespace == pool.Namespace || slices.Contains(secretNamespaces, key.Namespace) {
		c.mu.Lock()
		e, ok := c.entries[key]
		c.mu.Unlock()
		if ok && c.maxAge > 0 && c.clock.Since(e.readAt) < c.maxAge {
			return e.creds, nil
		}
	}
	return c.Read(ctx, reader, pool, secretNamespaces)
}

// Forget drops the entry of the pool's Secret: vCenter refused the credentials, so the next pass reads
// the Secret again (it may have been rotated since).
func (c *Cache) Forget(pool *afv1.VsphereAgentPool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, credentialsSecretKey(pool))
}

// credentialsSecretKey is the pool's credentials Secret (its namespace defaulted to the pool's).
func credentialsSecretKey(pool *afv1.VsphereAgentPool) types.NamespacedName {
	ref := pool.Spec.VSphere.CredentialsSecretRef
	ns := ref.Namespace
	if ns == "" {
		ns = pool.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: ref.Name}
}

// ForgetRefused drops the entry when err says vCenter refused the credentials (login failed, or the
// session stayed invalid after a new login); other errors keep it.
func (c *Cache) ForgetRefused(pool *afv1.VsphereAgentPool, err error) {
	if vsphere.ClassOf(err) == vsphere.ClassAuth {
		c.Forget(pool)
	}
}

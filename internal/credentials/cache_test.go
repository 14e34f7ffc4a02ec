package credentials

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// The pool's pass reads the credentials Secret from the API server every time and shares what it read
// with the VM passes for MaxAge; a rotated Secret is seen by the next pool pass at once, credentials
// vCenter refused and a Secret gone are never served from the cache, and the cross-namespace rule is
// applied on every call. Runs against a real API server (envtest).
func TestCredentialsCacheServesVMPassesWhatThePoolPassRead(t *testing.T) {
	ctx := context.Background()
	_, c := testenv.StartForTest(t, testenv.Options{WithoutExternalCRDs: true})
	for _, ns := range []string{"ns", "creds"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(ns, password string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vcenter"},
			StringData: map[string]string{"server": "vcenter.example.com", "username": "u", "password": password}}
	}
	for _, s := range []*corev1.Secret{secret("ns", "first"), secret("creds", "other")} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	pool := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "workers"}}
	pool.Spec.VSphere.CredentialsSecretRef = afv1.SecretReference{Name: "vcenter"}
	crossPool := pool.DeepCopy()
	crossPool.Name, crossPool.Spec.VSphere.CredentialsSecretRef.Namespace = "cross", "creds"

	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reader := &countingReader{Reader: c}
	cache := NewCache(clk, 15*time.Second)
	password := func(read func() (vsphere.Credentials, error)) string {
		t.Helper()
		creds, err := read()
		if err != nil {
			t.Fatal(err)
		}
		return creds.Password
	}
	poolPass := func(p *afv1.VsphereAgentPool) func() (vsphere.Credentials, error) {
		return func() (vsphere.Credentials, error) { return cache.Read(ctx, reader, p, []string{"creds"}) }
	}
	vmPass := func(p *afv1.VsphereAgentPool, allowed []string) func() (vsphere.Credentials, error) {
		return func() (vsphere.Credentials, error) { return cache.Recent(ctx, reader, p, allowed) }
	}
	step := func(name string, read func() (vsphere.Credentials, error), wantPassword string, wantGets int32) {
		t.Helper()
		before := reader.gets.Load()
		if got := password(read); got != wantPassword {
			t.Errorf("%s: password %q, want %q", name, got, wantPassword)
		}
		if got := reader.gets.Load() - before; got != wantGets {
			t.Errorf("%s: %d API reads, want %d", name, got, wantGets)
		}
	}

	step("a VM pass with nothing read yet reads the Secret", vmPass(pool, nil), "first", 1)
	step("the next VM pass uses it", vmPass(pool, nil), "first", 0)
	step("a pool pass always reads", poolPass(pool), "first", 1)

	rotated := secret("ns", "second")
	if err := c.Get(ctx, client.ObjectKeyFromObject(rotated), rotated); err != nil {
		t.Fatal(err)
	}
	rotated.Data = map[string][]byte{"server": []byte("vcenter.example.com"), "username": []byte("u"), "password": []byte("second")}
	if err := c.Update(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	clk.Step(14 * time.Second)
	step("within MaxAge a VM pass still uses what the pool read", vmPass(pool, nil), "first", 0)
	step("the pool's next pass sees the rotation at once", poolPass(pool), "second", 1)
	step("and the VM passes with it", vmPass(pool, nil), "second", 0)
	clk.Step(15 * time.Second)
	step("after MaxAge a VM pass reads for itself", vmPass(pool, nil), "second", 1)

	cache.ForgetRefused(pool, vsphere.NewError(vsphere.ClassTransient, "login", "connection reset"))
	step("a transient error keeps the entry", vmPass(pool, nil), "second", 0)
	cache.ForgetRefused(pool, vsphere.NewError(vsphere.ClassAuth, "login", "InvalidLogin"))
	step("credentials vCenter refused are read again", vmPass(pool, nil), "second", 1)

	step("a cross-namespace pool pass, allowed", poolPass(crossPool), "other", 1)
	if _, err := cache.Recent(ctx, reader, crossPool, []string{"elsewhere"}); VSphereReason(err) != afv1.ReasonCrossNamespaceSecretRefused {
		t.Errorf("cross-namespace Secret cached, its namespace no longer allowed: %v, want %s", err, afv1.ReasonCrossNamespaceSecretRefused)
	}

	if err := c.Delete(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Read(ctx, reader, pool, nil); VSphereReason(err) != afv1.ReasonCredentialsNotFound {
		t.Fatalf("pool pass after the Secret's deletion: %v, want %s", err, afv1.ReasonCredentialsNotFound)
	}
	before := reader.gets.Load()
	if _, err := cache.Recent(ctx, reader, pool, nil); VSphereReason(err) != afv1.ReasonCredentialsNotFound {
		t.Errorf("VM pass after the Secret's deletion: %v, want %s", err, afv1.ReasonCredentialsNotFound)
	}
	if reader.gets.Load()-before != 1 {
		t.Errorf("VM pass after the Secret's deletion served from the cache")
	}
}

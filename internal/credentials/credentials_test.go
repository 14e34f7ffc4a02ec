package credentials

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// forbiddenIn answers every read of a Secret in namespace ns with the API server's Forbidden (the
// operator's RBAC does not reach that namespace: a MultiNamespace install that does not target it).
type forbiddenIn struct {
	client.Reader
	ns string
}

func (r forbiddenIn) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Namespace == r.ns {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("cannot get resource secrets in this namespace"))
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestCrossNamespaceSecretRefusalRevealsNothing: a pool names Secrets in other namespaces. Only one in
// an allowed namespace holding valid credentials is used; every other case (namespace not allowed,
// whether the Secret exists or not; allowed but missing, forbidden or invalid) gives the same reason and
// the same text for the same Secret name, so the pool's conditions tell its author nothing about Secrets
// they cannot read. A Secret in the pool's own namespace keeps its precise errors. Against envtest.
func TestCrossNamespaceSecretRefusalRevealsNothing(t *testing.T) {
	ctx := context.Background()
	_, c := testenv.StartForTest(t, testenv.Options{WithoutExternalCRDs: true})
	for _, ns := range []string{"pools", "allowed", "notallowed", "locked"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	valid := map[string]string{"server": "vcenter.example.com", "username": "u", "password": "p"}
	for _, s := range []struct {
		ns, name string
		data     map[string]string
	}{
		{"allowed", "vcenter", valid},
		{"allowed", "db-password", map[string]string{"password": "not a vCenter"}},
		{"notallowed", "vcenter", valid},
		{"locked", "vcenter", valid},
	} {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name}, StringData: s.data}); err != nil {
			t.Fatal(err)
		}
	}
	allowed := []string{"allowed", "locked"}
	reader := forbiddenIn{Reader: c, ns: "locked"}
	load := func(ns, name string) error {
		pool := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "pools", Name: "workers"}}
		pool.Spec.VSphere.CredentialsSecretRef = afv1.SecretReference{Namespace: ns, Name: name}
		_, err := Load(ctx, reader, pool, allowed)
		return err
	}

	if err := load("allowed", "vcenter"); err != nil {
		t.Fatalf("a valid Secret in an allowed namespace: %v", err)
	}
	for _, tc := range []struct {
		name, ns, secret string
	}{
		{"not allowed, the Secret exists", "notallowed", "vcenter"},
		{"not allowed, no such Secret", "notallowed", "missing"},
		{"allowed, no such Secret", "allowed", "missing"},
		{"allowed, the Secret exists but is no vCenter credential", "allowed", "db-password"},
		{"allowed, the operator may not read it", "locked", "vcenter"},
		{"allowed, the operator may not read it, no such Secret", "locked", "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := load(tc.ns, tc.secret)
			if VSphereReason(err) != afv1.ReasonCrossNamespaceSecretRefused {
				t.Fatalf("reason %q (%v), want %s", VSphereReason(err), err, afv1.ReasonCrossNamespaceSecretRefused)
			}
			if want := CrossNamespaceRefusal("pools", tc.ns, tc.secret).Error(); err.Error() != want {
				t.Fatalf("error %q\nwant the one refusal text %q", err, want)
			}
			for _, leak := range []string{"not found", "forbidden", "lacks", "exists"} {
				if strings.Contains(strings.ToLower(err.Error()), leak) {
					t.Fatalf("error %q says %q", err, leak)
				}
			}
		})
	}

	// The refusal of an existing and of a missing Secret of one name is the same text: delete one and
	// read again.
	before := load("notallowed", "vcenter").Error()
	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "notallowed", Name: "vcenter"}}); err != nil {
		t.Fatal(err)
	}
	if after := load("notallowed", "vcenter").Error(); after != before {
		t.Fatalf("refusal changed once the Secret was deleted:\n%s\n%s", before, after)
	}

	// The pool's own namespace: a missing Secret is named as such (its author can see their namespace).
	if err := load("pools", "missing"); VSphereReason(err) != afv1.ReasonCredentialsNotFound {
		t.Fatalf("own namespace, no such Secret: %v, want %s", err, afv1.ReasonCredentialsNotFound)
	}
}

package olmcheck

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReplaceCRDs updates the served CRDs in place (a user applying crds.yaml, or OLM replacing them:
// stored objects stay) and waits until each is established again. The client's scheme must know
// apiextensions/v1.
func ReplaceCRDs(ctx context.Context, t T, c client.Client, crds map[string]*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	for name, want := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			crd.Spec = *want.Spec.DeepCopy()
			if err := c.Update(ctx, crd); err != nil && !apierrors.IsConflict(err) {
				return false, err
			} else if err != nil {
				return false, nil // changed meanwhile: read again
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("replacing CRD %s: %v", name, err)
		}
		waitServed(ctx, t, c, name)
	}
}

// ReinstallCRD deletes the CRD name (and with it every stored object of its kind), creates want in
// its place and waits until it is served. A newly created CRD serves exactly its own schema.
func ReinstallCRD(ctx context.Context, t T, c client.Client, name string, want *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	old := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting CRD %s: %v", name, err)
	}
	Poll(ctx, t, "CRD "+name+" deleted", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: want.Labels, Annotations: want.Annotations}, Spec: *want.Spec.DeepCopy()}
	if err := c.Create(ctx, crd); err != nil {
		t.Fatalf("creating CRD %s: %v", name, err)
	}
	waitServed(ctx, t, c, name)
}

// waitServed waits until the CRD is established and its kind answers a list (discovery caught up).
func waitServed(ctx context.Context, t T, c client.Client, name string) {
	t.Helper()
	Poll(ctx, t, "CRD "+name+" served", func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return false, err
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: got.Spec.Group, Version: storageVersion(got), Kind: got.Spec.Names.ListKind})
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return c.List(ctx, list) == nil, nil
			}
		}
		return false, nil
	})
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// Poll waits (bounded) for cond; the API server applies CRD changes asynchronously.
func Poll(ctx context.Context, t T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// EnsureNamespace creates the namespace unless it exists.
func EnsureNamespace(ctx context.Context, t T, c client.Client, name string) {
	t.Helper()
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

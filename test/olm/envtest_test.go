package olm

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// startAPIServerWith starts envtest and makes crds the served definitions of our kinds. envtest itself
// installs config/crd/bases (and merges extra paths in random order), so the wanted CRDs are installed
// afresh here: delete, recreate, wait until served. A newly created CRD serves exactly its own schema.
func startAPIServerWith(t *testing.T, crds map[string]*apiextensionsv1.CustomResourceDefinition) client.Client {
	t.Helper()
	env, err := testenv.Start(testenv.Options{WithoutExternalCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	scheme := testenv.Scheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for name, want := range crds {
		reinstallCRD(ctx, t, c, name, want)
	}
	return c
}

func reinstallCRD(ctx context.Context, t *testing.T, c client.Client, name string, want *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	old := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	poll(ctx, t, "CRD "+name+" deleted", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: want.Labels, Annotations: want.Annotations}, Spec: *want.Spec.DeepCopy()}
	if err := c.Create(ctx, crd); err != nil {
		t.Fatalf("creating CRD %s: %v", name, err)
	}
	// Served means: established, and the kind answers a list (discovery caught up).
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: storageVersion(crd), Kind: crd.Spec.Names.ListKind})
	poll(ctx, t, "CRD "+name+" served", func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return false, err
		}
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

// poll waits (bounded) for cond; the API server applies CRD changes asynchronously.
func poll(ctx context.Context, t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func ensureNamespace(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

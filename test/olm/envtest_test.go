package olm

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/olm/olmcheck"
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
	c, err := client.New(env.Config, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for name, want := range crds {
		olmcheck.ReinstallCRD(ctx, t, c, name, want)
	}
	return c
}

func ensureNamespace(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	olmcheck.EnsureNamespace(ctx, t, c, name)
}

package world_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/sim/capicore"
	"github.com/containeroo/agent-forge-operator/internal/testenv"
)

// k8s talks to the one API server shared by every test of the package; kubeconfig reaches it as
// cluster-admin (the world's hosted-cluster Secrets, so CAPI's ClusterCache reads Nodes here).
var (
	k8s        client.Client
	kubeconfig []byte
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	k8s, err = client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if kubeconfig, err = capicore.Kubeconfig(env.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// CAPI core for real: it, not the world, turns MachineDeployments into Machines and deletes them.
	capi, err := capicore.Start(context.Background(), env.Config, capicore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = capi.Stop() }()
	return m.Run()
}

// newNamespace creates a fresh namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sim-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("namespace: %v", err)
	}
	return ns.Name
}

func splitPath(p string) []string { return strings.Split(p, ".") }

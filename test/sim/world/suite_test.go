package world_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/capicore"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// k8s talks to the one API server shared by every test of the package; kubeconfig reaches it as
// cluster-admin (the world's hosted-cluster Secrets, so CAPI's ClusterCache reads Nodes here).
var (
	k8s        client.Client
	kubeconfig []byte
	// images serves the discovery image of every scenario's InfraEnv.
	images *sim.ISOServer
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
	capiLog := filepath.Join(os.TempDir(), fmt.Sprintf("world-capi-core-%d.log", os.Getpid()))
	capi, err := capicore.Start(context.Background(), env.Config, capicore.Options{LogPath: capiLog})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = capi.Stop() }()
	defer stopLegacy()
	// The discovery image every scenario's InfraEnv serves (the tests' VMs boot its bytes).
	images = sim.NewISOServer(sim.ISOServerOptions{Seed: 1, Size: 64 << 10})
	defer images.Close()
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

// legacy is a second API server whose AgentMachine CRD is the older provider generation's (CAPI v1beta1
// conditions with severity), with its own CAPI core: the world's ProviderUIDLabel writes that shape,
// which the current CRD refuses (as a hub's CRD would). Started on first use.
var legacy struct {
	once       sync.Once
	err        error
	env        *testenv.Env
	capi       *capicore.Process
	k8s        client.Client
	kubeconfig []byte
}

// stopLegacy stops the older provider's API server and CAPI core if they were started.
func stopLegacy() {
	if legacy.capi != nil {
		_ = legacy.capi.Stop()
	}
	if legacy.env != nil {
		_ = legacy.env.Stop()
	}
}

// useProvider points the package's client (k8s, kubeconfig) at an API server whose AgentMachine CRD
// matches the provider generation, for the rest of the (sequential) test.
func useProvider(t *testing.T, gen world.ProviderGeneration) {
	t.Helper()
	if gen != world.ProviderUIDLabel {
		return
	}
	legacy.once.Do(func() {
		legacy.env, legacy.err = testenv.Start(testenv.Options{LegacyAgentProvider: true})
		if legacy.err != nil {
			return
		}
		if legacy.k8s, legacy.err = client.New(legacy.env.Config, client.Options{Scheme: legacy.env.Scheme}); legacy.err != nil {
			return
		}
		if legacy.kubeconfig, legacy.err = capicore.Kubeconfig(legacy.env.Config); legacy.err != nil {
			return
		}
		legacy.capi, legacy.err = capicore.Start(context.Background(), legacy.env.Config, capicore.Options{})
	})
	if legacy.err != nil {
		t.Fatalf("the older provider's API server: %v", legacy.err)
	}
	saved, savedKC := k8s, kubeconfig
	k8s, kubeconfig = legacy.k8s, legacy.kubeconfig
	t.Cleanup(func() { k8s, kubeconfig = saved, savedKC })
}

//go:build linux

package realolm

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/capicore"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// poolTimeout bounds the way from the pool's creation to its first VM in the simulator (the manager
// downloads and uploads the discovery ISO first).
const poolTimeout = 3 * time.Minute

// servePoolUnderOLM is a short demo on OLM's cluster, served by the manager runManagerUnderOLM started (its
// ServiceAccount, the RBAC OLM made from the CSV): the vCenter simulator, a discovery-ISO server, real Cluster
// API core and the world driver (HyperShift, the Agent CAPI provider, assisted-service) join the cluster; the
// shipped sample pool, adapted to the simulator, serves a NodePool scaled to 1. The world's AgentMachine waits
// with NoSuitableAgents, and the manager answers it with a VsphereAgent and its VM in the simulator.
func (w *olmWorld) servePoolUnderOLM(ctx context.Context, t *testing.T, manager *Child) {
	t.Helper()
	started := time.Now()
	vc, err := vcsim.StartProcess(ctx, vcsim.Options{})
	if err != nil {
		t.Fatalf("starting the vCenter simulator: %v", err)
	}
	t.Cleanup(vc.Close)
	gov, err := vc.Login(ctx)
	if err != nil {
		t.Fatalf("logging in to the simulator: %v", err)
	}
	t.Cleanup(func() { _ = gov.Logout(context.Background()) })
	iso := sim.NewISOServer(sim.ISOServerOptions{Seed: 1, Size: 256 << 10, ETag: true, LastModified: true})
	t.Cleanup(iso.Close)
	capi, err := capicore.Start(ctx, w.env.Config, capicore.Options{LogPath: filepath.Join(t.TempDir(), "capi-core.log")})
	if err != nil {
		t.Fatalf("starting Cluster API core: %v", err)
	}
	t.Cleanup(func() { _ = capi.Stop() })
	kubeconfig, err := capicore.Kubeconfig(w.env.Config)
	if err != nil {
		t.Fatal(err)
	}

	pool, err := harness.LoadSamplePool()
	if err != nil {
		t.Fatal(err)
	}
	changes, err := harness.AdaptPoolToSimulator(ctx, vc, gov.Client, iso.URL(), pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sample pool adapted to the simulator: %v", changes)
	vcURL := *vc.URL
	vcURL.User = url.UserPassword(vcsim.Username, vcsim.Password)
	s, err := world.Setup(ctx, w.c, world.SetupOptions{
		Namespace: pool.Namespace, HostedCluster: pool.Spec.HostedClusterRef.Name, NodePool: pool.Spec.NodePoolRef.Name,
		InfraEnv: pool.Spec.InfraEnvRef.Name, AgentLabels: pool.Spec.Agent.LabelSet(), SecretName: pool.Spec.VSphere.CredentialsSecretRef.Name,
		ISOURL: iso.URL(), VCenter: &vcURL,
	})
	if err != nil {
		t.Fatal(err)
	}
	pool.Spec.ControlPlaneNamespace = s.ControlPlaneNamespace
	ie := s.InfraEnv
	d, err := world.New(world.Options{Client: w.c, VSphere: gov.Client, Datacenter: vcsim.Datacenter, Kubeconfig: kubeconfig,
		Namespaces: s.Namespaces(), InfraEnv: &ie})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(runCtx, 200*time.Millisecond) }()
	t.Cleanup(func() { stop(); <-done })

	if err := w.c.Create(ctx, pool); err != nil {
		t.Fatalf("creating the pool: %v", err)
	}
	if err := d.SetReplicas(ctx, s.NodePool, 1); err != nil {
		t.Fatal(err)
	}
	alive := func() {
		if done, why := manager.Exited(); done {
			t.Fatalf("the manager exited (%v) under OLM's RBAC:\n%s", why, manager.Tail())
		}
	}
	w.waitFor(ctx, t, poolTimeout, "the world's AgentMachine waits with NoSuitableAgents", func() (bool, error) {
		alive()
		views, err := d.Observe(ctx, s.NodePool)
		if err != nil {
			return false, err
		}
		for _, v := range views {
			if v.Waiting {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d Machines, none waiting", len(views))
	})
	var vmName string
	w.waitFor(ctx, t, poolTimeout, "the manager under OLM's RBAC creates a VsphereAgent and its VM in the simulator", func() (bool, error) {
		alive()
		var vas afv1.VsphereAgentList
		if err := w.c.List(ctx, &vas, client.InNamespace(pool.Namespace)); err != nil {
			return false, err
		}
		for _, va := range vas.Items {
			if vc.CountVMsNamed(va.Name) == 1 {
				vmName = va.Name
				return true, nil
			}
		}
		return false, fmt.Errorf("%d VsphereAgents, none with a VM", len(vas.Items))
	})
	t.Logf("VM %s created for the waiting AgentMachine %s after the pool", vmName, time.Since(started).Round(time.Second))
}

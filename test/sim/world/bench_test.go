package world_test

import (
	"fmt"
	"testing"

	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// BenchmarkIdleStepThousandMachines measures one world pass over 50 NodePools × 20 waiting
// AgentMachines (the bench-scale shape) with nothing to do: the world's own overhead per tick.
func BenchmarkIdleStepThousandMachines(b *testing.B) {
	ctx := b.Context()
	ns := fmt.Sprintf("bench-%d", b.N)
	var namespaces []string
	for i := range 50 {
		s, err := world.Setup(ctx, k8s, world.SetupOptions{
			Namespace: ns, HostedCluster: fmt.Sprintf("hc%d", i), NodePool: fmt.Sprintf("np%d", i), InfraEnv: "infra",
		})
		if err != nil {
			b.Fatal(err)
		}
		namespaces = append(namespaces, s.ControlPlaneNamespace)
	}
	namespaces = append(namespaces, ns)
	d, err := world.New(world.Options{Client: k8s, Namespaces: namespaces})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		np := world.Scenario{}
		np.NodePool.Namespace, np.NodePool.Name = ns, fmt.Sprintf("np%d", i)
		if err := d.SetReplicas(ctx, np.NodePool, 20); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := d.Settle(ctx, 5); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if n, err := d.Step(ctx); err != nil || n != 0 {
			b.Fatalf("idle step: %d writes, %v", n, err)
		}
	}
}

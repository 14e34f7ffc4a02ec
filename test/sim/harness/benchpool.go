package harness

import (
	"context"
	"regexp"

	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// BenchPoolLabel is the Agent label a bench pool asks for; its value is the scenario's namespace, so
// each pool's Agents stay its own.
const BenchPoolLabel = "bench.agent-forge/pool"

// BenchPool is the pool the benches (bench-scale, bench-latency) create for one scenario: the sample
// (already adapted to the simulator) pointed at the scenario's objects, a VM folder of its own and a
// small VM template. Callers set what their bench varies (e.g. spec.standby).
func BenchPool(sample *afv1.VsphereAgentPool, s *world.Scenario) *afv1.VsphereAgentPool {
	p := sample.DeepCopy()
	p.Namespace, p.Name = s.Namespace, "workers"
	p.Spec.HostedClusterRef.Name, p.Spec.NodePoolRef.Name, p.Spec.InfraEnvRef.Name = s.HostedCluster.Name, s.NodePool.Name, s.InfraEnv.Name
	p.Spec.ControlPlaneNamespace = s.ControlPlaneNamespace
	p.Spec.VSphere.CredentialsSecretRef.Name = s.Secret.Name
	p.Spec.VSphere.Folder = "agent-forge/" + s.Namespace
	p.Spec.Agent.Labels = map[string]afv1.LabelValue{BenchPoolLabel: afv1.LabelValue(s.Namespace)}
	p.Spec.Template = afv1.VMTemplateSpec{NumCPUs: 2, MemoryMiB: 8192, DiskGiB: 100} // assisted-service's worker minimums (thin disk)
	return p
}

// BenchInfraEnv is world.Options.InfraEnvFor for bench pools: a VM registers with the InfraEnv "ie"
// of the namespace its cached ISO's datastore path names ("[ds] agent-forge/<ns>/<pool>/<sha>.iso").
func BenchInfraEnv(vm world.VM) (types.NamespacedName, bool) {
	m := benchISONamespace.FindStringSubmatch(vm.ISOPath)
	if m == nil {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: m[1], Name: "ie"}, true
}

var benchISONamespace = regexp.MustCompile(`\] agent-forge/([^/]+)/`)

// StartBench starts the harness the benches run on (a small ISO: they measure the operator, not the
// download) and returns it with the shipped sample pool adapted to its simulator, ready for BenchPool.
// The caller closes the harness.
func StartBench(ctx context.Context, progress func(string)) (*Harness, *afv1.VsphereAgentPool, error) {
	h, err := Start(ctx, Options{Progress: progress, ISOSize: 64 << 10})
	if err != nil {
		return nil, nil, err
	}
	sample, err := LoadSamplePool()
	if err == nil {
		_, err = h.AdaptToSimulator(ctx, sample)
	}
	if err != nil {
		_ = h.Close()
		return nil, nil, err
	}
	return h, sample, nil
}

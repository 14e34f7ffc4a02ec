package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// World timings: long enough to watch each step, short enough for a ~2 minute demo.
const (
	worldInterval     = 250 * time.Millisecond
	registrationDelay = 2 * time.Second
	validationDelay   = time.Second
	installDelay      = 5 * time.Second
	observeInterval   = 500 * time.Millisecond
)

// scene is the hub, world and operator of the demo.
type scene struct {
	pool     types.NamespacedName
	nodePool types.NamespacedName
	world    *world.Driver
	manager  *harness.ManagerProcess
	started  time.Time
}

func setupScene(ctx context.Context, d *demo, outDir, managerBin string) (*scene, error) {
	pool, err := harness.LoadSamplePool()
	if err != nil {
		return nil, err
	}
	d.v.println("==> loaded %s (pool %s/%s for NodePool %s)", harness.SamplePoolPath, pool.Namespace, pool.Name, pool.Spec.NodePoolRef.Name)
	changes, err := d.h.AdaptToSimulator(ctx, pool)
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		d.v.println("    adjusted for the simulator: %s", c)
	}
	if len(changes) == 0 {
		d.v.println("    no field needed adjusting for the simulator")
	}
	d.useZones(pool)
	d.useStandby(pool)

	s, err := d.h.Scenario(ctx, world.SetupOptions{
		Namespace: pool.Namespace, HostedCluster: pool.Spec.HostedClusterRef.Name, NodePool: pool.Spec.NodePoolRef.Name,
		InfraEnv: pool.Spec.InfraEnvRef.Name, AgentLabels: pool.Spec.Agent.LabelSet(), SecretName: pool.Spec.VSphere.CredentialsSecretRef.Name,
	})
	if err != nil {
		return nil, err
	}
	if pool.Spec.ControlPlaneNamespace != s.ControlPlaneNamespace {
		d.v.println("    adjusted: spec.controlPlaneNamespace %q -> %q (HyperShift's <namespace>-<hostedcluster>)", pool.Spec.ControlPlaneNamespace, s.ControlPlaneNamespace)
		pool.Spec.ControlPlaneNamespace = s.ControlPlaneNamespace
	}
	d.v.println("==> hub: namespaces %v, HostedCluster %s, NodePool %s (replicas 0, agentLabelSelector %v), InfraEnv %s (ISO URL: HTTPS on loopback)",
		s.Namespaces(), s.HostedCluster.Name, s.NodePool.Name, s.AgentLabels, s.InfraEnv.Name)
	d.v.println("    Secret %s points at the simulator (server %s, insecure \"true\": acceptable for a loopback simulator only; use caBundle/thumbprint for a real vCenter)",
		s.Secret, d.h.VC.URL.Host)

	var staticIPs *world.StaticIPOptions
	if d.cfg.staticIPs {
		if staticIPs, err = d.enableStaticIPs(ctx, s, pool); err != nil {
			return nil, err
		}
	}
	ie := s.InfraEnv
	w, err := d.h.StartWorld(world.Options{
		Namespaces: s.Namespaces(), InfraEnv: &ie, StaticIP: staticIPs,
		RegistrationDelay: registrationDelay, ValidationDelay: validationDelay, InstallDelay: installDelay,
	}, worldInterval)
	if err != nil {
		return nil, err
	}
	d.v.println("==> world driver running: plays HyperShift (NodePool replicas -> MachineDeployment, AgentMachineTemplate, Cluster), the Agent CAPI provider (reserves Agents, pre-terminate hook, unbinds on deletion), assisted-service (Agents register %s after a VM boots the ISO, install %s after binding) and the workers' kubelets (Nodes); it never creates or deletes a Machine",
		registrationDelay, installDelay)

	bundle, err := d.trustBundle(ctx)
	if err != nil {
		return nil, err
	}
	d.v.println("==> starting the real manager binary (logs: %s)", filepath.Join(outDir, "manager.log"))
	m, err := d.h.StartManagerProcess(ctx, harness.ProcessOptions{
		Binary: managerBin, LogPath: filepath.Join(outDir, "manager.log"), KubeconfigPath: filepath.Join(d.h.TempDir(), "manager.kubeconfig"),
		ExtraArgs: []string{"--trusted-ca-bundle=" + bundle},
	})
	if err != nil {
		return nil, err
	}
	d.v.println("    manager pid %d is ready (/readyz), leader election off, kubeconfig for the embedded API server, --trusted-ca-bundle=%s", m.PID, bundle)

	if err := d.h.Client.Create(ctx, pool); err != nil {
		return nil, fmt.Errorf("creating the pool: %w", err)
	}
	d.v.println("==> created VsphereAgentPool %s/%s (cleanupPolicy %s, iso.ejectAfterInstall %t)", pool.Namespace, pool.Name, pool.Spec.CleanupPolicy, pool.Spec.ISO.EjectAfterInstall)
	d.resolveEject(pool.Spec.ISO.EjectAfterInstall)
	return &scene{pool: types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}, nodePool: s.NodePool, world: w, manager: m, started: time.Now()}, nil
}

// resolveEject decides whether missing ejection is a violation: by default when the pool opts in.
func (d *demo) resolveEject(optedIn bool) {
	switch d.cfg.requireEject {
	case "1":
		d.ejectRequired = true
		d.v.println("    DEMO_REQUIRE_EJECT=1: every worker's ISO must be ejected")
	case "0":
		d.v.println("    DEMO_REQUIRE_EJECT=0: a build that never starts ejecting is reported as 0 ejected, not a violation")
	default:
		d.ejectRequired = optedIn
		if optedIn {
			d.v.println("    the pool opts in to ejection: every worker's ISO must be ejected (DEMO_REQUIRE_EJECT=0 tolerates a build that never ejects)")
		}
	}
}

// waitFor observes and redraws until cond holds on a snapshot, ctx ends or timeout passes.
// It returns the last snapshot and whether cond held.
func (d *demo) waitFor(ctx context.Context, stage string, timeout time.Duration, cond func(*harness.Snapshot) bool) (*harness.Snapshot, bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		s, err := d.observe(ctx)
		if err != nil {
			return nil, false, err
		}
		d.v.render(stage, s, d.t)
		if cond(s) {
			return s, true, nil
		}
		if exited, werr := d.sc.manager.Exited(); exited {
			if werr == nil {
				werr = errors.New("exit status 0")
			}
			return s, false, fmt.Errorf("the manager process exited (%w); see bin/demo/manager.log:\n%s", werr, d.sc.manager.LogTail(15))
		}
		if time.Now().After(deadline) {
			return s, false, nil
		}
		select {
		case <-ctx.Done():
			return s, false, errStopped
		case <-time.After(observeInterval):
		}
	}
}

func (d *demo) observe(ctx context.Context) (*harness.Snapshot, error) {
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	s, err := d.h.Observe(octx, d.sc.pool, d.sc.world, d.sc.nodePool)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errStopped
		}
		return nil, err
	}
	d.t.Observe(s)
	d.checkBacking(s)
	if err := d.checkZones(octx, s); err != nil {
		return nil, err
	}
	d.checkStaticIPs(s)
	if d.door != nil {
		d.door.observe(s)
		d.t.SetLockQuestionsAnswered(d.door.answered())
	}
	return s, nil
}

// hold keeps observing a plateau of `machines` Machines for a while and flags any moment the pool's VM
// count leaves machines + standby, and (each once) any VM that backs no Machine beyond the standby's
// ready VMs.
func (d *demo) hold(ctx context.Context, stage string, machines int, dur time.Duration) error {
	want := machines + d.cfg.standby
	_, _, err := d.waitFor(ctx, stage, dur, func(s *harness.Snapshot) bool {
		for _, msg := range s.PlateauViolations(d.cfg.standby) {
			if !d.plateauSeen[msg] {
				d.plateauSeen[msg] = true
				d.t.Violate("%s: %s", stage, msg)
			}
		}
		if len(s.VMs) != want {
			d.t.Violate("%s: the simulator had %d VMs with the pool's marker, want %d", stage, len(s.VMs), want)
			return true
		}
		return false
	})
	return err
}

// checkBacking flags, at every snapshot, a Machine (live or being deleted) whose reserved Agent's VM is
// no longer in the simulator: the operator must never destroy a VM that still backs a Machine, whichever
// Machines CAPI's MachineSet chose to delete. Observe lists the VMs before the Machines, so a Machine seen
// without its VM still existed after the VM was gone.
func (d *demo) checkBacking(s *harness.Snapshot) {
	hosts := map[string]bool{}
	for _, vm := range s.VMs {
		hosts[world.AgentNameFor(vm.BIOSUUID)] = true
	}
	for _, m := range s.Machines {
		_, agent, ok := strings.Cut(m.Agent, "/")
		if !ok || hosts[agent] || d.backingSeen[m.Name] {
			continue
		}
		d.backingSeen[m.Name] = true
		d.t.Violate("Machine %s (deleting: %t) is backed by Agent %s whose VM is gone: a VM backing an existing Machine was destroyed", m.Name, m.Deleting, agent)
	}
}

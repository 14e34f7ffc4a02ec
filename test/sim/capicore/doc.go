// Package capicore runs the real Cluster API core controllers (sigs.k8s.io/cluster-api v1.14.2: Cluster,
// Machine, MachineSet, MachineDeployment and the ClusterCache they share) as a child process against a
// kube-apiserver, for tests and the demo. The binary is hack/peers/cmd/capi-core, a module of its own (so
// the project's go.mod never gains the cluster-api dependency), built by hack/peers-build.sh (make peers).
//
// What CAPI needs on the API server, in HyperShift's Agent-platform shape (capicore_test.go builds it):
//   - The CRDs of test/crds: Cluster, Machine, MachineSet, MachineDeployment, MachineDrainRule (served at
//     v1beta2, conversion None), HostedControlPlane, AgentCluster, AgentMachine, AgentMachineTemplate; the
//     last four labelled cluster.x-k8s.io/v1beta1: v1beta1 (the contract CAPI reads; no v1beta2 label).
//   - Secret <cluster>-kubeconfig, key "value", LABELLED cluster.x-k8s.io/cluster-name: <cluster> (CAPI's
//     ClusterCache reads it through a cache of labelled Secrets only): a kubeconfig for the "workload
//     cluster", which is the same API server here (Kubeconfig renders one).
//   - HostedControlPlane with status ready, initialized and externalManagedControlPlane: true (the last
//     allows Node deletion without control-plane Machines); HyperShift's spec carries no spec.version, so
//     the MachineSet preflight checks pass through.
//   - AgentCluster with spec.controlPlaneEndpoint and status ready: true (+ the required
//     status.clusterDeploymentReference).
//   - Cluster (v1beta2) with infrastructureRef (AgentCluster) and controlPlaneRef (HostedControlPlane); the
//     Cluster controller derives status.initialization.{infrastructureProvisioned,controlPlaneInitialized},
//     condition ControlPlaneInitialized and spec.controlPlaneEndpoint from them: write no Cluster status.
//   - MachineDeployments (v1beta2) with what CAPI's absent webhooks would default: replicas, selector and
//     template labels incl. cluster.x-k8s.io/cluster-name, rollout strategy RollingUpdate with maxSurge and
//     maxUnavailable, template.spec.deletion.nodeDeletionTimeoutSeconds.
//
// Nodes: CAPI finds a Machine's Node on the workload cluster by spec.providerID, once the AgentMachine has
// status.ready and spec.providerID (copied to the Machine). NodeHealthy=True needs the Node's Ready=True
// and MemoryPressure, DiskPressure, PIDPressure reported False.
package capicore

package world

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// completeInstallations plays assisted-service finishing a day-2 install InstallDelay after binding
// (Installed=True, state added-to-existing-cluster) and the installed host's kubelet registering its Node
// in the hosted cluster (this same API server), Ready, named by the Agent's hostname, with spec.nodeLabels.
// CAPI finds the Node once the provider's NodeProviderID controller has set its providerID.
func (d *Driver) completeInstallations(ctx context.Context) error {
	agents, err := d.listInPass(ctx, AgentGVK)
	if err != nil {
		return err
	}
	now := d.now()
	var done []*unstructured.Unstructured
	for _, agent := range agents {
		if !d.inScope(agent.GetNamespace()) || !unstructuredcond.IsTrue(agent, CondBound) || unstructuredcond.IsTrue(agent, CondInstalled) {
			continue
		}
		if s := stateOf(agent); s == stateInsufficient || s == statePendingUserAction {
			continue // waiting on its validations, or on the user after booting discovery again
		}
		if since := unstructuredcond.LastTransition(agent, CondBound); now.Sub(since) < d.opts.InstallDelay {
			continue
		}
		done = append(done, agent)
	}
	return d.forEach(ctx, len(done), func(ctx context.Context, i int) error {
		agent := done[i].DeepCopy() // the list may be a shared cache
		setInstalled(agent, now)
		if err := d.c.Status().Update(ctx, agent); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		d.wrote()
		d.log.Info("agent installed", "agent", client.ObjectKeyFromObject(agent))
		return d.registerNode(ctx, agent)
	})
}

// registerNode creates the installed host's Node (Ready) unless it exists.
func (d *Driver) registerNode(ctx context.Context, agent *unstructured.Unstructured) error {
	name := nodeNameOf(agent)
	if name == "" {
		return nil
	}
	lbls := map[string]string{"kubernetes.io/hostname": name, "node-role.kubernetes.io/worker": ""}
	extra, _, _ := unstructured.NestedStringMap(agent.Object, "spec", "nodeLabels")
	for k, v := range extra {
		lbls[k] = v
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	if err := d.c.Create(ctx, node); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	d.wrote()
	now := metav1.NewTime(d.now())
	// A kubelet reports Ready and the three pressures; CAPI's NodeHealthy reads all four.
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
	}
	node.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", OperatingSystem: "linux", Architecture: "amd64"}
	if err := d.c.Status().Update(ctx, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	d.wrote()
	d.log.Info("node registered", "node", name, "agent", client.ObjectKeyFromObject(agent))
	return nil
}

func nodeNameOf(agent *unstructured.Unstructured) string {
	host, _, _ := unstructured.NestedString(agent.Object, "spec", "hostname")
	if host == "" {
		host, _, _ = unstructured.NestedString(agent.Object, "status", "inventory", "hostname")
	}
	return host
}

// setNodeProviderIDs plays the provider's NodeProviderID controller: once an AgentMachine is ready it sets
// spec.providerID on the hosted cluster's Node named by the AgentMachine's InternalDNS address (through
// admin-kubeconfig upstream; here the hosted cluster is this API server). A Node that holds another
// providerID is left alone (upstream reports an error).
func (d *Driver) setNodeProviderIDs(ctx context.Context) error {
	ams, err := d.listInPass(ctx, AgentMachineGVK)
	if err != nil {
		return err
	}
	var todo []*unstructured.Unstructured
	for _, am := range ams {
		if ready, _, _ := unstructured.NestedBool(am.Object, "status", "ready"); ready && am.GetDeletionTimestamp() == nil {
			todo = append(todo, am)
		}
	}
	return d.forEach(ctx, len(todo), func(ctx context.Context, i int) error {
		am := todo[i]
		providerID, _, _ := unstructured.NestedString(am.Object, "spec", "providerID")
		name := ""
		addrs, _, _ := unstructured.NestedSlice(am.Object, "status", "addresses")
		for _, a := range addrs {
			if m, ok := a.(map[string]any); ok && m["type"] == "InternalDNS" {
				name, _ = m["address"].(string)
			}
		}
		if providerID == "" || name == "" || d.nodeHasProviderID(name+"|"+providerID) {
			return nil
		}
		var node corev1.Node
		if err := d.c.Get(ctx, types.NamespacedName{Name: name}, &node); err != nil {
			return client.IgnoreNotFound(err)
		}
		if node.Spec.ProviderID != "" {
			if node.Spec.ProviderID != providerID {
				d.log.Info("node holds another providerID", "node", name, "have", node.Spec.ProviderID, "want", providerID)
			}
			d.markNodeProviderID(name + "|" + providerID)
			return nil
		}
		patch := client.MergeFrom(node.DeepCopy())
		node.Spec.ProviderID = providerID
		if err := d.c.Patch(ctx, &node, patch); err != nil {
			return client.IgnoreNotFound(err)
		}
		d.wrote()
		d.markNodeProviderID(name + "|" + providerID)
		return nil
	})
}

func (d *Driver) nodeHasProviderID(name string) bool {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return d.nodesWithProviderID[name]
}

func (d *Driver) markNodeProviderID(name string) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	d.nodesWithProviderID[name] = true
}

// setInstalled gives an Agent the shapes of an installed day-2 host: added-to-existing-cluster, stage Done,
// Installed=True/InstallationCompleted, RequirementsMet=True/AgentInstallationStopped.
func setInstalled(agent *unstructured.Unstructured, now time.Time) {
	unstructuredcond.Set(agent, now,
		cond{Type: CondInstalled, Status: "True", Reason: ReasonInstallationCompleted, Message: "The installation has completed: Done"},
		cond{Type: CondRequirementsMet, Status: "True", Reason: "AgentInstallationStopped", Message: "The agent installation stopped"},
	)
	_ = unstructured.SetNestedField(agent.Object, stateAddedToCluster, "status", "debugInfo", "state")
	_ = unstructured.SetNestedField(agent.Object, "Done", "status", "progress", "currentStage")
}

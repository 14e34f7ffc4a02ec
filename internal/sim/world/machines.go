package world

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// SetReplicas plays the autoscaler and HyperShift: it sets the NodePool's spec.replicas to n and
// renders (or deletes) Machines + AgentMachines in the control-plane namespace right away. New
// AgentMachines wait with NoSuitableAgents; on scale-down, Machines without a nodeRef go first and
// are only marked deleting (Step unbinds their Agents and then lets them go).
func (d *Driver) SetReplicas(ctx context.Context, nodePool types.NamespacedName, n int) error {
	np := newObject(NodePoolGVK)
	if err := d.c.Get(ctx, nodePool, np); err != nil {
		return fmt.Errorf("world: reading NodePool %s: %w", nodePool, err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	if err := unstructured.SetNestedField(np.Object, int64(n), "spec", "replicas"); err != nil {
		return err
	}
	if err := d.c.Patch(ctx, np, patch); err != nil {
		return fmt.Errorf("world: scaling NodePool %s: %w", nodePool, err)
	}
	d.wrote()
	defer d.lock(phaseNodePools)()
	return d.reconcileNodePool(ctx, np)
}

// MachinesOf returns the Machines HyperShift rendered for a NodePool (deleting ones included).
func (d *Driver) MachinesOf(ctx context.Context, nodePool types.NamespacedName) ([]unstructured.Unstructured, error) {
	np := newObject(NodePoolGVK)
	if err := d.c.Get(ctx, nodePool, np); err != nil {
		return nil, err
	}
	ms, err := d.machinesOf(ctx, np)
	if err != nil {
		return nil, err
	}
	out := make([]unstructured.Unstructured, 0, len(ms))
	for _, m := range ms {
		out = append(out, *m)
	}
	return out, nil
}

func (d *Driver) reconcileNodePools(ctx context.Context) error {
	if d.opts.ManualMachines {
		return nil
	}
	nps, err := d.listInPass(ctx, NodePoolGVK)
	if err != nil {
		return err
	}
	// One list of Machines for every NodePool: this behaviour (under its lock) is the only one that
	// creates Machines, so the list stays right for counting while the workers render.
	machines, err := d.listInPass(ctx, MachineGVK)
	if err != nil {
		return err
	}
	byNodePool := map[string][]*unstructured.Unstructured{}
	for _, m := range machines {
		k := m.GetNamespace() + "|" + m.GetAnnotations()[AnnotationNodePool]
		byNodePool[k] = append(byNodePool[k], m)
	}
	// A NodePool that fails holds no other (each has its own MachineSet).
	var errs firstError
	_ = d.forEach(ctx, len(nps), func(ctx context.Context, i int) error {
		np := nps[i]
		clusterName, _, _ := unstructured.NestedString(np.Object, "spec", "clusterName")
		k := ControlPlaneNamespace(np.GetNamespace(), clusterName) + "|" + nodePoolKey(np)
		errs.add(d.reconcileNodePoolWith(ctx, np, byNodePool[k]))
		return nil
	})
	return errs.get()
}

func nodePoolKey(np *unstructured.Unstructured) string { return np.GetNamespace() + "/" + np.GetName() }

func (d *Driver) machinesOf(ctx context.Context, np *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	clusterName, _, _ := unstructured.NestedString(np.Object, "spec", "clusterName")
	cpNS := ControlPlaneNamespace(np.GetNamespace(), clusterName)
	var all []*unstructured.Unstructured
	if passCacheFrom(ctx) != nil && d.inScope(cpNS) {
		cached, err := d.listInPass(ctx, MachineGVK)
		if err != nil {
			return nil, err
		}
		all = cached
	} else {
		l := newList(MachineGVK)
		if err := d.c.List(ctx, l, client.InNamespace(cpNS)); err != nil {
			return nil, err
		}
		for i := range l.Items {
			all = append(all, &l.Items[i])
		}
	}
	var out []*unstructured.Unstructured
	for _, m := range all {
		if m.GetNamespace() == cpNS && m.GetAnnotations()[AnnotationNodePool] == nodePoolKey(np) {
			out = append(out, m)
		}
	}
	return out, nil
}

// reconcileNodePool makes the number of live Machines of an Agent-platform NodePool equal its replicas.
func (d *Driver) reconcileNodePool(ctx context.Context, np *unstructured.Unstructured) error {
	machines, err := d.machinesOf(ctx, np)
	if err != nil {
		return err
	}
	return d.reconcileNodePoolWith(ctx, np, machines)
}

// reconcileNodePoolWith is reconcileNodePool given the NodePool's Machines.
func (d *Driver) reconcileNodePoolWith(ctx context.Context, np *unstructured.Unstructured, machines []*unstructured.Unstructured) error {
	platform, _, _ := unstructured.NestedString(np.Object, "spec", "platform", "type")
	replicas, found, _ := unstructured.NestedInt64(np.Object, "spec", "replicas")
	clusterName, _, _ := unstructured.NestedString(np.Object, "spec", "clusterName")
	cpNS := ControlPlaneNamespace(np.GetNamespace(), clusterName)
	if platform != "Agent" || !found || clusterName == "" || !d.inScope(cpNS) {
		return nil
	}
	live, pending := d.liveMachines(nodePoolKey(np), machines)
	for i := int64(len(live) + pending); i < replicas; i++ {
		if err := d.createMachine(ctx, np, cpNS, clusterName); err != nil {
			return err
		}
	}
	if surplus := min(int64(len(live)+pending)-replicas, int64(len(live))); surplus > 0 {
		// CAPI's MachineSet deletes Machines without a Node first, then the newest.
		sort.SliceStable(live, func(i, j int) bool {
			ni, nj := hasNodeRef(live[i]), hasNodeRef(live[j])
			if ni != nj {
				return !ni
			}
			ti, tj := live[i].GetCreationTimestamp(), live[j].GetCreationTimestamp()
			if !ti.Equal(&tj) {
				return tj.Before(&ti)
			}
			return live[i].GetName() > live[j].GetName()
		})
		for _, m := range live[:surplus] {
			if err := d.c.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
				return err
			}
			d.wrote()
			d.expectMachine(nodePoolKey(np), m.GetName(), false)
			d.log.Info("machine deleting (scale-down)", "machine", client.ObjectKeyFromObject(m), "nodePool", nodePoolKey(np))
		}
	}
	return nil
}

// machineExpectations are a NodePool's Machines this world created or deleted that its list has not
// shown yet (created: not listed yet; deleted: still listed without a deletionTimestamp).
type machineExpectations struct {
	created, deleted map[string]bool
}

func (d *Driver) expectMachine(nodePool, name string, created bool) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	e := d.machinesExpected[nodePool]
	if e == nil {
		e = &machineExpectations{created: map[string]bool{}, deleted: map[string]bool{}}
		d.machinesExpected[nodePool] = e
	}
	if created {
		e.created[name] = true
	} else {
		e.deleted[name] = true
	}
}

// liveMachines are the listed Machines of a NodePool that are not being deleted, less those this
// world deleted, and how many it created that the list does not show yet. Expectations the list has
// caught up with are dropped.
func (d *Driver) liveMachines(nodePool string, machines []*unstructured.Unstructured) (live []*unstructured.Unstructured, pending int) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	e := d.machinesExpected[nodePool]
	if e == nil {
		e = &machineExpectations{created: map[string]bool{}, deleted: map[string]bool{}}
	}
	listed := make(map[string]bool, len(machines))
	for _, m := range machines {
		listed[m.GetName()] = true
		delete(e.created, m.GetName())
		if m.GetDeletionTimestamp() != nil {
			delete(e.deleted, m.GetName())
			continue
		}
		if !e.deleted[m.GetName()] {
			live = append(live, m)
		}
	}
	for name := range e.deleted {
		if !listed[name] { // gone altogether
			delete(e.deleted, name)
		}
	}
	return live, len(e.created)
}

func hasNodeRef(m *unstructured.Unstructured) bool {
	name, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
	return name != ""
}

// createMachine renders one AgentMachine and its Machine, in CAPI's order: the infrastructure
// machine first, then the Machine, then the Machine becomes the AgentMachine's owner.
func (d *Driver) createMachine(ctx context.Context, np *unstructured.Unstructured, cpNS, clusterName string) error {
	name := np.GetName() + "-" + utilrand.String(5)
	annotations := map[string]string{AnnotationNodePool: nodePoolKey(np)}
	labels := map[string]string{LabelClusterName: clusterName, "cluster.x-k8s.io/set-name": np.GetName()}
	selector, _, _ := unstructured.NestedMap(np.Object, "spec", "platform", "agent", "agentLabelSelector")

	am := newObject(AgentMachineGVK)
	am.SetNamespace(cpNS)
	am.SetName(name)
	am.SetAnnotations(annotations)
	am.SetLabels(labels)
	am.SetFinalizers([]string{FinalizerAgentMachine})
	spec := map[string]any{}
	if selector != nil {
		spec["agentLabelSelector"] = selector
	}
	am.Object["spec"] = spec
	if err := d.c.Create(ctx, am); err != nil {
		return fmt.Errorf("creating AgentMachine: %w", err)
	}
	d.wrote()

	m := newObject(MachineGVK)
	m.SetNamespace(cpNS)
	m.SetName(name)
	m.SetAnnotations(annotations)
	m.SetLabels(labels)
	m.SetFinalizers([]string{FinalizerMachine})
	// CAPI v1beta2 (the storage version, which CAPI's controllers write): the infrastructure reference
	// is a contract-versioned {apiGroup, kind, name} in the Machine's namespace, readiness moved to
	// status.initialization.
	m.Object["spec"] = map[string]any{
		"clusterName": clusterName,
		"bootstrap":   map[string]any{"dataSecretName": "user-data-" + name},
		"infrastructureRef": map[string]any{
			"apiGroup": AgentMachineGVK.Group, "kind": AgentMachineGVK.Kind, "name": name,
		},
	}
	if err := d.c.Create(ctx, m); err != nil {
		return fmt.Errorf("creating Machine: %w", err)
	}
	d.wrote()
	d.expectMachine(nodePoolKey(np), name, true)
	m.Object["status"] = map[string]any{
		"phase":          "Provisioning",
		"initialization": map[string]any{"bootstrapDataSecretCreated": true, "infrastructureProvisioned": false},
	}
	if err := d.c.Status().Update(ctx, m); err != nil {
		return fmt.Errorf("machine status: %w", err)
	}
	d.wrote()

	am.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: MachineGVK.GroupVersion().String(), Kind: MachineGVK.Kind, Name: name, UID: m.GetUID(),
		Controller: ptr(true), BlockOwnerDeletion: ptr(true),
	}})
	if err := d.c.Update(ctx, am); err != nil {
		return fmt.Errorf("owning AgentMachine: %w", err)
	}
	d.wrote()
	if err := d.reportWaiting(ctx, am); err != nil {
		return fmt.Errorf("agentmachine status: %w", err)
	}
	d.log.Info("machine created", "machine", types.NamespacedName{Namespace: cpNS, Name: name}, "nodePool", nodePoolKey(np))
	return nil
}

// reportWaiting writes the provider's first status of a new AgentMachine (waiting, not ready). The
// AgentMachine is waiting as soon as it has its owner, so the provider's own loop (markWaiting, or a
// reservation) may write its status first: a conflict re-reads it, as the provider's requeue would, and
// leaves a status the provider already wrote alone.
func (d *Driver) reportWaiting(ctx context.Context, am *unstructured.Unstructured) error {
	key := client.ObjectKeyFromObject(am)
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			am = newObject(AgentMachineGVK)
			if err := d.c.Get(ctx, key, am); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
		first = false
		if ref, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "name"); ref != "" {
			return nil // reserved meanwhile
		}
		if !setConditions(am, d.now(), d.waitingConditions()...) {
			return nil
		}
		_ = unstructured.SetNestedField(am.Object, false, "status", "ready")
		if err := d.c.Status().Update(ctx, am); err != nil {
			return err
		}
		d.wrote()
		return nil
	})
}

// waitingConditions are what the provider reports when no Agent fits, in the configured shape.
func (d *Driver) waitingConditions() []cond {
	switch d.opts.Shape {
	case ShapeV1Beta1:
		return []cond{
			{Type: CondReady, Status: "False", Reason: ReasonNoSuitableAgents, Severity: "Warning"},
			{Type: CondAgentReserved, Status: "False", Reason: ReasonNoSuitableAgents, Severity: "Warning"},
		}
	case ShapeLegacyReady:
		return []cond{{Type: CondReady, Status: "False", Reason: ReasonNoSuitableAgents, Severity: "Warning"}}
	default:
		return []cond{
			{Type: CondReady, Status: "False", Reason: "NotReady", Message: "AgentReserved: no suitable agents"},
			{Type: CondAgentReserved, Status: "False", Reason: ReasonNoSuitableAgents},
		}
	}
}

// reservedConditions are what the provider reports once an Agent is reserved.
func (d *Driver) reservedConditions() []cond {
	switch d.opts.Shape {
	case ShapeV1Beta1:
		return []cond{
			{Type: CondReady, Status: "False", Reason: ReasonInstallationInProgress, Severity: "Info"},
			{Type: CondAgentReserved, Status: "True"},
		}
	case ShapeLegacyReady:
		return []cond{{Type: CondReady, Status: "False", Reason: ReasonInstallationInProgress, Severity: "Info"}}
	default:
		return []cond{
			{Type: CondReady, Status: "False", Reason: "NotReady", Message: "Installed: installation in progress"},
			{Type: CondAgentReserved, Status: "True", Reason: "AgentReserved"},
		}
	}
}

// processDeletions plays CAPI's Machine deletion and the provider's deprovision hook: unbind the
// Agent first, and only once it is unbound delete the AgentMachine and drop the finalizers.
func (d *Driver) processDeletions(ctx context.Context) error {
	machines, err := d.listInPass(ctx, MachineGVK)
	if err != nil {
		return err
	}
	for _, m := range machines {
		if m.GetDeletionTimestamp() == nil || !controllerutil.ContainsFinalizer(m, FinalizerMachine) {
			continue
		}
		am := newObject(AgentMachineGVK)
		err := d.c.Get(ctx, types.NamespacedName{Namespace: m.GetNamespace(), Name: infraRefName(m)}, am)
		switch {
		case apierrors.IsNotFound(err):
			am = nil
		case err != nil:
			return err
		}
		if am != nil {
			done, err := d.releaseAgentMachine(ctx, am)
			if err != nil || !done {
				return err
			}
			continue // the AgentMachine goes first; the Machine follows next pass
		}
		if err := d.removeFinalizer(ctx, m.DeepCopy(), FinalizerMachine); err != nil {
			return err
		}
		d.log.Info("machine deleted", "machine", client.ObjectKeyFromObject(m))
	}
	// AgentMachines deleted on their own (not through their Machine).
	ams, err := d.listInPass(ctx, AgentMachineGVK)
	if err != nil {
		return err
	}
	for _, am := range ams {
		if am.GetDeletionTimestamp() != nil {
			if _, err := d.releaseAgentMachine(ctx, am.DeepCopy()); err != nil {
				return err
			}
		}
	}
	return nil
}

// releaseAgentMachine unbinds the AgentMachine's Agent, then deletes the AgentMachine and removes
// the provider's finalizer. It reports whether the AgentMachine is gone (or going without us).
func (d *Driver) releaseAgentMachine(ctx context.Context, am *unstructured.Unstructured) (bool, error) {
	agentName, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "name")
	agentNS, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "namespace")
	if agentName != "" {
		unbound, err := d.unbindAgent(ctx, types.NamespacedName{Namespace: agentNS, Name: agentName}, am)
		if err != nil || !unbound {
			return false, err
		}
	}
	if am.GetDeletionTimestamp() == nil {
		if err := d.c.Delete(ctx, am); err != nil {
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}
		d.wrote()
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(am), am); err != nil {
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}
	}
	if controllerutil.ContainsFinalizer(am, FinalizerAgentMachine) {
		if err := d.removeFinalizer(ctx, am, FinalizerAgentMachine); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (d *Driver) removeFinalizer(ctx context.Context, obj *unstructured.Unstructured, finalizer string) error {
	patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(obj, finalizer)
	if err := d.c.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
		return err
	}
	d.wrote()
	return nil
}

func infraRefName(m *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "name")
	if name == "" {
		return m.GetName()
	}
	return name
}

func ptr[T any](v T) *T { return &v }

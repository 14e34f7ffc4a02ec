package world

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/bindable"
	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// The world plays the Agent CAPI provider's AgentMachine controller as openshift/cluster-api-provider-agent
// runs it (controllers/agentmachine_controller.go; facts with line-level sources in the project's notes):
// conditions before the owner Machine exists, the pre-terminate hook on the Machine and the finalizer on
// the AgentMachine, the ignition token Secret, the reservation (one resourceVersion-checked Agent Update),
// the Agent's conditions mirrored until Ready, status.ready only then, and deletion through the hook.

// ErrNotSuitable is returned by ReserveAgent when the Agent or AgentMachine cannot be paired the
// way the provider would pair them.
var ErrNotSuitable = errors.New("world: not suitable for reservation")

// amView is one AgentMachine with what the provider reads for it in a pass.
type amView struct {
	am, machine *unstructured.Unstructured
	selector    labels.Selector
}

// ownerMachineName is the AgentMachine's owner Machine (an ownerRef of kind Machine in group
// cluster.x-k8s.io): "" until CAPI's Machine controller has adopted it.
func ownerMachineName(am *unstructured.Unstructured) string {
	for _, o := range am.GetOwnerReferences() {
		if o.Kind == MachineGVK.Kind {
			if gv, err := schema.ParseGroupVersion(o.APIVersion); err == nil && gv.Group == MachineGVK.Group {
				return o.Name
			}
		}
	}
	return ""
}

func agentSelector(am *unstructured.Unstructured) (labels.Selector, error) {
	raw, found, _ := unstructured.NestedMap(am.Object, "spec", "agentLabelSelector")
	if !found {
		return labels.Everything(), nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return nil, fmt.Errorf("agentLabelSelector of %s: %w", am.GetName(), err)
	}
	return metav1.LabelSelectorAsSelector(&ls)
}

// suitable is what the provider could bind for an AgentMachine with selector sel (bindable.AgentFor).
// The world also passes over an Agent being deleted, which the provider's rules do not mention.
func suitable(agent *unstructured.Unstructured, sel labels.Selector) bool {
	return agent.GetDeletionTimestamp() == nil && bindable.AgentFor(agent, sel)
}

// refValue is what this generation writes into the Agent's agentMachineRef label.
func (d *Driver) refValue(am *unstructured.Unstructured) string {
	if d.opts.Provider == ProviderUIDLabel {
		return string(am.GetUID())
	}
	return am.GetName()
}

// labelledFor is the provider's re-association: the first Agent whose label holds this AgentMachine's
// reference value (name only for the current generation: a same-named AgentMachine elsewhere matches too,
// as upstream), no validity check.
func (d *Driver) labelledFor(agents []*unstructured.Unstructured, am *unstructured.Unstructured) *unstructured.Unstructured {
	want := d.refValue(am)
	for _, a := range agents {
		if a.GetLabels()[LabelAgentMachineRef] == want {
			return a
		}
	}
	return nil
}

// reconcileAgentMachines is one pass of the provider over every AgentMachine in scope. Reservations are
// chosen first, one Agent per AgentMachine (the real controller's single worker and optimistic lock give
// the same result), then the AgentMachines are worked on by the provider's workers.
func (d *Driver) reconcileAgentMachines(ctx context.Context) error {
	ams, err := d.listInPass(ctx, AgentMachineGVK)
	if err != nil || len(ams) == 0 {
		return err
	}
	machines, err := d.listInPass(ctx, MachineGVK)
	if err != nil {
		return err
	}
	byKey := make(map[types.NamespacedName]*unstructured.Unstructured, len(machines))
	for _, m := range machines {
		byKey[client.ObjectKeyFromObject(m)] = m
	}
	agents, err := d.listInPass(ctx, AgentGVK)
	if err != nil {
		return err
	}
	views := make([]amView, 0, len(ams))
	for _, am := range ams {
		v := amView{am: am}
		if owner := ownerMachineName(am); owner != "" {
			v.machine = byKey[types.NamespacedName{Namespace: am.GetNamespace(), Name: owner}]
		}
		if v.selector, err = agentSelector(am); err != nil {
			d.log.Error(err, "agentmachine skipped", "agentMachine", client.ObjectKeyFromObject(am))
			continue
		}
		views = append(views, v)
	}
	chosen := d.chooseAgents(views, agents)
	workers := d.opts.Workers
	if d.opts.ProviderWorkers > 0 {
		workers = d.opts.ProviderWorkers
	}
	return forEachWith(ctx, workers, len(views), func(ctx context.Context, i int) error {
		err := d.reconcileAgentMachine(ctx, views[i], chosen[i])
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // someone wrote first or it went away: the next pass re-reads, like the provider's requeue
		}
		return err
	})
}

// chooseAgents picks, for each AgentMachine that would look for an Agent this pass, the Agent the
// provider would take: its labelled Agent first, else the first suitable one not chosen already.
func (d *Driver) chooseAgents(views []amView, agents []*unstructured.Unstructured) []*unstructured.Unstructured {
	chosen := make([]*unstructured.Unstructured, len(views))
	if !d.bindingEnabled() {
		return chosen
	}
	taken := map[*unstructured.Unstructured]bool{}
	for i, v := range views {
		if !d.looksForAgent(v) {
			continue
		}
		if a := d.labelledFor(agents, v.am); a != nil {
			chosen[i], taken[a] = a, true
			continue
		}
		for _, a := range agents {
			if !taken[a] && suitable(a, v.selector) {
				chosen[i], taken[a] = a, true
				break
			}
		}
	}
	return chosen
}

// looksForAgent: adopted by a live Machine, not deleting, not paused, not ready, no agentRef yet.
func (d *Driver) looksForAgent(v amView) bool {
	if v.machine == nil || v.machine.GetDeletionTimestamp() != nil || v.am.GetDeletionTimestamp() != nil || paused(v.am) {
		return false
	}
	if ready, _, _ := unstructured.NestedBool(v.am.Object, "status", "ready"); ready {
		return false
	}
	ref, _, _ := unstructured.NestedString(v.am.Object, "status", "agentRef", "name")
	return ref == ""
}

func paused(am *unstructured.Unstructured) bool {
	return am.GetAnnotations()[AnnotationPaused] == "true"
}

// reconcileAgentMachine is the provider's Reconcile for one AgentMachine, in upstream's order.
func (d *Driver) reconcileAgentMachine(ctx context.Context, v amView, candidate *unstructured.Unstructured) error {
	am := v.am.DeepCopy() // the list may be a shared cache
	if ownerMachineName(am) == "" {
		// Not adopted yet (the MachineSet created it): the "not reserved" conditions, nothing else.
		return d.writeAgentMachineStatus(ctx, am, notReservedConditions(ReasonNoSuitableAgents, ""), nil)
	}
	if v.machine == nil {
		return nil // the Machine read fails: upstream returns the error and backs off
	}
	machine := v.machine.DeepCopy()
	if deleting(machine) {
		return d.handleDeletionHook(ctx, am, machine)
	}
	if paused(am) {
		return nil
	}
	if err := d.ensureHookAndFinalizer(ctx, am, machine); err != nil {
		return err
	}
	boot, err := d.bootstrapData(ctx, machine)
	if err != nil {
		return err
	}
	if ready, _, _ := unstructured.NestedBool(am.Object, "status", "ready"); ready {
		return nil // nothing below ever runs again for a ready AgentMachine
	}
	cdRef, err := d.clusterDeploymentRef(ctx, machine)
	if err != nil {
		return err
	}
	if cdRef == nil {
		return d.writeAgentMachineStatus(ctx, am, notReservedConditions(ReasonAgentNotYetFound, "no cluster deployment reference on agentCluster"), nil)
	}
	agentName, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "name")
	if agentName == "" {
		if candidate == nil {
			return d.writeAgentMachineStatus(ctx, am, notReservedConditions(ReasonNoSuitableAgents, ""), nil)
		}
		return d.reserve(ctx, candidate.DeepCopy(), am, cdRef, boot)
	}
	agentNS, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "namespace")
	agent := newObject(AgentGVK)
	if err := d.read(ctx, types.NamespacedName{Namespace: agentNS, Name: agentName}, agent); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // agentRef is never cleared and no other Agent is chosen: upstream backs off
		}
		return err
	}
	if err := d.resyncAgent(ctx, agent, am, boot); err != nil {
		return err
	}
	return d.writeAgentMachineStatus(ctx, am, reservedConditions(agent), nil)
}

func deleting(machine *unstructured.Unstructured) bool {
	s, r := unstructuredcond.StatusReason(machine, "Deleting")
	return machine.GetDeletionTimestamp() != nil && s == "True" && r == ReasonWaitingForPreTerminate
}

// writeAgentMachineStatus sets the conditions (and status.ready from Ready) and, when set, agentRef and
// addresses; it writes only when something changed.
func (d *Driver) writeAgentMachineStatus(ctx context.Context, am *unstructured.Unstructured, cs []cond, reserved *unstructured.Unstructured) error {
	cs = d.opts.Provider.withReady(cs)
	changed := d.opts.Provider.setAgentMachineConditions(am, d.now(), cs)
	ready := allTrue(cs)
	if was, found, _ := unstructured.NestedBool(am.Object, "status", "ready"); !found || was != ready {
		_ = unstructured.SetNestedField(am.Object, ready, "status", "ready")
		changed = true
	}
	if reserved != nil {
		_ = unstructured.SetNestedMap(am.Object, map[string]any{"name": reserved.GetName(), "namespace": reserved.GetNamespace()}, "status", "agentRef")
		_ = unstructured.SetNestedSlice(am.Object, addressesOf(reserved), "status", "addresses")
		changed = true
	}
	if !changed {
		return nil
	}
	if err := d.c.Status().Update(ctx, am); err != nil {
		return err
	}
	d.wrote()
	if ready {
		d.log.Info("agentmachine ready", "agentMachine", client.ObjectKeyFromObject(am))
	}
	return nil
}

// addressesOf: every IPv4 address (prefix stripped) of an interface with carrier as ExternalIP, then the
// Agent's hostname (spec, else inventory) as InternalDNS.
func addressesOf(agent *unstructured.Unstructured) []any {
	var out []any
	ifaces, _, _ := unstructured.NestedSlice(agent.Object, "status", "inventory", "interfaces")
	for _, i := range ifaces {
		m, ok := i.(map[string]any)
		if !ok || m["hasCarrier"] != true {
			continue
		}
		addrs, _ := m["ipV4Addresses"].([]any)
		for _, a := range addrs {
			s, _ := a.(string)
			for j := 0; j < len(s); j++ {
				if s[j] == '/' {
					s = s[:j]
					break
				}
			}
			if s != "" {
				out = append(out, map[string]any{"type": "ExternalIP", "address": s})
			}
		}
	}
	host, _, _ := unstructured.NestedString(agent.Object, "spec", "hostname")
	if host == "" {
		host, _, _ = unstructured.NestedString(agent.Object, "status", "inventory", "hostname")
	}
	return append(out, map[string]any{"type": "InternalDNS", "address": host})
}

// ensureHookAndFinalizer adds the pre-terminate hook to the Machine and the finalizer and backup label to
// the AgentMachine, each when missing.
func (d *Driver) ensureHookAndFinalizer(ctx context.Context, am, machine *unstructured.Unstructured) error {
	if _, ok := machine.GetAnnotations()[AnnotationPreTerminateHook]; !ok && machine.GetDeletionTimestamp() == nil {
		ann := machine.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationPreTerminateHook] = ""
		machine.SetAnnotations(ann)
		if err := d.c.Update(ctx, machine); err != nil {
			return err
		}
		d.wrote()
	}
	lbls := am.GetLabels()
	hasFinalizer := false
	for _, f := range am.GetFinalizers() {
		hasFinalizer = hasFinalizer || f == FinalizerAgentMachine
	}
	if hasFinalizer && lbls[LabelBackup] == "true" {
		return nil
	}
	patch := client.MergeFromWithOptions(am.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if !hasFinalizer {
		am.SetFinalizers(append(am.GetFinalizers(), FinalizerAgentMachine))
	}
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[LabelBackup] = "true"
	am.SetLabels(lbls)
	if err := d.c.Patch(ctx, am, patch); err != nil {
		return err
	}
	d.wrote()
	return nil
}

// clusterDeploymentRef follows Machine → Cluster (cluster-name label) → AgentCluster
// (spec.infrastructureRef) → status.clusterDeploymentReference; nil when it is not set yet.
func (d *Driver) clusterDeploymentRef(ctx context.Context, machine *unstructured.Unstructured) (map[string]any, error) {
	clusterName := machine.GetLabels()[LabelClusterName]
	cluster := newObject(ClusterGVK)
	if err := d.read(ctx, types.NamespacedName{Namespace: machine.GetNamespace(), Name: clusterName}, cluster); err != nil {
		return nil, err
	}
	acName, _, _ := unstructured.NestedString(cluster.Object, "spec", "infrastructureRef", "name")
	ac := newObject(AgentClusterGVK)
	if err := d.read(ctx, types.NamespacedName{Namespace: machine.GetNamespace(), Name: acName}, ac); err != nil {
		return nil, err
	}
	ref, _, _ := unstructured.NestedMap(ac.Object, "status", "clusterDeploymentReference")
	if name, _ := ref["name"].(string); name == "" {
		return nil, nil
	}
	return map[string]any{"name": ref["name"], "namespace": ref["namespace"]}, nil
}

// reserve writes what the provider writes when it takes an Agent: one Agent Update (label, namespace
// annotation, clusterDeploymentName and the three bootstrap fields), resourceVersion-checked so a
// concurrent change (the operator unapproving, another AgentMachine taking it) makes it fail; then
// spec.providerID and the status of the AgentMachine.
func (d *Driver) reserve(ctx context.Context, agent, am *unstructured.Unstructured, cdRef map[string]any, boot bootstrap) error {
	if agent.GetLabels()[LabelAgentMachineRef] != d.refValue(am) {
		lbls := agent.GetLabels()
		if lbls == nil {
			lbls = map[string]string{}
		}
		lbls[LabelAgentMachineRef] = d.refValue(am)
		agent.SetLabels(lbls)
		ann := agent.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationAgentMachineRefNamespace] = am.GetNamespace()
		agent.SetAnnotations(ann)
		_ = unstructured.SetNestedMap(agent.Object, cdRef, "spec", "clusterDeploymentName")
		boot.applyTo(agent)
		if err := d.c.Update(ctx, agent); err != nil {
			return err
		}
		d.wrote()
	}
	providerID := "agent://" + agent.GetName()
	if have, _, _ := unstructured.NestedString(am.Object, "spec", "providerID"); have != providerID {
		patch := client.MergeFromWithOptions(am.DeepCopy(), client.MergeFromWithOptimisticLock{})
		_ = unstructured.SetNestedField(am.Object, providerID, "spec", "providerID")
		if err := d.c.Patch(ctx, am, patch); err != nil {
			return fmt.Errorf("agentmachine providerID: %w", err)
		}
		d.wrote()
	}
	if err := d.writeAgentMachineStatus(ctx, am, reservedConditions(agent), agent); err != nil {
		return fmt.Errorf("agentmachine status: %w", err)
	}
	d.log.Info("agent reserved", "agent", client.ObjectKeyFromObject(agent), "agentMachine", client.ObjectKeyFromObject(am), "label", d.refValue(am))
	return nil
}

// resyncAgent is the provider's later non-ready pass: the three bootstrap fields re-written (full Update)
// when any differs, a missing or different label put back (merge patch). clusterDeploymentName and the
// namespace annotation are never re-applied.
func (d *Driver) resyncAgent(ctx context.Context, agent, am *unstructured.Unstructured, boot bootstrap) error {
	if !boot.matches(agent) {
		boot.applyTo(agent)
		if err := d.c.Update(ctx, agent); err != nil {
			return err
		}
		d.wrote()
	}
	if agent.GetLabels()[LabelAgentMachineRef] != d.refValue(am) {
		patch := client.MergeFrom(agent.DeepCopy())
		lbls := agent.GetLabels()
		if lbls == nil {
			lbls = map[string]string{}
		}
		lbls[LabelAgentMachineRef] = d.refValue(am)
		agent.SetLabels(lbls)
		if err := d.c.Patch(ctx, agent, patch); err != nil {
			return err
		}
		d.wrote()
	}
	return nil
}

// ReserveAgent makes the provider reserve this Agent for this waiting AgentMachine now, exactly as
// its reconcile would (same filter, same writes, optimistic lock on the Agent). Tests use it to
// race the operator, e.g. between its read of an unbound Agent and its unapprove patch.
// It returns ErrNotSuitable (wrapped) when the provider would not pair them, and the API error
// (e.g. a conflict) when the write fails.
func (d *Driver) ReserveAgent(ctx context.Context, agent, agentMachine types.NamespacedName) error {
	ctx = withLiveReads(ctx) // a test's direct request acts on what the test just wrote
	defer d.lock(phaseBinding)()
	am := newObject(AgentMachineGVK)
	if err := d.c.Get(ctx, agentMachine, am); err != nil {
		return err
	}
	a := newObject(AgentGVK)
	if err := d.c.Get(ctx, agent, a); err != nil {
		return err
	}
	return d.reserveNow(ctx, a, am, false)
}

// reserveNow reserves a for am if the provider would (resume: an Agent already labelled for am counts).
func (d *Driver) reserveNow(ctx context.Context, a, am *unstructured.Unstructured, resume bool) error {
	v, err := d.viewOf(ctx, am)
	if err != nil {
		return err
	}
	if !d.looksForAgent(v) {
		return fmt.Errorf("%w: AgentMachine %s is not waiting", ErrNotSuitable, am.GetName())
	}
	if (!resume || a.GetLabels()[LabelAgentMachineRef] != d.refValue(am)) && !suitable(a, v.selector) {
		return fmt.Errorf("%w: Agent %s does not fit AgentMachine %s", ErrNotSuitable, a.GetName(), am.GetName())
	}
	machine := v.machine.DeepCopy()
	boot, err := d.bootstrapData(ctx, machine)
	if err != nil {
		return err
	}
	cdRef, err := d.clusterDeploymentRef(ctx, machine)
	if err != nil {
		return err
	}
	if cdRef == nil {
		return fmt.Errorf("%w: no cluster deployment reference yet", ErrNotSuitable)
	}
	return d.reserve(ctx, a, am, cdRef, boot)
}

// viewOf reads the AgentMachine's owner Machine live.
func (d *Driver) viewOf(ctx context.Context, am *unstructured.Unstructured) (amView, error) {
	v := amView{am: am}
	if owner := ownerMachineName(am); owner != "" {
		m := newObject(MachineGVK)
		if err := d.c.Get(ctx, types.NamespacedName{Namespace: am.GetNamespace(), Name: owner}, m); err == nil {
			v.machine = m
		} else if !apierrors.IsNotFound(err) {
			return v, err
		}
	}
	sel, err := agentSelector(am)
	v.selector = sel
	return v, err
}

// ReserveAgentForAnyWaiting reserves the Agent for the first waiting AgentMachine whose selector
// it matches, and returns that AgentMachine. A conflict (another of the world's loops, or the
// operator, wrote one of the objects first) is retried from a fresh read, as the provider's requeue
// would; a reservation interrupted half-way resumes with the AgentMachine its label names.
func (d *Driver) ReserveAgentForAnyWaiting(ctx context.Context, agent types.NamespacedName) (types.NamespacedName, error) {
	ctx = withLiveReads(ctx) // a test's direct request acts on what the test just wrote
	defer d.lock(phaseBinding)()
	var reserved types.NamespacedName
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		a := newObject(AgentGVK)
		if err := d.c.Get(ctx, agent, a); err != nil {
			return err
		}
		ams, err := d.list(ctx, AgentMachineGVK)
		if err != nil {
			return err
		}
		for _, am := range ams {
			err := d.reserveNow(ctx, a, am.DeepCopy(), true)
			if errors.Is(err, ErrNotSuitable) {
				continue
			}
			if err == nil {
				reserved = client.ObjectKeyFromObject(am)
			}
			return err
		}
		return fmt.Errorf("%w: no waiting AgentMachine fits Agent %s", ErrNotSuitable, agent)
	})
	if err != nil {
		return types.NamespacedName{}, err
	}
	return reserved, nil
}

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrNotSuitable is returned by ReserveAgent when the Agent or AgentMachine cannot be paired the
// way the provider would pair them.
var ErrNotSuitable = errors.New("world: not suitable for reservation")

// waiting is an AgentMachine the provider still has to find an Agent for.
type waiting struct {
	am, machine *unstructured.Unstructured
	selector    labels.Selector
}

// waitingAgentMachines lists AgentMachines with a live owner Machine and no agentRef.
func (d *Driver) waitingAgentMachines(ctx context.Context) ([]waiting, error) {
	ams, err := d.listInPass(ctx, AgentMachineGVK)
	if err != nil {
		return nil, err
	}
	// One list of Machines instead of one read per AgentMachine: the benches run a thousand.
	machines, err := d.listInPass(ctx, MachineGVK)
	if err != nil {
		return nil, err
	}
	byKey := make(map[types.NamespacedName]*unstructured.Unstructured, len(machines))
	for _, m := range machines {
		byKey[client.ObjectKeyFromObject(m)] = m
	}
	lookup := func(key types.NamespacedName) (*unstructured.Unstructured, error) { return byKey[key], nil }
	var out []waiting
	for _, am := range ams {
		w, ok, err := d.asWaiting(ctx, am, lookup)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, w)
		}
	}
	return out, nil
}

// machineLookup returns a Machine, or nil when it does not exist.
type machineLookup func(types.NamespacedName) (*unstructured.Unstructured, error)

// getMachine reads a Machine from the API server (nil when absent).
func (d *Driver) getMachine(ctx context.Context) machineLookup {
	return func(key types.NamespacedName) (*unstructured.Unstructured, error) {
		m := newObject(MachineGVK)
		if err := d.c.Get(ctx, key, m); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return m, nil
	}
}

func (d *Driver) asWaiting(ctx context.Context, am *unstructured.Unstructured, machine machineLookup) (waiting, bool, error) {
	if am.GetDeletionTimestamp() != nil {
		return waiting{}, false, nil
	}
	if ref, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "name"); ref != "" {
		return waiting{}, false, nil
	}
	var owner string
	for _, o := range am.GetOwnerReferences() {
		if o.Kind == MachineGVK.Kind {
			owner = o.Name
		}
	}
	if owner == "" {
		return waiting{}, false, nil
	}
	m, err := machine(types.NamespacedName{Namespace: am.GetNamespace(), Name: owner})
	if err != nil || m == nil || m.GetDeletionTimestamp() != nil {
		return waiting{}, false, err
	}
	sel, err := agentSelector(am)
	if err != nil {
		return waiting{}, false, err
	}
	return waiting{am: am, machine: m, selector: sel}, true, nil
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

// suitable is the provider's findAgent filter: matching labels, no agentMachineRef, approved,
// Bound=False, Connected=True, Validated=True.
func suitable(agent *unstructured.Unstructured, sel labels.Selector) bool {
	if agent.GetDeletionTimestamp() != nil || !sel.Matches(labels.Set(agent.GetLabels())) {
		return false
	}
	if _, taken := agent.GetLabels()[LabelAgentMachineRef]; taken {
		return false
	}
	approved, _, _ := unstructured.NestedBool(agent.Object, "spec", "approved")
	return approved && isFalse(agent, CondBound) && isTrue(agent, CondConnected) && isTrue(agent, CondValidated)
}

// bindWaiting plays the provider's reconcile of every waiting AgentMachine: it picks an Agent for
// each (one Agent for one AgentMachine), then its workers write the reservations.
func (d *Driver) bindWaiting(ctx context.Context) error {
	if !d.bindingEnabled() {
		return nil
	}
	ws, err := d.waitingAgentMachines(ctx)
	if err != nil || len(ws) == 0 {
		return err
	}
	agents, err := d.listInPass(ctx, AgentGVK)
	if err != nil {
		return err
	}
	// The provider labels the Agent first, in case it is interrupted before it writes the AgentMachine
	// (or its cache shows the Agent's label before the AgentMachine's agentRef); an AgentMachine whose
	// Agent already carries its label resumes with that Agent. A stale Agent fails its optimistic lock.
	labelled := map[string]*unstructured.Unstructured{}
	for _, a := range agents {
		if ref := a.GetLabels()[LabelAgentMachineRef]; ref != "" {
			labelled[reservationOf(a)] = a
		}
	}
	chosen := make([]*unstructured.Unstructured, len(ws))
	taken := map[*unstructured.Unstructured]bool{}
	for i, w := range ws {
		if a := labelled[reservationKey(w.am)]; a != nil {
			chosen[i] = a
			continue
		}
		for _, a := range agents {
			if !taken[a] && suitable(a, w.selector) {
				chosen[i], taken[a] = a, true
				break
			}
		}
	}
	workers := d.opts.Workers
	if d.opts.ProviderWorkers > 0 {
		workers = d.opts.ProviderWorkers
	}
	return forEachWith(ctx, workers, len(ws), func(ctx context.Context, i int) error {
		if chosen[i] == nil {
			return d.markWaiting(ctx, ws[i].am)
		}
		err := d.reserve(ctx, chosen[i], ws[i])
		if apierrors.IsConflict(err) {
			return nil // someone changed the Agent since we read it: next pass re-reads, like the provider
		}
		return err
	})
}

// reservationKey and reservationOf key a reservation from either side: the AgentMachine's namespace
// and UID, as the provider writes them onto the Agent it reserves.
func reservationKey(am *unstructured.Unstructured) string {
	return am.GetNamespace() + "/" + string(am.GetUID())
}

func reservationOf(agent *unstructured.Unstructured) string {
	return agent.GetAnnotations()[AnnotationAgentMachineRefNamespace] + "/" + agent.GetLabels()[LabelAgentMachineRef]
}

func (d *Driver) markWaiting(ctx context.Context, am *unstructured.Unstructured) error {
	if !conditionsWouldChange(am, d.now(), d.waitingConditions()...) {
		return nil
	}
	am = am.DeepCopy() // the list may be a shared cache
	setConditions(am, d.now(), d.waitingConditions()...)
	if err := d.c.Status().Update(ctx, am); err != nil {
		return client.IgnoreNotFound(err)
	}
	d.wrote()
	return nil
}

// reserve writes what the provider writes when it picks an Agent. The Agent update carries the
// resourceVersion read, so a concurrent change (e.g. the operator unapproving) makes it fail.
func (d *Driver) reserve(ctx context.Context, agent *unstructured.Unstructured, w waiting) error {
	// The objects may come from a shared cache: change copies.
	agent, w.am, w.machine = agent.DeepCopy(), w.am.DeepCopy(), w.machine.DeepCopy()
	clusterName, _, _ := unstructured.NestedString(w.machine.Object, "spec", "clusterName")
	lbls := agent.GetLabels()
	if lbls == nil {
		lbls = map[string]string{}
	}
	resumed := lbls[LabelAgentMachineRef] == string(w.am.GetUID())
	lbls[LabelAgentMachineRef] = string(w.am.GetUID())
	agent.SetLabels(lbls)
	ann := agent.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationAgentMachineRefNamespace] = w.am.GetNamespace()
	agent.SetAnnotations(ann)
	_ = unstructured.SetNestedMap(agent.Object, map[string]any{"name": clusterName, "namespace": w.am.GetNamespace()}, "spec", "clusterDeploymentName")
	if !resumed {
		if err := d.c.Update(ctx, agent); err != nil {
			return err
		}
		d.wrote()
	}
	now := d.now()
	setConditions(agent, now,
		cond{Type: CondBound, Status: "True", Reason: ReasonBound, Message: "The agent is bound to a cluster deployment"},
		cond{Type: CondRequirementsMet, Status: "True", Reason: "AgentAlreadyInstalling", Message: "Installation already started and is in progress"},
		cond{Type: CondInstalled, Status: "False", Reason: ReasonInstallationInProgress, Message: "The installation is in progress"},
	)
	_ = unstructured.SetNestedField(agent.Object, "installing", "status", "debugInfo", "state")
	if err := d.c.Status().Update(ctx, agent); err != nil {
		return fmt.Errorf("agent status: %w", err)
	}
	d.wrote()

	providerID := "agent://" + agent.GetName()
	_ = unstructured.SetNestedField(w.am.Object, providerID, "spec", "providerID")
	if err := d.c.Update(ctx, w.am); err != nil {
		return fmt.Errorf("agentmachine providerID: %w", err)
	}
	d.wrote()
	_ = unstructured.SetNestedMap(w.am.Object, map[string]any{"namespace": agent.GetNamespace(), "name": agent.GetName()}, "status", "agentRef")
	setConditions(w.am, now, d.reservedConditions()...)
	if err := d.c.Status().Update(ctx, w.am); err != nil {
		return fmt.Errorf("agentmachine status: %w", err)
	}
	d.wrote()

	_ = unstructured.SetNestedField(w.machine.Object, providerID, "spec", "providerID")
	if err := d.c.Update(ctx, w.machine); err != nil {
		return fmt.Errorf("machine providerID: %w", err)
	}
	d.wrote()
	_ = unstructured.SetNestedField(w.machine.Object, "Provisioned", "status", "phase")
	_ = unstructured.SetNestedField(w.machine.Object, true, "status", "initialization", "infrastructureProvisioned") // CAPI v1beta2
	if err := d.c.Status().Update(ctx, w.machine); err != nil {
		return fmt.Errorf("machine status: %w", err)
	}
	d.wrote()
	d.log.Info("agent reserved", "agent", client.ObjectKeyFromObject(agent), "agentMachine", client.ObjectKeyFromObject(w.am))
	return nil
}

// ReserveAgent makes the provider reserve this Agent for this waiting AgentMachine now, exactly as
// its reconcile would (same filter, same writes, optimistic lock on the Agent). Tests use it to
// race the operator, e.g. between its read of an unbound Agent and its unapprove patch.
// It returns ErrNotSuitable (wrapped) when the provider would not pair them, and the API error
// (e.g. a conflict) when the write fails.
func (d *Driver) ReserveAgent(ctx context.Context, agent, agentMachine types.NamespacedName) error {
	defer d.lock(phaseBinding)()
	am := newObject(AgentMachineGVK)
	if err := d.c.Get(ctx, agentMachine, am); err != nil {
		return err
	}
	w, ok, err := d.asWaiting(ctx, am, d.getMachine(ctx))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: AgentMachine %s is not waiting", ErrNotSuitable, agentMachine)
	}
	a := newObject(AgentGVK)
	if err := d.c.Get(ctx, agent, a); err != nil {
		return err
	}
	if !suitable(a, w.selector) {
		return fmt.Errorf("%w: Agent %s does not fit AgentMachine %s", ErrNotSuitable, agent, agentMachine)
	}
	return d.reserve(ctx, a, w)
}

// ReserveAgentForAnyWaiting reserves the Agent for the first waiting AgentMachine whose selector
// it matches, and returns that AgentMachine. A conflict (another of the world's loops, or the
// operator, wrote one of the objects first) is retried from a fresh read, as the provider's requeue
// would; a reservation interrupted half-way resumes with the AgentMachine its label names.
func (d *Driver) ReserveAgentForAnyWaiting(ctx context.Context, agent types.NamespacedName) (types.NamespacedName, error) {
	defer d.lock(phaseBinding)()
	var reserved types.NamespacedName
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		a := newObject(AgentGVK)
		if err := d.c.Get(ctx, agent, a); err != nil {
			return err
		}
		ws, err := d.waitingAgentMachines(ctx)
		if err != nil {
			return err
		}
		for _, w := range ws {
			if reservationOf(a) == reservationKey(w.am) || suitable(a, w.selector) {
				reserved = client.ObjectKeyFromObject(w.am)
				return d.reserve(ctx, a, w)
			}
		}
		return fmt.Errorf("%w: no waiting AgentMachine fits Agent %s", ErrNotSuitable, agent)
	})
	if err != nil {
		return types.NamespacedName{}, err
	}
	return reserved, nil
}

// unbindAgent plays the provider's deprovision: it removes the reservation from the Agent and
// reports Bound=False/Unbound. It returns true when the Agent no longer references the
// AgentMachine (nothing left to do), false when it just wrote the unbind.
func (d *Driver) unbindAgent(ctx context.Context, key types.NamespacedName, am *unstructured.Unstructured) (bool, error) {
	agent := newObject(AgentGVK)
	if err := d.c.Get(ctx, key, agent); err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	if reservationOf(agent) != reservationKey(am) {
		return true, nil
	}
	lbls := agent.GetLabels()
	delete(lbls, LabelAgentMachineRef)
	agent.SetLabels(lbls)
	ann := agent.GetAnnotations()
	delete(ann, AnnotationAgentMachineRefNamespace)
	agent.SetAnnotations(ann)
	unstructured.RemoveNestedField(agent.Object, "spec", "clusterDeploymentName")
	if err := d.c.Update(ctx, agent); err != nil {
		if apierrors.IsConflict(err) {
			return false, nil // re-read next pass
		}
		return false, client.IgnoreNotFound(err)
	}
	d.wrote()
	approved, _, _ := unstructured.NestedBool(agent.Object, "spec", "approved")
	setConditions(agent, d.now(),
		cond{Type: CondBound, Status: "False", Reason: ReasonUnbound, Message: "The agent is not bound to any cluster deployment"},
		cond{Type: CondInstalled, Status: "False", Reason: ReasonInstallationNotStarted, Message: "The installation has not yet started"},
		requirementsMet(approved),
	)
	_ = unstructured.SetNestedField(agent.Object, "known-unbound", "status", "debugInfo", "state")
	unstructured.RemoveNestedField(agent.Object, "status", "progress", "currentStage")
	if err := d.c.Status().Update(ctx, agent); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	d.wrote()
	d.log.Info("agent unbound", "agent", key, "agentMachine", client.ObjectKeyFromObject(am))
	return false, nil
}

func requirementsMet(approved bool) cond {
	if approved {
		return cond{Type: CondRequirementsMet, Status: "True", Reason: "AgentIsReady", Message: "The agent is ready to begin the installation"}
	}
	return cond{Type: CondRequirementsMet, Status: "False", Reason: "AgentIsNotApproved", Message: "The agent is not approved"}
}

// completeInstallations plays assisted-service finishing a day-2 install InstallDelay after
// binding, and CAPI noticing the Node: Installed=True on the Agent, nodeRef and Running on the Machine.
func (d *Driver) completeInstallations(ctx context.Context) error {
	agents, err := d.listInPass(ctx, AgentGVK)
	if err != nil {
		return err
	}
	now := d.now()
	var done []*unstructured.Unstructured
	for _, agent := range agents {
		if !isTrue(agent, CondBound) || isTrue(agent, CondInstalled) {
			continue
		}
		if since := conditionSince(agent, CondBound); now.Sub(since) < d.opts.InstallDelay {
			continue
		}
		done = append(done, agent)
	}
	if len(done) == 0 {
		return nil
	}
	// The reservation label holds the AgentMachine's UID: find each Agent's AgentMachine by it.
	ams, err := d.listInPass(ctx, AgentMachineGVK)
	if err != nil {
		return err
	}
	byRef := make(map[string]*unstructured.Unstructured, len(ams))
	for _, am := range ams {
		byRef[reservationKey(am)] = am
	}
	return d.forEach(ctx, len(done), func(ctx context.Context, i int) error {
		agent := done[i].DeepCopy() // the list may be a shared cache
		setConditions(agent, now,
			cond{Type: CondInstalled, Status: "True", Reason: ReasonInstallationCompleted, Message: "The installation has completed: Done"},
			cond{Type: CondRequirementsMet, Status: "True", Reason: "AgentInstallationStopped", Message: "The agent installation stopped"},
		)
		_ = unstructured.SetNestedField(agent.Object, "added-to-existing-cluster", "status", "debugInfo", "state")
		_ = unstructured.SetNestedField(agent.Object, "Done", "status", "progress", "currentStage")
		if err := d.c.Status().Update(ctx, agent); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		d.wrote()
		d.log.Info("agent installed", "agent", client.ObjectKeyFromObject(agent))
		am := byRef[reservationOf(agent)]
		if am == nil {
			return nil
		}
		return d.markNodeJoined(ctx, agent, client.ObjectKeyFromObject(am))
	})
}

// markNodeJoined sets the Node reference on the Agent's Machine and readiness on its AgentMachine.
func (d *Driver) markNodeJoined(ctx context.Context, agent *unstructured.Unstructured, key types.NamespacedName) error {
	amNS := key.Namespace
	am := newObject(AgentMachineGVK)
	if err := d.c.Get(ctx, key, am); err != nil {
		return client.IgnoreNotFound(err)
	}
	now := d.now()
	setConditions(am, now, cond{Type: CondReady, Status: "True"})
	_ = unstructured.SetNestedField(am.Object, true, "status", "ready")
	if err := d.c.Status().Update(ctx, am); client.IgnoreNotFound(err) != nil {
		return err
	}
	d.wrote()
	hostname, _, _ := unstructured.NestedString(agent.Object, "spec", "hostname")
	if hostname == "" {
		hostname = agent.GetName()
	}
	for _, o := range am.GetOwnerReferences() {
		if o.Kind != MachineGVK.Kind {
			continue
		}
		m := newObject(MachineGVK)
		if err := d.c.Get(ctx, types.NamespacedName{Namespace: amNS, Name: o.Name}, m); err != nil {
			return client.IgnoreNotFound(err)
		}
		// CAPI v1beta2: nodeRef is only the Node's name.
		_ = unstructured.SetNestedMap(m.Object, map[string]any{"name": hostname}, "status", "nodeRef")
		_ = unstructured.SetNestedField(m.Object, "Running", "status", "phase")
		if err := d.c.Status().Update(ctx, m); client.IgnoreNotFound(err) != nil {
			return err
		}
		d.wrote()
	}
	return nil
}

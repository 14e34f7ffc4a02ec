package agents

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Shared by the pool (surplus release) and the VsphereAgent cleanup: the fresh, uncached checks that
// decide whether a VM still backs a worker, and the optimistic-lock Unapprove that lets a concurrent
// reservation by the Agent CAPI provider win.

// FreshAgent reads an Agent live (nil when absent).
func FreshAgent(ctx context.Context, reader client.Reader, namespace, name string) (*Agent, error) {
	if name == "" {
		return nil, nil
	}
	u := New(AgentGVK)
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	a := AgentFrom(u)
	return &a, nil
}

// FreshAgentOfVM reads live the Agent of a VsphereAgent: by the recorded name, else by the label the
// operator puts on the Agents it prepares (its status may not have caught up yet).
func FreshAgentOfVM(ctx context.Context, reader client.Reader, va *afv1.VsphereAgent) (*Agent, error) {
	if va.Status.VM.AgentName != "" {
		return FreshAgent(ctx, reader, va.Namespace, va.Status.VM.AgentName)
	}
	list := NewList(AgentGVK)
	if err := reader.List(ctx, list, client.InNamespace(va.Namespace), client.MatchingLabels{afv1.LabelVsphereAgent: va.Name}); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	a := AgentFrom(&list.Items[0])
	return &a, nil
}

// FreshHostAgent finds live the Agent the VM's host registered: both its MAC and its serial number are
// the VM's (Agent.IsHostOf; nil when absent).
func FreshHostAgent(ctx context.Context, reader client.Reader, namespace, mac, biosUUID string) (*Agent, error) {
	return freshAgentWhere(ctx, reader, namespace, mac, func(a Agent) bool { return a.IsHostOf(mac, biosUUID) })
}

func freshAgentWhere(ctx context.Context, reader client.Reader, namespace, mac string, match func(Agent) bool) (*Agent, error) {
	all, err := freshAgentsWhere(ctx, reader, namespace, mac, match)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	return &all[0], nil
}

// FreshAgentsByMAC lists live every Agent that may be the VM's (Agent.MayBeHostOf): a decision to
// keep a VM must see all of them, since a stranger's Agent with the VM's MAC may come first.
func FreshAgentsByMAC(ctx context.Context, reader client.Reader, namespace, mac, biosUUID string) ([]Agent, error) {
	return freshAgentsWhere(ctx, reader, namespace, mac, func(a Agent) bool { return a.MayBeHostOf(mac, biosUUID) })
}

func freshAgentsWhere(ctx context.Context, reader client.Reader, namespace, mac string, match func(Agent) bool) ([]Agent, error) {
	if mac == "" {
		return nil, nil
	}
	list := NewList(AgentGVK)
	if err := reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []Agent
	for i := range list.Items {
		if a := AgentFrom(&list.Items[i]); match(a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// MachineReferencesAgent reports, from a live read, whether a recorded Machine still exists, or any
// AgentMachine (status.agentRef) or Machine (spec.providerID) in the control plane namespace references
// the Agent.
func MachineReferencesAgent(ctx context.Context, reader client.Reader, cpNamespace, agentName, machineName string) (bool, string, error) {
	if machineName != "" {
		m := New(MachineGVK())
		err := reader.Get(ctx, types.NamespacedName{Namespace: cpNamespace, Name: machineName}, m)
		if err == nil {
			return true, machineName, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, "", err
		}
	}
	if agentName == "" {
		return false, "", nil
	}
	list := NewList(AgentMachineGVK)
	if err := reader.List(ctx, list, client.InNamespace(cpNamespace)); err != nil {
		return false, "", err
	}
	for i := range list.Items {
		am := AgentMachineFrom(&list.Items[i])
		if am.AgentRef == agentName {
			return true, am.OwnerMachine, nil
		}
	}
	// After the hook is released CAPI deletes the AgentMachine first and the Machine only once its Node is
	// gone: in between, only the Machine's providerID still names the Agent.
	machines := NewList(MachineGVK())
	if err := reader.List(ctx, machines, client.InNamespace(cpNamespace)); err != nil {
		return false, "", err
	}
	for i := range machines.Items {
		if MachineRunsOn(&machines.Items[i], agentName) {
			return true, machines.Items[i].GetName(), nil
		}
	}
	return false, "", nil
}

// ErrReservationWon means the Agent changed between our read and our Unapprove (e.g. the provider
// reserved it): the VM is kept.
var ErrReservationWon = fmt.Errorf("the Agent changed concurrently (reservation wins)")

// Unapprove sets spec.approved=false with a resourceVersion precondition so that a concurrent
// reservation makes the patch fail instead of being overwritten.
func Unapprove(ctx context.Context, c client.Client, a *Agent) error {
	if !a.Approved {
		return nil
	}
	orig := a.Obj.DeepCopy()
	obj := a.Obj.DeepCopy()
	if err := unstructured.SetNestedField(obj.Object, false, "spec", "approved"); err != nil {
		return err
	}
	err := c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return ErrReservationWon
	}
	return err
}

// DeleteAgent deletes the Agent only if it is still the same object (UID precondition).
func DeleteAgent(ctx context.Context, c client.Client, a *Agent) error {
	obj := New(AgentGVK)
	obj.SetNamespace(a.Namespace)
	obj.SetName(a.Name)
	uid := a.UID
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

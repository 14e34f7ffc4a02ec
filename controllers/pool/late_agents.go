package pool

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"context"
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
)

// deleteLateAgents deletes the Agents that registered from VMs this pool's cleanups destroyed before
// the Agent appeared (poolmemory.LateRegistrationWindow). Such an Agent's host no longer exists, so it
// never reconnects and is never bound; left alone it would stay for good. An Agent is deleted only
// when both its MAC and its serial (the VM's BIOS UUID) are the destroyed VM's, it is unbound in a
// live read, and it is still the same object (UID precondition); the Agent watch (by its InfraEnv
// label) starts this pass when it appears or when its inventory arrives.
func (r *Reconciler) deleteLateAgents(ctx context.Context, s *poolScope) error {
	if s.pool.Spec.Paused {
		return nil
	}
	key := client.ObjectKeyFromObject(s.pool)
	hosts := r.Opts.DestroyedHosts.Of(key, r.Opts.Clock.Now())
	if len(hosts) == 0 {
		return nil
	}
	list := agents.NewList(agents.AgentGVK)
	if err := r.List(ctx, list, client.InNamespace(s.pool.Namespace)); err != nil {
		return fmt.Errorf("listing Agents: %w", err)
	}
	var errs []error
	for i := range list.Items {
		cached := agents.AgentFrom(&list.Items[i])
		host, ok := destroyedHostOf(cached, hosts)
		if !ok || s.ourAgents.Has(cached.Name) {
			continue
		}
		if err := r.deleteLateAgent(ctx, s, key, cached.Name, host); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) deleteLateAgent(ctx context.Context, s *poolScope, key client.ObjectKey, name string, host poolmemory.DestroyedHost) error {
	log := ctrl.LoggerFrom(ctx).WithValues("agent", name, "vm", host.VM)
	agent, err := agents.FreshAgent(ctx, r.APIReader, s.pool.Namespace, name)
	if err != nil || agent == nil {
		return err
	}
	if _, ok := destroyedHostOf(*agent, []poolmemory.DestroyedHost{host}); !ok {
		return nil
	}
	if agent.IsBound() {
		// Not ours to delete any more: whoever bound it owns what follows.
		log.Info("an Agent of a destroyed VM is bound; left alone")
		r.Opts.DestroyedHosts.Forget(key, host)
		return nil
	}
	if err := agents.Unapprove(ctx, r.Client, agent); errors.Is(err, agents.ErrReservationWon) {
		return nil // changed meanwhile: the next pass reads it again
	} else if err != nil {
		return err
	}
	if err := agents.DeleteAgent(ctx, r.Client, agent); err != nil {
		return err
	}
	r.Opts.DestroyedHosts.Forget(key, host)
	log.Info("deleted the Agent of a VM destroyed before it registered")
	r.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonOrphanAgentDeleted, events.ActionCleanUpOrphan,
		"deleted Agent %s: it registered from VM %s (VsphereAgent %s) after the VM was destroyed", agent.Name, host.VM, host.VsphereAgent)
	return nil
}

// destroyedHostOf is the destroyed VM an Agent registered from: its MAC and its serial both match (a
// MAC alone is not proof: a static-IP lease hands the same MAC to the VM that replaces it).
func destroyedHostOf(a agents.Agent, hosts []poolmemory.DestroyedHost) (poolmemory.DestroyedHost, bool) {
	for _, h := range hosts {
		if a.IsHostOf(h.MAC, h.BIOSUUID) { // MAC and serial both
			return h, true
		}
	}
	return poolmemory.DestroyedHost{}, false
}

package world

import (
	"context"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// hostStatus is what assisted-service writes on an Agent: conditions, and when it owns them, the host
// state and the validations.
type hostStatus struct {
	conds []cond
	// state is status.debugInfo.state ("" leaves it).
	state string
	// validations are status.validationsInfo (nil leaves it).
	validations []validation
}

func stateOf(a *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(a.Object, "status", "debugInfo", "state")
	return s
}

// preInstallUnbound are the states of a host in an InfraEnv without a cluster, before installation: the
// unbound validation pass decides among them.
var preInstallUnbound = map[string]bool{"": true, stateDiscoveringUnbound: true, stateKnownUnbound: true, stateInsufficientUnbound: true}

// hostStatus is an Agent's status as assisted-service's host monitor and Agent controller keep it. A
// bound host's validations and state belong to syncBindings, an unbinding host's too.
func (d *Driver) hostStatus(agent *unstructured.Unstructured, connected bool, registeredAt, now time.Time) hostStatus {
	conn := cond{Type: CondConnected, Status: "True", Reason: ReasonAgentIsConnected, Message: "The agent's connection to the installation service is unimpaired"}
	if !connected {
		conn = cond{Type: CondConnected, Status: "False", Reason: ReasonAgentIsDisconnected, Message: "The agent has not contacted the installation service in some time, user action should be taken"}
	}
	st := hostStatus{conds: []cond{{Type: CondSpecSynced, Status: "True", Reason: "SyncOK", Message: "The Spec has been successfully applied"}, conn}}
	if unstructuredcond.Raw(agent, CondBound) == nil {
		st.conds = append(st.conds,
			cond{Type: CondBound, Status: "False", Reason: ReasonUnbound, Message: "The agent is not bound to any cluster deployment"},
			cond{Type: CondInstalled, Status: "False", Reason: ReasonInstallationNotStarted, Message: "The installation has not yet started"},
		)
	}
	if unstructuredcond.IsTrue(agent, CondBound) || unbinding(agent) || !preInstallUnbound[stateOf(agent)] {
		return st
	}
	if now.Sub(registeredAt) < d.opts.ValidationDelay {
		st.state = stateDiscoveringUnbound
		st.conds = append(st.conds, cond{Type: CondValidated, Status: "Unknown", Reason: ReasonValidationsUnknown, Message: "The agent's validations have not yet been calculated"}, notReady())
		return st
	}
	st.validations = d.validate(factsOf(agent), false, nil)
	if len(failures(st.validations)) > 0 {
		st.state = stateInsufficientUnbound
		st.conds = append(st.conds, failingValidated(st.validations), notReady())
		return st
	}
	approved, _, _ := unstructured.NestedBool(agent.Object, "spec", "approved")
	st.state = stateKnownUnbound
	st.conds = append(st.conds, cond{Type: CondValidated, Status: "True", Reason: ReasonValidationsPassing, Message: "The agent's validations are passing"}, requirementsMet(approved))
	return st
}

// changes reports whether applying st would change the Agent.
func (st hostStatus) changes(a *unstructured.Unstructured, now time.Time) bool {
	if unstructuredcond.WouldChange(a, now, st.conds...) || (st.state != "" && st.state != stateOf(a)) {
		return true
	}
	if st.validations == nil {
		return false
	}
	got, _, _ := unstructured.NestedMap(a.Object, "status", "validationsInfo")
	return !reflect.DeepEqual(got, validationsInfo(st.validations))
}

// applyStatus writes st into the Agent object (not to the API server).
func (d *Driver) applyStatus(a *unstructured.Unstructured, st hostStatus, now time.Time) {
	unstructuredcond.Set(a, now, st.conds...)
	if st.state != "" {
		_ = unstructured.SetNestedField(a.Object, st.state, "status", "debugInfo", "state")
	}
	if st.validations != nil {
		_ = unstructured.SetNestedMap(a.Object, validationsInfo(st.validations), "status", "validationsInfo")
	}
}

// clusterHostnames are the real hostnames of the other hosts bound (or binding) to agent's cluster
// deployment: the hosts hostname-unique compares with.
func clusterHostnames(all []*unstructured.Unstructured, agent *unstructured.Unstructured) []string {
	cd, _, _ := unstructured.NestedMap(agent.Object, "spec", "clusterDeploymentName")
	var out []string
	for _, o := range all {
		if o.GetUID() == agent.GetUID() || o.GetNamespace() != agent.GetNamespace() || o.GetDeletionTimestamp() != nil {
			continue
		}
		if ocd, _, _ := unstructured.NestedMap(o.Object, "spec", "clusterDeploymentName"); ocd != nil && reflect.DeepEqual(ocd, cd) {
			out = append(out, realHostname(o))
		}
	}
	return out
}

// boundStatus is a bound host's status before installation: installing when every validation (the
// cluster-scoped ones included) passes, else insufficient (Bound stays True; it waits, validations are
// recalculated on every pass).
func (d *Driver) boundStatus(all []*unstructured.Unstructured, a *unstructured.Unstructured) hostStatus {
	vs := d.validate(factsOf(a), true, clusterHostnames(all, a))
	bound := cond{Type: CondBound, Status: "True", Reason: ReasonBound, Message: "The agent is bound to a cluster deployment"}
	if len(failures(vs)) > 0 {
		return hostStatus{state: stateInsufficient, validations: vs, conds: []cond{bound, failingValidated(vs), notReady(),
			{Type: CondInstalled, Status: "False", Reason: ReasonInstallationNotStarted, Message: "The installation has not yet started"}}}
	}
	return hostStatus{state: stateInstalling, validations: vs, conds: []cond{bound,
		{Type: CondValidated, Status: "True", Reason: ReasonValidationsPassing, Message: "The agent's validations are passing"},
		{Type: CondRequirementsMet, Status: "True", Reason: "AgentAlreadyInstalling", Message: "Installation already started and is in progress"},
		{Type: CondInstalled, Status: "False", Reason: ReasonInstallationInProgress, Message: "The installation is in progress: Host is preparing for installation"}}}
}

// rebootInstalled plays a registered host booting again: an installed day-2 host (added-to-existing-
// cluster, stage Done) whose firmware starts the discovery image again registers, and assisted-service
// moves it to installing-pending-user-action ("Wrong boot order detection" in internal/host/
// statemachine.go). A host that boots its disk says nothing new, unless it waited at
// installing-pending-user-action: its installed OS runs again (bootedDisk).
func (d *Driver) rebootInstalled(ctx context.Context, reboots []hostReboot) error {
	for _, r := range reboots {
		discovery := d.bootsDiscovery(ctx, r.vm)
		a := newObject(AgentGVK)
		if err := d.c.Get(ctx, r.agent, a); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if !discovery && stateOf(a) == statePendingUserAction {
			if err := d.bootedDisk(ctx, a, r.vm); err != nil {
				return err
			}
			continue
		}
		if !discovery || stateOf(a) != stateAddedToCluster {
			continue
		}
		now := d.now()
		info := "Expected the host to boot from disk, but it booted the installation image - please reboot and fix boot order to boot from disk " + installationDisk(a.Object)
		d.applyStatus(a, hostStatus{state: statePendingUserAction, conds: []cond{
			{Type: CondInstalled, Status: "False", Reason: ReasonInstallationInProgress, Message: "The installation is in progress: " + info},
			{Type: CondRequirementsMet, Status: "True", Reason: "AgentAlreadyInstalling", Message: "Installation already started and is in progress"},
		}}, now)
		_ = unstructured.SetNestedField(a.Object, info, "status", "debugInfo", "stateInfo")
		if err := d.c.Status().Update(ctx, a); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		d.wrote()
		d.log.Info("installed host booted the discovery image again", "agent", client.ObjectKeyFromObject(a), "vm", r.vm.Name)
	}
	return nil
}

// bootedDisk plays a host at installing-pending-user-action that boots its installed disk (its CD-ROM
// emptied or its boot order fixed, then rebooted, as assisted-service's status info asks): the installed
// OS starts and the node is the cluster's again. assisted-service accepts installation progress in that
// state (UpdateInstallProgress lists it among its valid states); what reports the day-2 host's progress
// then is not in what we read, so the world returns it to the state it had before it booted discovery,
// added-to-existing-cluster with Installed=True, at the boot (docs/world.md).
func (d *Driver) bootedDisk(ctx context.Context, a *unstructured.Unstructured, vm VM) error {
	setInstalled(a, d.now())
	_ = unstructured.SetNestedField(a.Object, "", "status", "debugInfo", "stateInfo")
	if err := d.c.Status().Update(ctx, a); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	d.wrote()
	d.log.Info("host booted its installed disk after installing-pending-user-action", "agent", client.ObjectKeyFromObject(a), "vm", vm.Name)
	return nil
}

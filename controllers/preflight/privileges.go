package preflight

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/redact"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

const privilegesSufficientMessage = "the credentials hold the vCenter privileges the operator uses on the folder, resource pool, datastores and network"

// checkDomainPrivileges asks for the privileges on the placement of every failure domain of the pool; an
// entity shared by several domains is listed once.
func checkDomainPrivileges(ctx context.Context, vs vsphere.Client, pool *afv1.VsphereAgentPool) ([]vsphere.MissingPrivileges, error) {
	var all []vsphere.MissingPrivileges
	seen := sets.New[string]()
	for _, d := range poolspec.Domains(pool) {
		missing, err := vs.CheckPrivileges(ctx, vsphere.PrivilegeSpec{PlacementSpec: poolspec.PlacementSpec(pool, d), EjectAfterInstall: pool.Spec.ISO.EjectAfterInstall,
			RecoverDiscoveryBoot: pool.Spec.ISO.RecoverDiscoveryBoot, PCIDevices: pool.Spec.Template.Hardware.HasPCIDevices(),
			AntiAffinity: pool.Spec.AntiAffinity.Enabled()})
		if err != nil {
			return nil, err
		}
		for _, m := range missing {
			if k := m.Kind + "/" + m.Name; !seen.Has(k) {
				seen.Insert(k)
				all = append(all, m)
			}
		}
	}
	return all, nil
}

// privilegeKindNames names the entity kinds in messages.
var privilegeKindNames = map[string]string{
	vsphere.PrivilegeFolder:       "VM folder",
	vsphere.PrivilegeResourcePool: "resource pool",
	vsphere.PrivilegeDatastore:    "datastore",
	vsphere.PrivilegeISODatastore: "ISO datastore",
	vsphere.PrivilegeNetwork:      "network",
	vsphere.PrivilegeCluster:      "compute cluster",
}

// missingPrivilegesMessage names every entity and the privilege IDs missing on it.
func missingPrivilegesMessage(missing []vsphere.MissingPrivileges) string {
	parts := make([]string, 0, len(missing))
	for _, m := range missing {
		kind := privilegeKindNames[m.Kind]
		if kind == "" {
			kind = m.Kind
		}
		parts = append(parts, fmt.Sprintf("%s %s: %s", kind, m.Name, strings.Join(m.Privileges, ", ")))
	}
	return "the credentials lack vCenter privileges: " + strings.Join(parts, "; ") +
		" (see docs/vcenter-privileges.md); no VM is created"
}

// privilegesMemoKey keys the memo of a pool's privilege check by pool UID and vCenter user: a recreated
// pool or a Secret naming another account is checked afresh.
func privilegesMemoKey(p *afv1.VsphereAgentPool, user string) string {
	return client.ObjectKeyFromObject(p).String() + "/privileges/" + string(p.UID) + "/" + user
}

// checkPrivileges is the second half of the pool's preflight, run once the placement resolves: vCenter
// is asked whether the credentials hold the privileges the operator uses on the folder, resource pool,
// datastores and network (vsphere.RequiredPrivileges), once per spec generation and every
// placementRecheckInterval. Missing ones set PrivilegesSufficient=False InsufficientPrivileges naming
// each entity and privilege ID, a rate-limited Warning Event, and block creation until a later check
// passes.
func (c *Checker) checkPrivileges(ctx context.Context, s *pass) error {
	p := s.pool
	memo := privilegesMemoKey(p, s.user)
	now := c.Clock.Now()
	if last, due := c.placement.due(memo, p.Generation, now); !due {
		if last.reason != "" {
			s.preflightBlock = last.reason
			conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPrivilegesSufficient, false, last.reason, last.message, p.Generation)
		} else {
			conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPrivilegesSufficient, true, afv1.ReasonPrivilegesSufficient,
				privilegesSufficientMessage, p.Generation)
		}
		return nil
	}
	missing, err := checkDomainPrivileges(ctx, s.vs, p)
	if err != nil {
		// vCenter could not be asked: unknown, not insufficient. Nothing is created until it is known.
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPrivilegesSufficient, false, afv1.ReasonPrivilegesUnchecked,
			"the privileges could not be checked: "+redact.String(err.Error()), p.Generation)
		s.preflightBlock = afv1.ReasonPrivilegesUnchecked
		s.requeueAfter(time.Minute)
		return nil
	}
	topic := client.ObjectKeyFromObject(p).String() + "/privileges"
	if len(missing) == 0 {
		c.placement.done(memo, placementCheck{generation: p.Generation, at: now})
		c.Events.Clear(topic)
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPrivilegesSufficient, true, afv1.ReasonPrivilegesSufficient,
			privilegesSufficientMessage, p.Generation)
		return nil
	}
	reason, msg := afv1.ReasonInsufficientPrivileges, missingPrivilegesMessage(missing)
	c.placement.done(memo, placementCheck{generation: p.Generation, at: now, reason: reason, message: msg})
	s.preflightBlock = reason
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionPrivilegesSufficient, false, reason, msg, p.Generation)
	if c.Events.Allow(topic, reason, now) {
		c.Recorder.Eventf(p, nil, "Warning", reason, events.ActionPreflight, "%s", msg)
	}
	return nil
}

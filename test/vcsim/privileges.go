package vcsim

import (
	"slices"
	"sync"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/simulator/vpx"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// AnyEntity in DenyPrivilege withholds a privilege on every entity.
const AnyEntity = "*"

// AuthorizationManager is the simulator's AuthorizationManager with privileges that can be withheld:
// govmomi's simulator grants every privilege on every entity to every session; this one answers
// HasPrivilegeOnEntities, HasUserPrivilegeOnEntities and FetchUserPrivilegeOnEntities from a deny set
// (entity name or AnyEntity -> privilege IDs). Only the answers change: calls that need a withheld
// privilege still succeed in the simulator. HasPrivilegeOnEntity keeps granting everything: its answer
// is a list of booleans, and the SOAP encoding of govmomi's types drops false elements.
//
// Swapped into the registry on the first DenyPrivilege (the simulator's Map.Put pattern, as WrapVM).
type AuthorizationManager struct {
	*simulator.AuthorizationManager

	mu   sync.Mutex
	deny map[string]map[string]bool // entity name or AnyEntity -> privilege IDs
}

// denied reports whether privID is withheld on the entity named name.
func (m *AuthorizationManager) denied(name, privID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deny[name][privID] || m.deny[AnyEntity][privID]
}

// entityName is the name of ref in the simulator's inventory ("" when unknown).
func entityName(ctx *simulator.Context, ref types.ManagedObjectReference) string {
	if e, ok := ctx.Map.Get(ref).(mo.Entity); ok {
		name := ""
		ctx.WithLock(e, func() { name = e.Entity().Name })
		return name
	}
	return ""
}

// availability answers privIDs on ref.
func (m *AuthorizationManager) availability(ctx *simulator.Context, ref types.ManagedObjectReference, privIDs []string) types.EntityPrivilege {
	name := entityName(ctx, ref)
	p := types.EntityPrivilege{Entity: ref}
	for _, id := range privIDs {
		p.PrivAvailability = append(p.PrivAvailability, types.PrivilegeAvailability{PrivId: id, IsGranted: !m.denied(name, id)})
	}
	return p
}

// HasPrivilegeOnEntities answers for the session's own privileges (the sessionId is not checked).
func (m *AuthorizationManager) HasPrivilegeOnEntities(ctx *simulator.Context, req *types.HasPrivilegeOnEntities) soap.HasFault {
	res := &types.HasPrivilegeOnEntitiesResponse{}
	for _, e := range req.Entity {
		res.Returnval = append(res.Returnval, m.availability(ctx, e, req.PrivId))
	}
	return &methods.HasPrivilegeOnEntitiesBody{Res: res}
}

// HasUserPrivilegeOnEntities answers as for the session (every user is the same user here).
func (m *AuthorizationManager) HasUserPrivilegeOnEntities(ctx *simulator.Context, req *types.HasUserPrivilegeOnEntities) soap.HasFault {
	res := &types.HasUserPrivilegeOnEntitiesResponse{}
	for _, e := range req.Entities {
		res.Returnval = append(res.Returnval, m.availability(ctx, e, req.PrivId))
	}
	return &methods.HasUserPrivilegeOnEntitiesBody{Res: res}
}

// FetchUserPrivilegeOnEntities lists the Admin role's privileges minus the withheld ones.
func (m *AuthorizationManager) FetchUserPrivilegeOnEntities(ctx *simulator.Context, req *types.FetchUserPrivilegeOnEntities) soap.HasFault {
	admin := object.AuthorizationRoleList(m.RoleList).ByName("Admin").Privilege
	res := &types.FetchUserPrivilegeOnEntitiesResponse{}
	for _, e := range req.Entities {
		name := entityName(ctx, e)
		r := types.UserPrivilegeResult{Entity: e}
		for _, id := range admin {
			if !m.denied(name, id) {
				r.Privileges = append(r.Privileges, id)
			}
		}
		res.Returnval = append(res.Returnval, r)
	}
	return &methods.FetchUserPrivilegeOnEntitiesBody{Res: res}
}

// authorizationManager returns the wrapped AuthorizationManager, swapping it in on first use.
func (e *Env) authorizationManager() *AuthorizationManager {
	privMu.Lock()
	defer privMu.Unlock()
	m := e.Map()
	ref := *vpx.ServiceContent.AuthorizationManager
	switch am := m.Get(ref).(type) {
	case *AuthorizationManager:
		return am
	case *simulator.AuthorizationManager:
		w := &AuthorizationManager{AuthorizationManager: am, deny: map[string]map[string]bool{}}
		m.Put(w)
		return w
	}
	panic("vcsim: unexpected AuthorizationManager type")
}

// Wire messages of the privilege knobs on the control endpoint (control.go).
type (
	privilegeReq struct {
		Entity string `json:"entity"`
		PrivID string `json:"privId,omitempty"`
	}
	privilegesResp struct {
		PrivIDs []string `json:"privIds"`
	}
)

// privMu serializes the first swap of the AuthorizationManager.
var privMu sync.Mutex

// DenyPrivilege withholds privID on the entity named entity (a datastore, network, folder, resource
// pool, compute cluster such as Cluster for anti-affinity's Host.Inventory.EditCluster... by its name in the inventory, e.g. Network or PodDatastore) or on every entity (AnyEntity),
// in the answers of the AuthorizationManager's privilege queries, until ResetPrivileges. Works in process
// and on a simulator in its own process (over the control endpoint).
func (e *Env) DenyPrivilege(entity, privID string) {
	if e.ctl != nil {
		e.ctl.must("privileges/deny", privilegeReq{Entity: entity, PrivID: privID}, nil)
		return
	}
	am := e.authorizationManager()
	am.mu.Lock()
	defer am.mu.Unlock()
	if am.deny[entity] == nil {
		am.deny[entity] = map[string]bool{}
	}
	am.deny[entity][privID] = true
}

// ResetPrivileges grants every privilege on every entity again.
func (e *Env) ResetPrivileges() {
	if e.ctl != nil {
		e.ctl.must("privileges/reset", empty{}, nil)
		return
	}
	am := e.authorizationManager()
	am.mu.Lock()
	defer am.mu.Unlock()
	clear(am.deny)
}

// DeniedPrivileges lists the withheld privilege IDs of entity (sorted; for assertions).
func (e *Env) DeniedPrivileges(entity string) []string {
	if e.ctl != nil {
		var res privilegesResp
		e.ctl.must("privileges/denied", privilegeReq{Entity: entity}, &res)
		return res.PrivIDs
	}
	am := e.authorizationManager()
	am.mu.Lock()
	defer am.mu.Unlock()
	var ids []string
	for id := range am.deny[entity] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

package vsphere

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/vmware/govmomi/vapi/cluster"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Cluster modules (vAPI /vcenter/cluster/modules, vCenter 7.0 Update 1 and later): a module groups VMs
// of one compute cluster that DRS keeps on different hosts (a soft anti-affinity rule). A pool creates
// one per compute cluster it places into and owns it by recording its ID; a module carries no name or
// marker of its own, so ownership of a module vCenter lists is only ever inferred from its members
// (ClusterModule.Members), never from its existence.

// ClassUnsupported means vCenter has no cluster-modules API (the endpoint answers 404: older than 7.0U1).
const ClassUnsupported = ErrorClass("ClusterModulesUnsupported")

// ComputeCluster is the compute resource a resource pool belongs to.
type ComputeCluster struct {
	// Ref is its managed object ID (domain-c… for a cluster).
	Ref  string
	Name string
	// IsCluster is false for a standalone host's compute resource (no DRS, no cluster modules).
	IsCluster bool
	// DRSEnabled is configurationEx.drsConfig.enabled of a cluster.
	DRSEnabled bool
}

// ClusterModule is one cluster module of a compute cluster, with its members.
type ClusterModule struct {
	ID         string
	ClusterRef string
	Members    []ModuleMember
}

// ModuleMember is one VM of a cluster module and the ownership marker it carries (zero: none).
type ModuleMember struct {
	Ref       string
	Ownership Ownership
}

// OwnedBy reports whether the module has members and every one of them carries poolUID's marker: the
// only evidence that a module vCenter lists (not named in a pool's status) is that pool's.
func (m ClusterModule) OwnedBy(poolUID string) bool {
	if len(m.Members) == 0 || poolUID == "" {
		return false
	}
	for _, v := range m.Members {
		if v.Ownership.PoolUID != poolUID {
			return false
		}
	}
	return true
}

// ComputeClusterOf resolves, read-only, the compute resource that owns the resource pool (the cluster a
// placement's VMs run in) and whether DRS is enabled on it.
func (c *client) ComputeClusterOf(ctx context.Context, datacenter, resourcePool string) (*ComputeCluster, error) {
	out, err := c.computeClusterOf(ctx, datacenter, resourcePool)
	return out, observe("cluster_read", err)
}

func (c *client) computeClusterOf(ctx context.Context, datacenter, resourcePool string) (*ComputeCluster, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, ownerRef, err := c.poolOwner(ctx, datacenter, resourcePool, "ReadCluster")
	if err != nil {
		return nil, err
	}
	out := &ComputeCluster{Ref: ownerRef.Value}
	if ownerRef.Type != "ClusterComputeResource" {
		var cr mo.ComputeResource
		if err := c.pc().RetrieveOne(ctx, ownerRef, []string{"name"}, &cr); err != nil {
			return nil, classify("ReadCluster", err)
		}
		out.Name = cr.Name
		return out, nil
	}
	var cl mo.ClusterComputeResource
	if err := c.pc().RetrieveOne(ctx, ownerRef, []string{"name", "configurationEx"}, &cl); err != nil {
		return nil, classify("ReadCluster", err)
	}
	out.Name, out.IsCluster = cl.Name, true
	if cfg, ok := cl.ConfigurationEx.(*types.ClusterConfigInfoEx); ok && cfg.DrsConfig.Enabled != nil {
		out.DRSEnabled = *cfg.DrsConfig.Enabled
	}
	return out, nil
}

// ClusterModules lists the cluster modules of the compute cluster clusterRef with their members and the
// ownership markers the members carry. A vCenter without the API gives a ClassUnsupported error.
func (c *client) ClusterModules(ctx context.Context, clusterRef string) ([]ClusterModule, error) {
	out, err := c.clusterModules(ctx, clusterRef)
	return out, observe("cluster_module_list", err)
}

func (c *client) clusterModules(ctx context.Context, clusterRef string) ([]ClusterModule, error) {
	var out []ClusterModule
	var refs []types.ManagedObjectReference
	err := c.withModules(ctx, "ListClusterModules", func(ctx context.Context, m *cluster.Manager) error {
		out, refs = nil, nil
		all, err := m.ListModules(ctx)
		if err != nil {
			return unsupported(err)
		}
		for _, s := range all {
			if s.Cluster != clusterRef {
				continue
			}
			members, err := m.ListModuleMembers(ctx, s.Module)
			if restStatus(err, http.StatusNotFound) {
				continue // deleted between the two calls
			}
			if err != nil {
				return err
			}
			mod := ClusterModule{ID: s.Module, ClusterRef: s.Cluster}
			for _, r := range members {
				mod.Members = append(mod.Members, ModuleMember{Ref: r.Value})
				refs = append(refs, r)
			}
			out = append(out, mod)
		}
		return nil
	})
	if err != nil || len(refs) == 0 {
		return out, err
	}
	owners, err := c.ownershipOfRefs(ctx, refs)
	if err != nil {
		return nil, err
	}
	for i := range out {
		for j := range out[i].Members {
			out[i].Members[j].Ownership = owners[out[i].Members[j].Ref]
		}
	}
	return out, nil
}

// ownershipOfRefs reads the ownership markers of VMs (one retrieval); a VM gone meanwhile is left out.
func (c *client) ownershipOfRefs(ctx context.Context, refs []types.ManagedObjectReference) (map[string]Ownership, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	var vms []mo.VirtualMachine
	err := c.pc().Retrieve(ctx, refs, []string{"config.extraConfig"}, &vms)
	if err != nil && !IsNotFound(classify("", err)) {
		return nil, classify("ListClusterModules", err)
	}
	out := make(map[string]Ownership, len(vms))
	for _, vm := range vms {
		if vm.Config != nil {
			out[vm.Self.Value] = ownershipOf(vm.Config.ExtraConfig)
		}
	}
	return out, nil
}

// CreateClusterModule creates a cluster module in the compute cluster clusterRef and returns its ID.
func (c *client) CreateClusterModule(ctx context.Context, clusterRef string) (string, error) {
	var id string
	err := c.withModules(ctx, "CreateClusterModule", func(ctx context.Context, m *cluster.Manager) error {
		var err error
		id, err = m.CreateModule(ctx, types.ManagedObjectReference{Type: "ClusterComputeResource", Value: clusterRef})
		return unsupported(err)
	})
	if err == nil {
		c.log.Info("created cluster module", "cluster", clusterRef, "module", id)
	}
	return id, observe("cluster_module_create", err)
}

// DeleteClusterModule removes the module's members, then deletes the module; absent is success. The
// caller proves ownership first: only a module its status names is ever deleted.
func (c *client) DeleteClusterModule(ctx context.Context, moduleID string) error {
	err := c.withModules(ctx, "DeleteClusterModule", func(ctx context.Context, m *cluster.Manager) error {
		members, err := m.ListModuleMembers(ctx, moduleID)
		if err != nil {
			return err
		}
		if len(members) > 0 {
			refs := make([]mo.Reference, 0, len(members))
			for _, r := range members {
				refs = append(refs, r)
			}
			if _, err := m.RemoveModuleMembers(ctx, moduleID, refs...); err != nil {
				return err
			}
		}
		return m.DeleteModule(ctx, moduleID)
	})
	if restStatus(err, http.StatusNotFound) {
		err = nil // already gone
	}
	if err == nil {
		c.log.Info("deleted cluster module", "module", moduleID)
	}
	return observe("cluster_module_delete", err)
}

// JoinClusterModule adds an owned VM (identity verified, never a copy) to the module; already a member
// is success. A VM outside the module's cluster is a ClassRefused error; an absent VM or module NotFound.
func (c *client) JoinClusterModule(ctx context.Context, datacenter, moduleID, instanceUUID string, owner Ownership) error {
	ref, _, err := c.ownedVM(ctx, "JoinClusterModule", datacenter, instanceUUID, owner, guardProps)
	if err == nil {
		err = c.joinModule(ctx, moduleID, *ref)
	}
	return observe("cluster_module_join", err)
}

// joinModule adds ref to the module; a VM found already a member is success.
func (c *client) joinModule(ctx context.Context, moduleID string, ref types.ManagedObjectReference) error {
	return c.withModules(ctx, "JoinClusterModule", func(ctx context.Context, m *cluster.Manager) error {
		added, err := m.AddModuleMembers(ctx, moduleID, ref)
		if err != nil || added {
			return err
		}
		// false: already a member, or not in the module's cluster.
		members, err := m.ListModuleMembers(ctx, moduleID)
		if err != nil {
			return err
		}
		if slices.Contains(members, ref) {
			return nil
		}
		return NewError(ClassRefused, "JoinClusterModule", "vCenter did not add VM %s to cluster module %s (not in the module's cluster?)", ref.Value, moduleID)
	})
}

// LeaveClusterModule removes an owned VM (identity verified, never a copy) from the module: absent VM,
// absent module or not a member is success.
func (c *client) LeaveClusterModule(ctx context.Context, datacenter, moduleID, instanceUUID string, owner Ownership) error {
	ref, _, err := c.ownedVM(ctx, "LeaveClusterModule", datacenter, instanceUUID, owner, guardProps)
	if IsNotFound(err) {
		return observe("cluster_module_leave", nil)
	}
	if err == nil {
		err = c.withModules(ctx, "LeaveClusterModule", func(ctx context.Context, m *cluster.Manager) error {
			_, err := m.RemoveModuleMembers(ctx, moduleID, *ref) // false: not a member
			return err
		})
		if restStatus(err, http.StatusNotFound) {
			err = nil
		}
	}
	return observe("cluster_module_leave", err)
}

// withModules runs fn with the session's logged-in REST client, each try under its own call deadline,
// logging in again once when the REST session expired. Errors are classified for op.
func (c *client) withModules(ctx context.Context, op string, fn func(context.Context, *cluster.Manager) error) error {
	try := func(renew bool) error {
		rc, err := c.restClient(ctx, renew)
		if err != nil {
			return err
		}
		cctx, cancel := c.callCtx(ctx)
		defer cancel()
		return fn(cctx, cluster.NewManager(rc))
	}
	err := try(false)
	if restStatus(err, http.StatusUnauthorized) {
		err = try(true)
	}
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	return &Error{Class: classOfPlainError(err), Op: op, Err: err}
}

// unsupported turns the 404 of the modules collection (no such API) into a ClassUnsupported error.
func unsupported(err error) error {
	if restStatus(err, http.StatusNotFound) {
		return &Error{Class: ClassUnsupported, Op: "ClusterModules", Err: errors.New("vCenter has no cluster-modules API (/api/vcenter/cluster/modules answers 404; it needs vCenter 7.0 Update 1 or later)")}
	}
	return err
}

// callCtx bounds one call to vCenter by CallTimeout (and by ctx's own deadline, whichever is sooner).
func (c *client) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeouts.CallTimeout <= 0 {
		return c.bounded(ctx)
	}
	return context.WithTimeout(ctx, c.timeouts.CallTimeout)
}

// restStatus reports whether err (or an error it wraps) is a vAPI answer with the HTTP status code.
func restStatus(err error, code int) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if rest.IsStatusError(e, code) {
			return true
		}
	}
	return false
}

package vspherefake

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// moduleState is the fake's compute clusters and cluster modules.
type moduleState struct {
	// clusters by resource pool name; a pool not named is in a DRS cluster "cluster" (domain-c1).
	clusters map[string]vsphere.ComputeCluster
	modules  map[string]*fakeModule // by ID
	next     int
}

type fakeModule struct {
	cluster string
	members sets.Set[string] // instance UUIDs
}

// SetComputeCluster scripts what ComputeClusterOf answers for resourcePool.
func (f *Fake) SetComputeCluster(resourcePool string, c vsphere.ComputeCluster) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.modules.clusters == nil {
		f.modules.clusters = map[string]vsphere.ComputeCluster{}
	}
	f.modules.clusters[resourcePool] = c
}

// ModuleMembers lists the instance UUIDs of a module's members, sorted; ok is false when it does not exist.
func (f *Fake) ModuleMembers(id string) (uuids []string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.modules.modules[id]
	if !ok {
		return nil, false
	}
	return sets.List(m.members), true
}

// ModuleIDs lists every module's ID, sorted.
func (f *Fake) ModuleIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.modules.modules))
	for id := range f.modules.modules {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// ComputeClusterOf answers what SetComputeCluster scripted, else a DRS cluster "cluster" (domain-c1).
func (f *Fake) ComputeClusterOf(_ context.Context, _ string, resourcePool string) (*vsphere.ComputeCluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ComputeClusterOf); err != nil {
		return nil, err
	}
	if c, ok := f.modules.clusters[resourcePool]; ok {
		return &c, nil
	}
	return &vsphere.ComputeCluster{Ref: "domain-c1", Name: "cluster", IsCluster: true, DRSEnabled: true}, nil
}

// ClusterModules lists the modules of clusterRef with their members' ownership.
func (f *Fake) ClusterModules(_ context.Context, clusterRef string) ([]vsphere.ClusterModule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ClusterModules); err != nil {
		return nil, err
	}
	var out []vsphere.ClusterModule
	for id, m := range f.modules.modules {
		if m.cluster != clusterRef {
			continue
		}
		mod := vsphere.ClusterModule{ID: id, ClusterRef: m.cluster}
		for _, uuid := range sets.List(m.members) {
			member := vsphere.ModuleMember{Ref: uuid}
			if vm, ok := f.vms[uuid]; ok {
				member.Ownership = vm.Ownership
			}
			mod.Members = append(mod.Members, member)
		}
		out = append(out, mod)
	}
	slices.SortFunc(out, func(a, b vsphere.ClusterModule) int { return compareStrings(a.ID, b.ID) })
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CreateClusterModule creates an empty module in clusterRef.
func (f *Fake) CreateClusterModule(_ context.Context, clusterRef string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(CreateClusterModule); err != nil {
		return "", err
	}
	if f.modules.modules == nil {
		f.modules.modules = map[string]*fakeModule{}
	}
	f.modules.next++
	id := fmt.Sprintf("module-%d", f.modules.next)
	f.modules.modules[id] = &fakeModule{cluster: clusterRef, members: sets.New[string]()}
	return id, nil
}

// DeleteClusterModule deletes a module; absent is success.
func (f *Fake) DeleteClusterModule(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(DeleteClusterModule); err != nil {
		return err
	}
	delete(f.modules.modules, id)
	return nil
}

// JoinClusterModule adds an owned VM to a module; an absent VM or module is ClassNotFound.
func (f *Fake) JoinClusterModule(_ context.Context, datacenter, id, instanceUUID string, owner vsphere.Ownership) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(JoinClusterModule); err != nil {
		return err
	}
	vm, ok := f.vms[instanceUUID]
	if !ok || vm.Datacenter != datacenter {
		return vsphere.NewError(vsphere.ClassNotFound, "JoinClusterModule", "no VM with instance UUID %q", instanceUUID)
	}
	if err := verifyOwnership("JoinClusterModule", vm, owner); err != nil {
		return err
	}
	return f.join(id, instanceUUID)
}

func (f *Fake) join(id, instanceUUID string) error {
	m, ok := f.modules.modules[id]
	if !ok {
		return vsphere.NewError(vsphere.ClassNotFound, "JoinClusterModule", "no cluster module %q", id)
	}
	m.members.Insert(instanceUUID)
	return nil
}

// LeaveClusterModule removes an owned VM from a module; absent VM, module or membership is success.
func (f *Fake) LeaveClusterModule(_ context.Context, datacenter, id, instanceUUID string, owner vsphere.Ownership) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(LeaveClusterModule); err != nil {
		return err
	}
	vm, ok := f.vms[instanceUUID]
	if !ok || vm.Datacenter != datacenter {
		return nil
	}
	if err := verifyOwnership("LeaveClusterModule", vm, owner); err != nil {
		return err
	}
	if m, ok := f.modules.modules[id]; ok {
		m.members.Delete(instanceUUID)
	}
	return nil
}

// joinOnCreate is CreateVM's join of spec.ClusterModule before power-on (f.mu held).
func (f *Fake) joinOnCreate(info *vsphere.VMInfo, spec vsphere.VMSpec) {
	if spec.ClusterModule == "" {
		return
	}
	if err := f.join(spec.ClusterModule, spec.Ownership.OwnerUID); err != nil {
		info.ClusterModuleErr = err
		return
	}
	info.ClusterModule = spec.ClusterModule
}

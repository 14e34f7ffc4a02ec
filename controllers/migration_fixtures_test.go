package controllers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Fixtures shaped as the upstream Helm-installed operator (1.0.2, 1.1.0) leaves a cluster and vCenter
// (facts: notes/upstream-migration-facts.md §2, §3): VsphereAgents named after the AgentMachine, with
// upstream's labels, vm-name annotation, finalizer and reconciled status; VMs of that name in the
// pool's folder with the ISO in the drive and, from 1.1.0, the Notes marker; Agents labelled and
// approved the way upstream patched them; waiting AgentMachines pinned.

// upstreamVersion is the upstream release whose shape a fixture takes.
type upstreamVersion string

const (
	upstream102 upstreamVersion = "1.0.2"
	upstream110 upstreamVersion = "1.1.0"
)

// upstreamISOPath is where upstream cached the pool's ISO: <pathPrefix default>/<sha256>.iso on the ISO
// datastore, with the bytes the InfraEnv serves, uploaded the way upstream did.
func upstreamISOPath(ctx context.Context, p *afv1.VsphereAgentPool) string {
	GinkgoHelper()
	path := "[" + vcsim.Datastore + "] agent-forge/" + p.Namespace + "/" + p.Name + "/" + isoServer.SHA256() + ".iso"
	content := isoServer.Content()
	Expect(vs.UploadFile(ctx, vcsim.Datacenter, path, bytes.NewReader(content), int64(len(content)))).To(Succeed())
	return path
}

// createUpstreamPool stores the pool as upstream left it: its finalizer on, adoption not set.
func createUpstreamPool(s *world.Scenario, customize func(*afv1.VsphereAgentPool)) *afv1.VsphereAgentPool {
	GinkgoHelper()
	p := newPool(s, "workers")
	p.Finalizers = []string{afv1.FinalizerUpstreamPool}
	if customize != nil {
		customize(p)
	}
	return createPool(p)
}

// createUpstreamVA stores an upstream VsphereAgent for VM vmName (its status comes later, once the VM
// exists: upstream records the BIOS UUID and MAC it read back).
func createUpstreamVA(ctx context.Context, pool *afv1.VsphereAgentPool, vmName string, labels map[string]string) *afv1.VsphereAgent {
	GinkgoHelper()
	fresh := getPool(pool)
	va := &afv1.VsphereAgent{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pool.Namespace, Name: vmName,
			Labels: map[string]string{
				afv1.LabelUpstreamPool: pool.Name, afv1.LabelUpstreamCreatedFor: "agent-machine", afv1.LabelUpstreamAgentMachine: vmName,
			},
			Annotations: map[string]string{afv1.AnnotationUpstreamVMName: vmName},
			Finalizers:  []string{afv1.FinalizerUpstreamVsphereAgent},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: afv1.GroupVersion.String(), Kind: "VsphereAgentPool", Name: fresh.Name, UID: fresh.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: afv1.VsphereAgentSpec{PoolRef: afv1.LocalObjectReference{Name: pool.Name}},
	}
	for k, v := range labels {
		va.Labels[k] = v
	}
	Expect(k8s.Create(ctx, va)).To(Succeed())
	return va
}

// upstreamVM is a VM as upstream created it.
type upstreamVM struct {
	name, folder, notes, iso string
}

// createUpstreamVM creates the VM with govmomi as upstream's govc vm.create did (no extraConfig marker,
// vCenter's own instance UUID), powers it on and returns its BIOS UUID and MAC.
func createUpstreamVM(ctx context.Context, spec upstreamVM) (biosUUID, mac string) {
	GinkgoHelper()
	gc, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = gc.Logout(context.WithoutCancel(ctx)) }()
	f := find.NewFinder(gc.Client, false)
	dc, err := f.Datacenter(ctx, vcsim.Datacenter)
	Expect(err).NotTo(HaveOccurred())
	f.SetDatacenter(dc)
	Expect(vc.EnsureFolder(ctx, spec.folder)).To(Succeed())
	folder, err := f.Folder(ctx, "/"+vcsim.Datacenter+"/vm/"+spec.folder)
	Expect(err).NotTo(HaveOccurred())
	rp, err := f.ResourcePool(ctx, vcsim.ResourcePool)
	Expect(err).NotTo(HaveOccurred())
	network, err := f.Network(ctx, vcsim.Network)
	Expect(err).NotTo(HaveOccurred())
	backing, err := network.EthernetCardBackingInfo(ctx)
	Expect(err).NotTo(HaveOccurred())

	var devices object.VirtualDeviceList
	ide, err := devices.CreateIDEController()
	Expect(err).NotTo(HaveOccurred())
	devices = append(devices, ide)
	cd, err := devices.CreateCdrom(ide.(types.BaseVirtualController))
	Expect(err).NotTo(HaveOccurred())
	cd.Key = devices.NewKey()
	if spec.iso != "" {
		cd = devices.InsertIso(cd, spec.iso)
	}
	devices = append(devices, cd)
	// A worker-sized boot disk (assisted-service's minimum: 100 GB), thin: the simulator writes no data.
	scsi, err := devices.CreateSCSIController("pvscsi")
	Expect(err).NotTo(HaveOccurred())
	scsi.GetVirtualDevice().Key = devices.NewKey()
	devices = append(devices, scsi)
	disk := devices.CreateDisk(scsi.(types.BaseVirtualController), types.ManagedObjectReference{}, "")
	disk.CapacityInKB = 100 << 20
	disk.Key = devices.NewKey()
	devices = append(devices, disk)
	nic, err := devices.CreateEthernetCard("vmxnet3", backing)
	Expect(err).NotTo(HaveOccurred())
	nic.GetVirtualDevice().Key = devices.NewKey()
	devices = append(devices, nic)
	changes, err := devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd)
	Expect(err).NotTo(HaveOccurred())
	task, err := folder.CreateVM(ctx, types.VirtualMachineConfigSpec{
		Name: spec.name, GuestId: "rhel9_64Guest", NumCPUs: 2, MemoryMB: 8192, Annotation: spec.notes,
		Files:        &types.VirtualMachineFileInfo{VmPathName: "[" + vcsim.Datastore + "]"},
		DeviceChange: changes,
		ExtraConfig:  []types.BaseOptionValue{&types.OptionValue{Key: "disk.enableUUID", Value: "TRUE"}},
	}, rp, nil)
	Expect(err).NotTo(HaveOccurred())
	info, err := task.WaitForResult(ctx)
	Expect(err).NotTo(HaveOccurred())
	vm := object.NewVirtualMachine(gc.Client, info.Result.(types.ManagedObjectReference))
	on, err := vm.PowerOn(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(on.Wait(ctx)).To(Succeed())
	var props mo.VirtualMachine
	Expect(vm.Properties(ctx, vm.Reference(), []string{"config.uuid", "config.hardware.device"}, &props)).To(Succeed())
	for _, d := range props.Config.Hardware.Device {
		if e, ok := d.(types.BaseVirtualEthernetCard); ok {
			mac = strings.ToLower(e.GetVirtualEthernetCard().MacAddress)
		}
	}
	return props.Config.Uuid, mac
}

// vmConfig is what adoption would change on a VM, read straight from the simulator.
type vmConfig struct {
	InstanceUUID, Notes string
	ExtraConfig         map[string]string
	ISO                 string
	PowerState          string
	// Folder is the managed object ID of the VM's folder (tells same-named VMs apart).
	Folder string
}

// readVMConfig reads vmName's configuration (the one VM of that name).
func readVMConfig(ctx context.Context, vmName string) vmConfig {
	GinkgoHelper()
	cfgs := readVMConfigs(ctx, vmName)
	Expect(cfgs).To(HaveLen(1), "VMs named %s", vmName)
	return cfgs[0]
}

// readVMConfigs reads the configuration of every VM named vmName, ordered by folder.
func readVMConfigs(ctx context.Context, vmName string) []vmConfig {
	GinkgoHelper()
	gc, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = gc.Logout(context.WithoutCancel(ctx)) }()
	v, err := view.NewManager(gc.Client).CreateContainerView(ctx, gc.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var vms []mo.VirtualMachine
	Expect(v.RetrieveWithFilter(ctx, []string{"VirtualMachine"}, []string{"name", "config", "parent", "runtime.powerState"}, &vms, property.Match{"name": vmName})).To(Succeed())
	out := make([]vmConfig, 0, len(vms))
	for _, props := range vms {
		cfg := vmConfig{InstanceUUID: props.Config.InstanceUuid, Notes: props.Config.Annotation, ExtraConfig: map[string]string{},
			PowerState: string(props.Runtime.PowerState)}
		if props.Parent != nil {
			cfg.Folder = props.Parent.Value
		}
		for _, o := range props.Config.ExtraConfig {
			v := o.GetOptionValue()
			s, _ := v.Value.(string)
			cfg.ExtraConfig[v.Key] = s
		}
		for _, d := range props.Config.Hardware.Device {
			if cd, ok := d.(*types.VirtualCdrom); ok {
				if b, ok := cd.Backing.(*types.VirtualCdromIsoBackingInfo); ok {
					cfg.ISO = b.FileName
				}
			}
		}
		out = append(out, cfg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Folder < out[j].Folder })
	return out
}

// setUpstreamStatus writes the VsphereAgent's status as upstream reconciled it.
func setUpstreamStatus(ctx context.Context, va *afv1.VsphereAgent, version upstreamVersion, vm afv1.VMStatus) {
	GinkgoHelper()
	Eventually(func() error {
		fresh := getVA(va)
		fresh.Status.ObservedGeneration = fresh.Generation
		vm.Name = va.Name
		if version == upstream110 {
			vm.OwnerUID, vm.Source = string(fresh.UID), "VsphereAgent"
		}
		fresh.Status.VM = vm
		return k8s.Status().Update(ctx, fresh)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// agentOfVM waits for the world to register the VM's Agent and returns it.
func agentOfVM(ctx context.Context, ns, mac, biosUUID string) agents.Agent {
	GinkgoHelper()
	var found *agents.Agent
	Eventually(func() bool {
		list := newAgentList()
		Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for i := range list.Items {
			if a := agents.AgentFrom(&list.Items[i]); a.IsHostOf(mac, biosUUID) {
				found = &a
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond).Should(BeTrue(), "the VM's Agent registers")
	return *found
}

// prepareAgentAsUpstream patches the Agent the way upstream did (merge patch while unbound): the
// pool's labels, the role label, the agent-machine label = VM name, role, hostname, approved.
func prepareAgentAsUpstream(ctx context.Context, s *world.Scenario, agentName, vmName string) {
	GinkgoHelper()
	labels := map[string]any{afv1.LabelNodePoolRole: "worker", afv1.LabelUpstreamAgentMachine: vmName}
	for k, v := range s.AgentLabels {
		labels[k] = v
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"labels": labels},
		"spec":     map[string]any{"role": "worker", "hostname": vmName, "approved": true},
	})
	Expect(err).NotTo(HaveOccurred())
	obj := agents.New(agents.AgentGVK)
	obj.SetNamespace(s.Namespace)
	obj.SetName(agentName)
	Expect(k8s.Patch(ctx, obj, client.RawPatch(ktypes.MergePatchType, patch))).To(Succeed())
}

// waitingAgentMachines waits until n AgentMachines of the scenario wait for an Agent and returns them.
func waitingAgentMachines(ctx context.Context, s *world.Scenario, n int) []agents.AgentMachine {
	GinkgoHelper()
	var out []agents.AgentMachine
	Eventually(func(g Gomega) {
		out = out[:0]
		list := agents.NewList(agents.AgentMachineGVK)
		g.Expect(k8s.List(ctx, list, client.InNamespace(s.ControlPlaneNamespace))).To(Succeed())
		for i := range list.Items {
			if am := agents.AgentMachineFrom(&list.Items[i]); am.WaitsForAgent() && am.OwnerMachine != "" {
				out = append(out, am)
			}
		}
		g.Expect(out).To(HaveLen(n))
	}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
	return out
}

// pinAgentMachine merge-patches the pin upstream put on every waiting AgentMachine.
func pinAgentMachine(ctx context.Context, am agents.AgentMachine) {
	GinkgoHelper()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"agentLabelSelector": map[string]any{
		"matchLabels": map[string]any{afv1.LabelUpstreamAgentMachine: am.Name}}}})
	Expect(err).NotTo(HaveOccurred())
	obj := agents.New(agents.AgentMachineGVK)
	obj.SetNamespace(am.Namespace)
	obj.SetName(am.Name)
	Expect(k8s.Patch(ctx, obj, client.RawPatch(ktypes.MergePatchType, patch))).To(Succeed())
}

// agentMachineAgent is the Agent an AgentMachine reserved ("" while it waits).
func agentMachineAgent(ctx context.Context, ns, name string) string {
	GinkgoHelper()
	u := agents.New(agents.AgentMachineGVK)
	Expect(k8s.Get(ctx, ktypes.NamespacedName{Namespace: ns, Name: name}, u)).To(Succeed())
	ref, _, _ := unstructured.NestedString(u.Object, "status", "agentRef", "name")
	return ref
}

// agentRefOf is upstream's object reference to an Agent.
func agentRefOf(ns, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "agent-install.openshift.io/v1beta1", Kind: "Agent", Namespace: ns, Name: name}
}

// adoptedCondition is the VsphereAgent's Adopted condition (nil when absent).
func adoptedCondition(va *afv1.VsphereAgent) *metav1.Condition {
	for i := range va.Status.Conditions {
		if va.Status.Conditions[i].Type == afv1.ConditionAdopted {
			return &va.Status.Conditions[i]
		}
	}
	return nil
}

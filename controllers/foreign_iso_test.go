package controllers_test

import (
	"bytes"
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// assisted-service registers a host with the InfraEnv whose discovery image it booted; a host that boots
// any other image never calls it (the world decides by the ISO's bytes, see docs/world.md). A pool VM
// whose CD-ROM someone pointed at another ISO is therefore never supply: it waits under
// registrationTimeout like any VM that does not register, and is destroyed and replaced after it.
var _ = Describe("A VM that boots a foreign ISO", func() {
	It("never registers nor counts as an available Agent, and is replaced after registrationTimeout", func(ctx context.Context) {
		op, s, d, pool := provisionUnregistered(ctx, operatorOptions{}, 1)
		vas := vsphereAgents(pool)
		Expect(vas).To(HaveLen(1))
		va := vas[0]
		first := vmNames(pool)

		By("pointing the VM's CD-ROM at another ISO by hand and power-cycling it")
		vm := adminVM(ctx, va.Status.VM.InstanceUUID)
		foreign := uploadForeignISO(ctx, s.Namespace)
		devices, err := vm.Device(ctx)
		Expect(err).NotTo(HaveOccurred())
		cds := devices.SelectByType((*types.VirtualCdrom)(nil))
		Expect(cds).To(HaveLen(1))
		cd := cds[0].(*types.VirtualCdrom)
		cd.Backing = &types.VirtualCdromIsoBackingInfo{VirtualDeviceFileBackingInfo: types.VirtualDeviceFileBackingInfo{FileName: foreign}}
		Expect(vm.EditDevice(ctx, cd)).To(Succeed())
		Expect(cdromISOs(ctx, vm)).To(Equal([]string{foreign}))
		powerCycle(ctx, d, vm, va.Status.VM.BIOSUUID)
		d.SetRegistrationFilter(nil)

		By("the host never reaches assisted-service; the pool counts no supply")
		passes := d.Timing().Passes
		Eventually(func() int { return d.Timing().Passes }, 60*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", passes+3))
		Expect(d.ForeignBoots()).To(HaveKey(va.Status.VM.Name), "the world saw the VM boot an image no InfraEnv generated")
		list := newAgentList()
		Expect(k8s.List(ctx, list, client.InNamespace(s.Namespace))).To(Succeed())
		Expect(list.Items).To(BeEmpty())
		got := getVA(&va)
		Expect(got.Status.VM.Phase).To(Equal(afv1.VMPhaseProvisioning))
		Expect(got.Status.VM.AgentName).To(BeEmpty())
		p := getPool(pool)
		Expect(p.Status.AvailableAgents).To(BeZero())
		Expect(p.Status.MatchingAgents).To(BeZero())

		By("after registrationTimeout the VM is destroyed and replaced; the replacement boots the pool's image and serves")
		op.clock.Step(21 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func(g Gomega) {
			g.Expect(vc.VMByInstanceUUID(va.Status.VM.InstanceUUID)).To(BeNil(), "the foreign-booting VM is destroyed")
			g.Expect(phaseCount(pool, afv1.VMPhaseBound)).To(Equal(1))
		}, 120*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(vmNames(pool)).NotTo(ContainElement(first[0]))
		Expect(datastoreHas(ctx, foreign)).To(BeTrue(), "the foreign ISO is never touched")
	})
})

// uploadForeignISO puts an ISO no InfraEnv generated on the simulator's datastore and returns its path.
func uploadForeignISO(ctx context.Context, name string) string {
	GinkgoHelper()
	ds := adminDatastore(ctx)
	p := name + "-foreign.iso" // the datastore root: no folder to make
	data := bytes.Repeat([]byte("someone else's image "), 2048)
	param := soap.DefaultUpload
	param.ContentLength = int64(len(data))
	Expect(ds.Upload(ctx, bytes.NewReader(data), p, &param)).To(Succeed())
	return ds.Path(p)
}

// datastoreHas reports whether a "[ds] path" file exists on the simulator's datastore.
func datastoreHas(ctx context.Context, path string) bool {
	GinkgoHelper()
	var dp object.DatastorePath
	Expect(dp.FromString(path)).To(BeTrue())
	_, err := adminDatastore(ctx).Stat(ctx, dp.Path)
	return err == nil
}

// adminDatastore is the simulator's datastore through a session of the test's own.
func adminDatastore(ctx context.Context) *object.Datastore {
	GinkgoHelper()
	gc, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = gc.Logout(context.Background()) })
	finder := find.NewFinder(gc.Client, false)
	dc, err := finder.Datacenter(ctx, vcsim.Datacenter)
	Expect(err).NotTo(HaveOccurred())
	finder.SetDatacenter(dc)
	ds, err := finder.Datastore(ctx, vcsim.Datastore)
	Expect(err).NotTo(HaveOccurred())
	return ds
}

package controllers_test

import (
	"context"
	"net/url"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vapi/cluster"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// moduleView reads cluster modules and VM references from the simulator with an admin session of its
// own, through the vAPI as a user would (govc cluster.module.ls).
type moduleView struct {
	m    *cluster.Manager
	idx  *object.SearchIndex
	dc   *object.Datacenter
	done func()
}

func newModuleView(ctx context.Context) *moduleView {
	GinkgoHelper()
	admin, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	rc := rest.NewClient(admin.Client)
	Expect(rc.Login(ctx, url.UserPassword(vcsim.Username, vcsim.Password))).To(Succeed())
	dc, err := find.NewFinder(admin.Client, false).Datacenter(ctx, vcsim.Datacenter)
	Expect(err).NotTo(HaveOccurred())
	v := &moduleView{m: cluster.NewManager(rc), idx: object.NewSearchIndex(admin.Client), dc: dc}
	v.done = func() { _ = rc.Logout(context.Background()); _ = admin.Logout(context.Background()) }
	DeferCleanup(v.done)
	return v
}

// exists reports whether vCenter lists the module.
func (v *moduleView) exists(ctx context.Context, id string) bool {
	GinkgoHelper()
	all, err := v.m.ListModules(ctx)
	Expect(err).NotTo(HaveOccurred())
	return slices.ContainsFunc(all, func(s cluster.ModuleSummary) bool { return s.Module == id })
}

// members lists the module's members as VM references ("vm-…"); nil when the module is gone.
func (v *moduleView) members(ctx context.Context, id string) []string {
	GinkgoHelper()
	if !v.exists(ctx, id) {
		return nil
	}
	refs, err := v.m.ListModuleMembers(ctx, id)
	Expect(err).NotTo(HaveOccurred())
	out := []string{}
	for _, r := range refs {
		out = append(out, r.Value)
	}
	slices.Sort(out)
	return out
}

// vmRef is the reference of the VM whose instance UUID is uuid ("" when absent).
func (v *moduleView) vmRef(ctx context.Context, uuid string) string {
	GinkgoHelper()
	ref, err := v.idx.FindByUuid(ctx, v.dc, uuid, true, types.NewBool(true))
	Expect(err).NotTo(HaveOccurred())
	if ref == nil {
		return ""
	}
	return ref.Reference().Value
}

// poolVMRefs lists the references of the pool's VMs, sorted.
func (v *moduleView) poolVMRefs(ctx context.Context, p *afv1.VsphereAgentPool) []string {
	GinkgoHelper()
	out := []string{}
	for _, va := range vsphereAgents(p) {
		if r := v.vmRef(ctx, string(va.UID)); r != "" {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

func poolModuleID(p *afv1.VsphereAgentPool) string {
	m, _ := getPool(p).Status.AntiAffinity.ModuleFor("")
	return m.ModuleID
}

func withAntiAffinity(p *afv1.VsphereAgentPool) {
	p.Spec.AntiAffinity = &afv1.AntiAffinitySpec{Mode: afv1.AntiAffinityClusterModule}
}

var _ = Describe("Anti-affinity through a vSphere cluster module", func() {
	It("creates the pool's module, puts each VM in it, takes a scaled-down VM out, and deletes the module with the pool", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, withAntiAffinity)
		view := newModuleView(ctx)

		By("the pool records one module of its cluster and says anti-affinity is in force")
		Eventually(func() string { return poolModuleID(pool) }, 60*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())
		id := poolModuleID(pool)
		Expect(view.exists(ctx, id)).To(BeTrue())
		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionAntiAffinity) }, 30*time.Second, 200*time.Millisecond).
			Should(Equal(afv1.ReasonClusterModulesReady))
		mod, _ := getPool(pool).Status.AntiAffinity.ModuleFor("")
		Expect(mod.Cluster).To(Equal(vcsim.Cluster))
		Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonClusterModuleCreated))

		By("scaling to 2: both VMs are members of the module, recorded on their VsphereAgents")
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(2))
		Eventually(func() []string { return view.members(ctx, id) }, 30*time.Second, 250*time.Millisecond).Should(Equal(view.poolVMRefs(ctx, pool)))
		Expect(view.members(ctx, id)).To(HaveLen(2))
		for _, va := range vsphereAgents(pool) {
			Expect(va.Status.VM.ClusterModule).To(Equal(id))
			Expect(conditionOf(va.Status.Conditions, afv1.ConditionClusterModuleMember)).To(Equal("True/" + afv1.ReasonClusterModuleJoined))
		}

		By("scaling down to 1: the removed VM left the module before it was destroyed")
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return len(poolVMs(pool)) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		Eventually(func() []string { return view.members(ctx, id) }, 30*time.Second, 250*time.Millisecond).Should(Equal(view.poolVMRefs(ctx, pool)))
		Expect(view.members(ctx, id)).To(HaveLen(1))

		By("deleting the pool deletes its module")
		deletePoolAndWait(pool)
		Expect(view.exists(ctx, id)).To(BeFalse())
	})

	It("says anti-affinity is not in force while DRS is off, with a Warning Event, and still creates VMs", func(ctx context.Context) {
		Expect(vc.SetDRS(vcsim.Cluster, false)).To(Succeed())
		DeferCleanup(func() { Expect(vc.SetDRS(vcsim.Cluster, true)).To(Succeed()) })
		_, s, d, pool := startPoolScenario(operatorOptions{}, withAntiAffinity)

		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionAntiAffinity) }, 60*time.Second, 200*time.Millisecond).
			Should(Equal(afv1.ReasonDRSDisabled))
		c := meta.FindStatusCondition(getPool(pool).Status.Conditions, afv1.ConditionAntiAffinity)
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Message).To(ContainSubstring("DRS is off on cluster " + vcsim.Cluster))
		Eventually(func() []string { return warningPoolEvents(ctx, pool, afv1.ReasonDRSDisabled) }, 30*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())

		By("VMs are created all the same (and join the module, ready for when DRS is turned on)")
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(poolModuleID(pool)).NotTo(BeEmpty())
	})

	It("says so when vCenter has no cluster-modules API, and still creates VMs", func(ctx context.Context) {
		Expect(vc.SetClusterModulesAPI(false)).To(Succeed())
		DeferCleanup(func() { Expect(vc.SetClusterModulesAPI(true)).To(Succeed()) })
		_, s, d, pool := startPoolScenario(operatorOptions{}, withAntiAffinity)

		Eventually(func() string { return conditionReason(getPool(pool), afv1.ConditionAntiAffinity) }, 60*time.Second, 200*time.Millisecond).
			Should(Equal(afv1.ReasonClusterModulesUnsupported))
		Eventually(func() []string { return warningPoolEvents(ctx, pool, afv1.ReasonClusterModulesUnsupported) }, 30*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty())
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(getPool(pool).Status.AntiAffinity).To(BeNil())
	})
})

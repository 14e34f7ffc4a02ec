package controllers_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// Issue #38: an Agent is labelled and approved only when both its MAC and its VMware serial are the
// VM's. Anyone who can read the discovery ISO can boot it on a machine with a pool VM's MAC; that
// machine registers as a host of its own (assisted-service keys hosts by hardware identity), with no
// serial or its own.
var _ = Describe("Host identity before approval", func() {
	It("never approves an Agent with a pool VM's MAC and no or another serial, and approves and binds the real host", func(ctx context.Context) {
		var realHostBoots atomic.Bool
		_, s, d, pool := startPoolScenarioWith(operatorOptions{},
			world.Options{Register: func(world.VM) bool { return realHostBoots.Load() }}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		var va afv1.VsphereAgent
		Eventually(func(g Gomega) {
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(1))
			g.Expect(vas[0].Status.VM.MACAddress).NotTo(BeEmpty())
			g.Expect(vas[0].Status.VM.BIOSUUID).NotTo(BeEmpty())
			va = vas[0]
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())

		By("two machines booted with the VM's MAC register first: one reports no serial, one its own")
		mac := va.Status.VM.MACAddress
		noSerial, err := d.RegisterHost(ctx, world.VM{Name: "stranger-a", BIOSUUID: "stranger-without-serial", MAC: mac}, s.InfraEnv)
		Expect(err).NotTo(HaveOccurred())
		otherSerial, err := d.RegisterHost(ctx, world.VM{Name: "stranger-b", BIOSUUID: "4203aaaa-bbbb-cccc-dddd-eeeeffff0002", MAC: mac}, s.InfraEnv)
		Expect(err).NotTo(HaveOccurred())
		strangers := []client.ObjectKey{client.ObjectKeyFromObject(noSerial), client.ObjectKeyFromObject(otherSerial)}
		neverPrepared := func(g Gomega) {
			for _, k := range strangers {
				a := getAgent(ctx, k.Namespace, k.Name)
				approved, _, _ := unstructured.NestedBool(a.Object, "spec", "approved")
				g.Expect(approved).To(BeFalse(), "Agent %s approved on the VM's MAC alone", k.Name)
				g.Expect(a.GetLabels()).NotTo(HaveKey(afv1.LabelPool), "Agent %s labelled for the pool", k.Name)
				g.Expect(a.GetLabels()).NotTo(HaveKey(afv1.LabelVsphereAgent))
			}
		}

		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(freshVA(ctx, &va).Status.Conditions, afv1.ConditionAgentRegistered)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(afv1.ReasonHostIdentityUnproven))
			g.Expect(c.Message).To(ContainSubstring("Agent " + noSerial.GetName() + " reports the VM's MAC " + mac + " but no serial number yet"))
			g.Expect(c.Message).To(ContainSubstring("Agent " + otherSerial.GetName() + " reports the VM's MAC " + mac + " but serial number"))
			g.Expect(c.Message).To(ContainSubstring("another machine's"))
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() []string { return objectEventReasons(ctx, va.Namespace, "VsphereAgent", va.Name) }, 10*time.Second, 250*time.Millisecond).
			Should(ContainElement(afv1.ReasonHostIdentityUnproven))
		Expect(freshVA(ctx, &va).Status.VM.AgentName).To(BeEmpty(), "no Agent recorded as the VM's")

		By("passes that find nothing new announce nothing again")
		announced := unprovenEvents(ctx, &va)
		pokeVsphereAgents(pool)
		Consistently(func(g Gomega) {
			neverPrepared(g)
			g.Expect(unprovenEvents(ctx, &va)).To(Equal(announced))
		}, 2*time.Second, 250*time.Millisecond).Should(Succeed())

		By("the real host boots the discovery ISO: its Agent reports the VM's MAC and serial")
		realHostBoots.Store(true)
		hostAgent := world.AgentNameFor(va.Status.VM.BIOSUUID)
		Eventually(func(g Gomega) {
			got := freshVA(ctx, &va)
			g.Expect(got.Status.VM.AgentName).To(Equal(hostAgent))
			g.Expect(got.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
			g.Expect(got.Status.VM.MachineName).NotTo(BeEmpty())
			a := getAgent(ctx, va.Namespace, hostAgent)
			approved, _, _ := unstructured.NestedBool(a.Object, "spec", "approved")
			g.Expect(approved).To(BeTrue())
			g.Expect(a.GetLabels()).To(HaveKeyWithValue(afv1.LabelVsphereAgent, va.Name))
			c := meta.FindStatusCondition(got.Status.Conditions, afv1.ConditionAgentRegistered)
			g.Expect(c.Reason).To(Equal("AgentRegistered"))
			g.Expect(c.Message).To(ContainSubstring("ignored: Agent"))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(neverPrepared, 2*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(boundAgentsOf(pool)).To(Equal(1))
		Expect(agentsOf(pool)).To(Equal(1), "only the real host carries the pool's label")
	})
})

// unprovenEvents counts the HostIdentityUnproven Event occurrences of a VsphereAgent.
func unprovenEvents(ctx context.Context, va *afv1.VsphereAgent) int32 {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(va.Namespace))).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "VsphereAgent" && e.InvolvedObject.Name == va.Name && e.Reason == afv1.ReasonHostIdentityUnproven {
			n += eventOccurrences(e)
		}
	}
	return n
}

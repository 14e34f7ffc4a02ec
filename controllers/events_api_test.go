package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/events"
)

// productActions are the actions the operator's Events may carry (events.Action*).
var productActions = []string{events.ActionPreflight, events.ActionClaimNodePool, events.ActionPlaceVM, events.ActionRequestVM,
	events.ActionReplaceVM, events.ActionReleaseVM, events.ActionCleanUpOrphan, events.ActionDeletePool, events.ActionLeaseAddresses,
	events.ActionRefreshISO, events.ActionPruneISO, events.ActionCreateVM, events.ActionAwaitAgent, events.ActionUnbindAgent,
	events.ActionDestroyVM, events.ActionDeleteAgent, events.ActionEjectISO}

var _ = Describe("Events through the events.k8s.io API", func() {
	It("writes every Event as events.k8s.io/v1 with action, regarding, related and reporting fields, readable in the core view, and no URL token", func(ctx context.Context) {
		_, s, d, pool := startPoolWithISO(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseBound) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		va := vsphereAgents(pool)[0]

		var got map[string]eventsv1.Event // by reason
		Eventually(func(g Gomega) {
			var list eventsv1.EventList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(s.Namespace))).To(Succeed())
			got = map[string]eventsv1.Event{}
			for _, e := range list.Items {
				got[e.Reason] = e
			}
			g.Expect(got).To(HaveKey("ISOUploaded"))
			g.Expect(got).To(HaveKey("VMCreated"))
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())

		var list eventsv1.EventList
		Expect(k8s.List(ctx, &list, client.InNamespace(s.Namespace))).To(Succeed())
		Expect(list.Items).NotTo(BeEmpty())
		for _, e := range list.Items {
			Expect(e.ReportingController).To(BeElementOf("agent-forge-pool", "agent-forge-vm"), "%s: written by the operator", e.Reason)
			Expect(e.ReportingInstance).To(HavePrefix(e.ReportingController+"-"), e.Reason)
			Expect(e.Action).To(BeElementOf(productActions), e.Reason)
			Expect(e.Reason).NotTo(BeEmpty())
			Expect(e.Note).NotTo(BeEmpty(), e.Reason)
			Expect(e.Type).To(BeElementOf(corev1.EventTypeNormal, corev1.EventTypeWarning), e.Reason)
			Expect(e.EventTime.IsZero()).To(BeFalse(), e.Reason)
			Expect(e.Regarding.APIVersion).To(Equal(afv1.GroupVersion.String()), e.Reason)
			Expect(e.Regarding.Kind).To(BeElementOf("VsphereAgentPool", "VsphereAgent"), e.Reason)
			Expect(e.Regarding.Namespace).To(Equal(s.Namespace), e.Reason)
			Expect(e.Regarding.UID).NotTo(BeEmpty(), e.Reason)
			for _, secret := range []string{"s3cr3t-token", "api_key", "token="} {
				Expect(e.Note).NotTo(ContainSubstring(secret), e.Reason)
			}
			if e.Regarding.Kind == "VsphereAgent" {
				Expect(e.Related).NotTo(BeNil(), "%s: a VsphereAgent's Event is related to its pool", e.Reason)
				Expect(e.Related.Kind).To(Equal("VsphereAgentPool"))
				Expect(e.Related.Name).To(Equal(pool.Name))
			}
		}

		iso := got["ISOUploaded"]
		Expect(iso.Regarding.Name).To(Equal(pool.Name))
		Expect(iso.Action).To(Equal(events.ActionRefreshISO))
		Expect(iso.ReportingController).To(Equal("agent-forge-pool"))
		Expect(iso.Type).To(Equal(corev1.EventTypeNormal))
		Expect(got).NotTo(HaveKey("VMRequested"), "the VMCreated batch names the VsphereAgent: no Event of its own for its creation")
		// One Event per pool and batch (as a ReplicaSet's SuccessfulCreate), naming the VM and its VsphereAgent.
		created := got["VMCreated"]
		Expect(created.Regarding.Kind).To(Equal("VsphereAgentPool"))
		Expect(created.Regarding.Name).To(Equal(pool.Name))
		Expect(created.Regarding.UID).To(Equal(getPool(pool).UID))
		Expect(created.Action).To(Equal(events.ActionCreateVM))
		Expect(created.Type).To(Equal(corev1.EventTypeNormal))
		Expect(created.ReportingController).To(Equal("agent-forge-vm"))
		Expect(created.Note).To(Equal("created and powered on 1 VM(s): " + va.Status.VM.Name + " (VsphereAgent " + va.Name + ", instance UUID " + va.Status.VM.InstanceUUID + ")"))

		By("the core view of the same Events carries what oc get events and the older readers show")
		var core corev1.EventList
		Expect(k8s.List(ctx, &core, client.InNamespace(s.Namespace))).To(Succeed())
		byName := map[string]corev1.Event{}
		for _, e := range core.Items {
			byName[e.Name] = e
		}
		for _, e := range list.Items {
			c, ok := byName[e.Name]
			Expect(ok).To(BeTrue(), "%s in the core view", e.Name)
			Expect(c.Reason).To(Equal(e.Reason))
			Expect(c.Type).To(Equal(e.Type))
			Expect(strings.TrimSpace(c.Message)).To(Equal(strings.TrimSpace(e.Note)))
			Expect(c.InvolvedObject).To(Equal(e.Regarding))
			Expect(c.Action).To(Equal(e.Action))
			Expect(c.ReportingController).To(Equal(e.ReportingController))
		}
	})
})

package controllers_test

import (
	"bytes"
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Moving from the upstream operator: adoption evidence that disagrees", func() {
	It("touches nothing (VM config, Agent, finalizers) and reports which evidence disagreed", func(ctx context.Context) {
		s := newScenario()
		startWorld(s, world.Options{})
		folder := "agent-forge/" + s.Namespace
		pool := createUpstreamPool(s, func(p *afv1.VsphereAgentPool) { p.Spec.Adoption = afv1.AdoptionEnabled })
		iso := upstreamISOPath(ctx, pool)
		otherISO := "[" + vcsim.Datastore + "] other-images/rescue.iso"
		Expect(vs.UploadFile(ctx, vcsim.Datacenter, otherISO, bytes.NewReader([]byte("rescue")), 6)).To(Succeed())

		type fixture struct {
			vm       upstreamVM
			evidence string // the word the Adopted message must name
			agent    bool   // the world registers an Agent (only VMs in the scenario's folder boot into it)
			mutate   func(*string)
		}
		fixtures := map[string]fixture{
			"np-bios":   {vm: upstreamVM{folder: folder, iso: iso}, evidence: "biosUUID", agent: true, mutate: flipLastHexDigit},
			"np-folder": {vm: upstreamVM{folder: "agent-forge/" + s.Namespace + "-foreign", iso: iso}, evidence: "folder"},
			"np-iso":    {vm: upstreamVM{folder: folder, iso: otherISO}, evidence: "cdrom", agent: true},
		}
		vas := map[string]*afv1.VsphereAgent{}
		agentsBefore := map[string]*unstructured.Unstructured{}
		for name, f := range fixtures {
			va := createUpstreamVA(ctx, pool, name, nil)
			f.vm.name, f.vm.notes = name, afv1.UpstreamNotesMarkerPrefix+string(va.UID)
			bios, mac := createUpstreamVM(ctx, f.vm)
			recorded := afv1.VMStatus{BIOSUUID: bios, MACAddress: mac, Phase: afv1.VMPhaseAvailable}
			if f.agent {
				a := agentOfVM(ctx, s.Namespace, mac, bios)
				prepareAgentAsUpstream(ctx, s, a.Name, name)
				recorded.UpstreamAgentRef = agentRefOf(s.Namespace, a.Name)
				agentsBefore[name] = getAgent(ctx, s.Namespace, a.Name)
			}
			if f.mutate != nil {
				f.mutate(&recorded.BIOSUUID)
			}
			setUpstreamStatus(ctx, va, upstream110, recorded)
			vas[name] = va
		}
		discovered := createUpstreamVA(ctx, pool, "np-found", map[string]string{afv1.LabelUpstreamCreatedFor: afv1.UpstreamCreatedForAdopted})
		before := map[string]vmConfig{}
		for name := range fixtures {
			before[name] = readVMConfig(ctx, name)
		}

		op := startOperator(operatorOptions{})
		DeferCleanup(op.stop)
		DeferCleanup(deletePoolAndWait, pool)
		// Upstream's finalizers stay on what was not adopted: the test lets the objects go at the end.
		DeferCleanup(func(ctx context.Context) {
			for _, va := range append([]*afv1.VsphereAgent{discovered}, valuesOf(vas)...) {
				fresh := &afv1.VsphereAgent{}
				if k8s.Get(ctx, client.ObjectKeyFromObject(va), fresh) == nil {
					fresh.Finalizers = nil
					_ = k8s.Update(ctx, fresh)
				}
			}
		})

		Eventually(func(g Gomega) {
			for name, f := range fixtures {
				c := adoptedCondition(getVA(vas[name]))
				g.Expect(c).NotTo(BeNil(), name)
				g.Expect(c.Status).To(BeEquivalentTo("False"))
				g.Expect(c.Reason).To(Equal(afv1.ReasonAdoptionEvidenceMismatch), name)
				g.Expect(c.Message).To(ContainSubstring(f.evidence+":"), name)
				g.Expect(eventsWith(ctx, vas[name], afv1.ReasonAdoptionEvidenceMismatch)).NotTo(BeEmpty())
			}
			c := adoptedCondition(getVA(discovered))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(afv1.ReasonUpstreamDiscoveredAgent))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(adoptedCondition(getVA(vas["np-bios"])).Message).NotTo(ContainSubstring("folder:"), "only the disagreeing evidence is named")
		Expect(adoptedCondition(getVA(vas["np-folder"])).Message).NotTo(ContainSubstring("biosUUID:"))

		Consistently(func(g Gomega) {
			for name := range fixtures {
				g.Expect(readVMConfig(ctx, name)).To(Equal(before[name]), "VM %s was changed", name)
				g.Expect(getVA(vas[name]).Finalizers).To(Equal([]string{afv1.FinalizerUpstreamVsphereAgent}))
			}
			for name, a := range agentsBefore {
				now := getAgent(ctx, s.Namespace, a.GetName())
				g.Expect(now.GetLabels()).To(Equal(a.GetLabels()), "Agent of %s relabelled", name)
				g.Expect(now.Object["spec"]).To(Equal(a.Object["spec"]), "Agent of %s changed", name)
			}
			g.Expect(poolVMs(pool)).To(BeEmpty(), "a VM got our marker")
		}, 5*time.Second, 500*time.Millisecond).Should(Succeed())
	})
})

// flipLastHexDigit changes a UUID's last digit: a BIOS UUID upstream recorded for another VM.
func flipLastHexDigit(u *string) {
	last := (*u)[len(*u)-1:]
	repl := "0"
	if strings.EqualFold(last, "0") {
		repl = "1"
	}
	*u = (*u)[:len(*u)-1] + repl
}

func valuesOf(m map[string]*afv1.VsphereAgent) []*afv1.VsphereAgent {
	out := make([]*afv1.VsphereAgent, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

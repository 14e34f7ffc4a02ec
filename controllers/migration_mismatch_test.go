package controllers_test

import (
	"bytes"
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmware/govmomi/vim25/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var _ = Describe("Moving from the upstream operator: adoption evidence that disagrees", func() {
	It("touches nothing (VM config, Agent, finalizers) and reports which evidence disagreed; status a writer could forge is no evidence", func(ctx context.Context) {
		s := newScenario()
		d := startWorld(s, world.Options{})
		folder := "agent-forge/" + s.Namespace
		pool := createUpstreamPool(s, func(p *afv1.VsphereAgentPool) { p.Spec.Adoption = afv1.AdoptionEnabled })
		iso := upstreamISOPath(ctx, pool)
		otherISO := "[" + vcsim.Datastore + "] other-images/rescue.iso"
		Expect(vs.UploadFile(ctx, vcsim.Datacenter, otherISO, bytes.NewReader([]byte("rescue")), 6)).To(Succeed())

		// Each fixture is one kind of disagreeing evidence upstream's VMs can show.
		type fixture struct {
			vm       upstreamVM
			evidence string   // the word the Adopted message must name
			names    []string // further text the message must hold (both VMs of a duplicate name)
			agent    bool     // the world registers an Agent (only VMs in the scenario's folder boot into it)
			notes    string   // the VM's Notes when not this VsphereAgent's marker ("-": none)
			twin     *upstreamVM
			// spoof registers another host's Agent (the world's VM of the fixture as argument): one that
			// lists the VM's MAC with another serial, or one upstream labelled for the VM that is another host.
			spoof func(vm world.VM) world.VM
			// forgeName drops the vm-name annotation: only status.vm.name names the VM (a status writer's word).
			forgeName bool
		}
		dupFolder := "agent-forge/" + s.Namespace + "-dup"
		otherUID := "9d0c1f7e-5b8a-4c1e-a0f2-3e4d5c6b7a89" // another VsphereAgent's UID
		fixtures := map[string]fixture{
			"np-bios": {vm: upstreamVM{folder: folder, iso: iso}, evidence: "biosUUID", agent: true,
				spoof: func(vm world.VM) world.VM { flipLastHexDigit(&vm.BIOSUUID); return vm }},
			"np-folder": {vm: upstreamVM{folder: "agent-forge/" + s.Namespace + "-foreign", iso: iso}, evidence: "folder"},
			"np-iso":    {vm: upstreamVM{folder: folder, iso: otherISO}, evidence: "cdrom", agent: true},
			"np-mac": {vm: upstreamVM{folder: folder, iso: iso}, evidence: "macAddress", agent: true,
				spoof: func(vm world.VM) world.VM { flipLastHexDigit(&vm.MAC); flipLastHexDigit(&vm.BIOSUUID); return vm }},
			// Evidence the old rules took from status: a VsphereAgent without the vm-name annotation whose
			// status names a VM, and an unmarked VM without this pool's ISO (and so without an Agent).
			"np-forged": {vm: upstreamVM{folder: folder, iso: iso}, evidence: "name", agent: true, forgeName: true,
				names: []string{"no " + afv1.AnnotationUpstreamVMName + " annotation"}},
			"np-noiso": {vm: upstreamVM{folder: folder}, evidence: "cdrom", notes: "-"},
			"np-notes": {vm: upstreamVM{folder: folder, iso: iso}, evidence: "notes", agent: true, notes: afv1.UpstreamNotesMarkerPrefix + otherUID,
				names: []string{otherUID}},
			// Two VMs carry the name (vCenter allows it in two folders): both carry the marker, or only one.
			"np-dup": {vm: upstreamVM{folder: folder, iso: iso}, evidence: "name", agent: true, twin: &upstreamVM{folder: dupFolder, iso: iso},
				names: []string{"2 VMs are named np-dup", `folder "` + folder + `"`, `folder "` + dupFolder + `"`}},
			"np-dup-unmarked": {vm: upstreamVM{folder: folder, iso: iso}, evidence: "name", agent: true, twin: &upstreamVM{folder: dupFolder, iso: iso, notes: "-"},
				names: []string{"2 VMs are named np-dup-unmarked", `folder "` + dupFolder + `", BIOS UUID`, "no upstream marker"}},
		}
		vas := map[string]*afv1.VsphereAgent{}
		agentsBefore := map[string]*unstructured.Unstructured{}
		for name, f := range fixtures {
			va := createUpstreamVA(ctx, pool, name, nil)
			marker := afv1.UpstreamNotesMarkerPrefix + string(va.UID)
			f.vm.name, f.vm.notes = name, marker
			if f.notes != "" {
				f.vm.notes = f.notes
			}
			if f.vm.notes == "-" {
				f.vm.notes = ""
			}
			bios, mac := createUpstreamVM(ctx, f.vm)
			if t := f.twin; t != nil {
				twin := *t
				twin.name, twin.notes = name, marker
				if t.notes == "-" {
					twin.notes = ""
				}
				createUpstreamVM(ctx, twin)
			}
			// Upstream's status: what it read back, and what a status writer would claim to get a VM adopted.
			recorded := afv1.VMStatus{BIOSUUID: bios, MACAddress: mac, Phase: afv1.VMPhaseAvailable}
			if f.agent && f.vm.iso == otherISO {
				// Its Agent is from an earlier boot of the discovery image; the CD-ROM holds the rescue image now
				// (the world registers only hosts booting an InfraEnv's image).
				_, err := d.RegisterHost(ctx, world.VM{Name: name, BIOSUUID: bios, MAC: mac, NumCPU: 2, MemoryMB: 8192,
					Disks: []world.Disk{{CapacityBytes: 100 << 30}}}, s.InfraEnv)
				Expect(err).NotTo(HaveOccurred())
			}
			if f.agent {
				a := agentOfVM(ctx, s.Namespace, mac, bios)
				prepareAgentAsUpstream(ctx, s, a.Name, name)
				recorded.UpstreamAgentRef = agentRefOf(s.Namespace, a.Name)
				agentsBefore[name] = getAgent(ctx, s.Namespace, a.Name)
			}
			if f.spoof != nil {
				other, err := d.RegisterHost(ctx, f.spoof(world.VM{Name: name, BIOSUUID: bios, MAC: mac}), s.InfraEnv)
				Expect(err).NotTo(HaveOccurred())
				prepareAgentAsUpstream(ctx, s, other.GetName(), name)
			}
			version := upstream110
			if f.vm.notes == "" {
				version = upstream102
			}
			if f.forgeName {
				fresh := getVA(va)
				delete(fresh.Annotations, afv1.AnnotationUpstreamVMName)
				Expect(k8s.Update(ctx, fresh)).To(Succeed())
			}
			setUpstreamStatus(ctx, va, version, recorded)
			vas[name] = va
		}
		discovered := createUpstreamVA(ctx, pool, "np-found", map[string]string{afv1.LabelUpstreamCreatedFor: afv1.UpstreamCreatedForAdopted})
		before := map[string][]vmConfig{}
		for name, f := range fixtures {
			before[name] = readVMConfigs(ctx, name)
			Expect(before[name]).To(HaveLen(map[bool]int{false: 1, true: 2}[f.twin != nil]), name)
			for _, cfg := range before[name] {
				Expect(cfg.PowerState).To(BeEquivalentTo(types.VirtualMachinePowerStatePoweredOn), name)
			}
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
				for _, want := range f.names {
					g.Expect(c.Message).To(ContainSubstring(want), name)
				}
				g.Expect(warningsWith(ctx, vas[name], afv1.ReasonAdoptionEvidenceMismatch)).To(ContainElement(ContainSubstring(f.evidence+":")), name)
			}
			c := adoptedCondition(getVA(discovered))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(afv1.ReasonUpstreamDiscoveredAgent))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(adoptedCondition(getVA(vas["np-bios"])).Message).NotTo(ContainSubstring("folder:"), "only the disagreeing evidence is named")
		Expect(adoptedCondition(getVA(vas["np-folder"])).Message).NotTo(ContainSubstring("biosUUID:"))
		Expect(adoptedCondition(getVA(vas["np-mac"])).Message).NotTo(ContainSubstring("folder:"))
		Expect(adoptedCondition(getVA(vas["np-notes"])).Message).NotTo(ContainSubstring("macAddress:"))
		for _, name := range []string{"np-dup", "np-dup-unmarked"} {
			msg := adoptedCondition(getVA(vas[name])).Message
			Expect(msg).NotTo(ContainSubstring("folder:"), "%s: the VM in the pool's folder is not picked and judged on its own", name)
			Expect(warningsWith(ctx, vas[name], afv1.ReasonAdoptionEvidenceMismatch)).To(ContainElement(ContainSubstring(dupFolder)), name)
		}

		Consistently(func(g Gomega) {
			for name := range fixtures {
				g.Expect(readVMConfigs(ctx, name)).To(Equal(before[name]), "VM %s was changed (config, power state or folder)", name)
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

// warningsWith are the messages of the VsphereAgent's Warning Events with reason.
func warningsWith(ctx context.Context, va *afv1.VsphereAgent, reason string) []string {
	GinkgoHelper()
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(va.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "VsphereAgent" && e.InvolvedObject.Name == va.Name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Message)
		}
	}
	return out
}

func valuesOf(m map[string]*afv1.VsphereAgent) []*afv1.VsphereAgent {
	out := make([]*afv1.VsphereAgent, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
